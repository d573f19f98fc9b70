//! `mnemo-retriever`: the retriever service of the scale-out deployment (see
//! docs/scale-out.md). Configured by `MNEMO_*` variables and `MNEMO_CONFIG`.

/// See [`mnemo_app::allocator`].
#[global_allocator]
static ALLOCATOR: mnemo_app::Allocator = mnemo_app::Allocator;

fn main() -> anyhow::Result<()> {
    mnemo_app::service::service_main("mnemo-retriever", mnemo_app::Roles::RETRIEVER)
}
