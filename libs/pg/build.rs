// `sqlx::migrate!` embeds the migration files at compile time: rebuild this
// crate when one is added or changed.
fn main() {
    println!("cargo:rerun-if-changed=../../migrations/postgres");
}
