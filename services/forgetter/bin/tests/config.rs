//! `mnemo-forgetter` refuses a configuration it cannot run with, saying why,
//! before it binds anything. Besides that, this test makes `cargo test`
//! build the executable, which the scale-out suite in `tests/` starts.

use std::process::Command;

#[test]
fn an_invalid_listen_address_is_refused_with_the_setting_named() {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_mnemo-forgetter"))
        .env("MNEMO_DATA_DIR", dir.path())
        .env("MNEMO_LISTEN", "not an address")
        .env_remove("MNEMO_CONFIG")
        .output()
        .unwrap();
    assert!(!output.status.success());
    let error = String::from_utf8(output.stderr).unwrap();
    assert!(error.contains("invalid configuration"), "{error}");
    assert!(error.contains("listen"), "{error}");
}
