//! The `mnemo` command line as a user runs it. Besides checking the CLI,
//! this test makes `cargo test` build the `mnemo` executable, which the
//! process suites in `tests/` start.

use std::process::Command;

fn mnemo() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mnemo"))
}

#[test]
fn help_lists_the_product_commands_and_the_lab_tools() {
    let output = mnemo().arg("--help").output().unwrap();
    assert!(output.status.success());
    let help = String::from_utf8(output.stdout).unwrap();
    for command in [
        "serve", "mcp", "token", "migrate", "forget", "reindex", "eval", "bench", "dev",
    ] {
        assert!(
            help.lines()
                .any(|line| line.trim_start().starts_with(command)),
            "`mnemo --help` lists {command}:\n{help}"
        );
    }
}

#[test]
fn token_prints_a_jwt_for_the_data_dirs_dev_secret() {
    let dir = tempfile::tempdir().unwrap();
    let output = mnemo()
        .args([
            "token",
            "--tenant",
            "acme",
            "--scope",
            "memories:read",
            "--data-dir",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let token = String::from_utf8(output.stdout).unwrap();
    assert_eq!(token.trim().split('.').count(), 3, "a JWT: {token}");
    assert!(
        dir.path().join("jwt-dev.secret").is_file(),
        "the dev secret is kept in the data dir"
    );
}

#[test]
fn an_unknown_scope_is_refused_with_the_known_ones() {
    let dir = tempfile::tempdir().unwrap();
    let output = mnemo()
        .args([
            "token",
            "--tenant",
            "acme",
            "--scope",
            "everything",
            "--data-dir",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let error = String::from_utf8(output.stderr).unwrap();
    assert!(error.contains("unknown scope everything"), "{error}");
    assert!(error.contains("memories:read"), "{error}");
}

#[test]
fn mcp_without_a_token_says_how_to_get_one_and_writes_nothing_on_stdout() {
    for token in [None, Some("  ")] {
        let mut command = mnemo();
        command.arg("mcp").env_remove("MNEMO_TOKEN");
        if let Some(token) = token {
            command.env("MNEMO_TOKEN", token);
        }
        let output = command.output().unwrap();
        assert!(!output.status.success());
        // stdout is the protocol's: an error there would be read as a message.
        assert!(output.stdout.is_empty(), "{output:?}");
        let error = String::from_utf8(output.stderr).unwrap();
        assert!(error.contains("MNEMO_TOKEN is not set"), "{error}");
        assert!(error.contains("mnemo token --tenant"), "{error}");
    }
}

#[test]
fn mcp_refuses_a_url_that_is_not_an_http_root() {
    let output = mnemo()
        .args(["mcp", "--url", "localhost:8080"])
        .env("MNEMO_TOKEN", "a.b.c")
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(output.stdout.is_empty(), "{output:?}");
    let error = String::from_utf8(output.stderr).unwrap();
    assert!(
        error.contains("invalid mnemo URL localhost:8080"),
        "{error}"
    );
}

/// The figure after `| {measure} |` in a bench's Markdown table.
fn figure<'a>(report: &'a str, measure: &str) -> &'a str {
    let row = report
        .lines()
        .find(|line| line.starts_with(&format!("| {measure}")))
        .unwrap_or_else(|| panic!("no `{measure}` row in:\n{report}"));
    row.trim_end_matches(['|', ' '])
        .rsplit('|')
        .next()
        .unwrap()
        .trim()
}

#[test]
fn bench_searchable_reports_the_rate_the_cpu_an_item_and_the_cores_it_kept_busy() {
    let output = mnemo()
        .args([
            "bench",
            "searchable",
            "--memories",
            "5",
            "--messages",
            "40",
            "--clients",
            "2",
            "--batch",
            "20",
            "--embedder",
            "lexical",
        ])
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{report}\n{output:?}");
    let rate: f64 = figure(&report, "**items searchable per second**")
        .trim_matches('*')
        .parse()
        .unwrap();
    assert!(rate > 0.0, "{report}");
    let cpu: f64 = figure(&report, "process CPU per item")
        .trim_end_matches(" µs")
        .parse()
        .unwrap();
    assert!(cpu > 0.0, "{report}");
    // "1.23 of 2": the process's CPU over the wall time, at most the cores.
    let busy = figure(&report, "cores busy");
    let (busy, cores) = busy.split_once(" of ").unwrap();
    let (busy, cores): (f64, f64) = (busy.parse().unwrap(), cores.parse().unwrap());
    let machine = std::thread::available_parallelism().unwrap().get() as f64;
    assert_eq!(cores, machine, "{report}");
    assert!(busy > 0.0 && busy <= cores + 0.05, "{report}");
}
