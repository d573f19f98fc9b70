//! The `main` of the four scale-out service binaries (`mnemo-ingest`,
//! `mnemo-consolidator`, `mnemo-retriever`, `mnemo-forgetter`): the same
//! application as `mnemo serve`, running one role. Settings come from the
//! environment and `MNEMO_CONFIG` only (no flags), as containers set them.

use anyhow::Context;
use mnemo_config::Overrides;
use mnemo_telemetry::TelemetryConfig;

use crate::{Application, Roles};

pub fn service_main(name: &'static str, roles: Roles) -> anyhow::Result<()> {
    crate::allocator::configure();
    let settings = mnemo_config::load(&Overrides::default()).context("invalid configuration")?;
    let _telemetry = mnemo_telemetry::init(&TelemetryConfig {
        service_name: name.to_owned(),
        log_format: settings.telemetry.log_format,
        log_filter: settings.telemetry.log_filter.clone(),
        otlp_endpoint: settings.telemetry.otlp_endpoint.clone(),
    })
    .context("cannot set up telemetry")?;
    let embedded = crate::data_dir_lock::embedded_stores(&settings, roles);
    if !embedded.is_empty() {
        let unset: Vec<&str> = embedded.iter().map(|(_, setting)| *setting).collect();
        tracing::warn!(
            service = name,
            unset = %unset.join(", "),
            "not every store this service opens is shared: it keeps the others in its data dir, \
             which no other process may use, and the other services never see them; \
             use `mnemo serve` for a single process"
        );
    }
    // Awaited by block_on, not spawned: the request threads keep this
    // thread's priority (see crate::runtime).
    crate::runtime::build(settings.background_nice)?.block_on(async {
        let app = Application::build_roles(settings.clone(), roles).await?;
        tracing::info!(
            service = name,
            port = app.port(),
            "{name} is listening on {}:{}",
            settings.listen.ip(),
            app.port()
        );
        app.run().await
    })
}
