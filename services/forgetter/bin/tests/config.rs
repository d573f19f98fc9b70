//! `mnemo-forgetter` refuses a configuration it cannot run with, saying why,
//! before it binds anything. This test also makes `cargo test` build the
//! executable, which the scale-out suite in `tests/` starts.

#[test]
fn an_invalid_listen_address_is_refused_with_the_setting_named() {
    mnemo_tests::assert_refuses_a_bad_listen_address(env!("CARGO_BIN_EXE_mnemo-forgetter"));
}
