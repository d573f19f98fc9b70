//! Support for the cross-service suites in this folder: finding (and
//! building) the workspace's binaries, which a test of this package cannot
//! name with `CARGO_BIN_EXE_*` because they belong to other packages.
//!
//! The suites:
//! - `api`: the HTTP API end to end, every service in one process (the
//!   embedded application on a random port and a temporary data dir);
//! - `scale_out`: the four service binaries as processes over PostgreSQL,
//!   Kafka's wire protocol and a Qdrant endpoint;
//! - `restart`: `mnemo serve` killed with SIGKILL and restarted;
//! - `verify_erasure`: `mnemo verify-erasure` on what `mnemo serve` left.
//! - `docs_shell`: the shell blocks of the operator docs, run as printed.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The directory Cargo puts this profile's binaries in: the parent of the
/// test executable's `deps/`.
fn binaries_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test knows its executable");
    let deps = exe.parent().expect("the test executable has a directory");
    deps.parent()
        .expect("deps/ has a parent: the profile's directory")
        .to_owned()
}

/// The path of the workspace binary `name`, built first.
///
/// Built (once per test process) as `cargo build --workspace --tests`
/// builds it: the same packages and features as `cargo test --workspace`,
/// which has just built everything, so there the build only checks that
/// nothing changed; under a narrower `cargo test -p mnemo-tests` it builds
/// what is missing. Each binary package has an integration test of its own,
/// so that build produces the plain executables. A binary left from an
/// older build would test old code, hence no shortcut on "the file exists".
/// `cargo test` holds no build lock while tests run, so the nested build
/// shares the target directory (`CARGO_TARGET_DIR` is inherited).
pub fn binary(name: &str) -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    let dir = BUILT.get_or_init(|| {
        let dir = binaries_dir();
        build(&dir);
        dir
    });
    let path = dir.join(name);
    assert!(
        path.is_file(),
        "{} is missing after the build",
        path.display()
    );
    path
}

fn build(dir: &Path) {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
    let mut command = Command::new(env!("CARGO"));
    command
        .args(["build", "--workspace", "--tests", "--manifest-path"])
        .arg(&manifest);
    // What cargo sets for this test process, not what the outer build saw:
    // build scripts that watch one of them (ring's watches
    // CARGO_MANIFEST_DIR) would see it change and rebuild ring and all that
    // depends on it, here and again in the next outer build.
    for (key, _) in std::env::vars() {
        let set_for_tests = ["CARGO_PKG_", "CARGO_BIN_EXE_"]
            .iter()
            .any(|prefix| key.starts_with(prefix))
            || [
                "CARGO_MANIFEST_DIR",
                "CARGO_MANIFEST_PATH",
                "CARGO_MANIFEST_LINKS",
                "CARGO_CRATE_NAME",
                "CARGO_BIN_NAME",
                "CARGO_PRIMARY_PACKAGE",
                "CARGO_TARGET_TMPDIR",
            ]
            .contains(&key.as_str());
        if set_for_tests {
            command.env_remove(key);
        }
    }
    if dir.file_name().is_some_and(|name| name == "release") {
        command.arg("--release");
    }
    let started = std::time::Instant::now();
    let status = command.status().expect("cargo runs");
    assert!(status.success(), "building the workspace's binaries failed");
    // Straight to stderr: the test harness captures `eprintln!`.
    let _ = writeln!(
        std::io::stderr(),
        "binaries checked or built in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// Runs the service binary at `exe` with a listen address that cannot be
/// parsed and checks it refuses to start, naming the setting: each service
/// binary's own test calls this (which also makes `cargo test` build the
/// plain executable the scale-out suite starts).
pub fn assert_refuses_a_bad_listen_address(exe: &str) {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(exe)
        .env("MNEMO_DATA_DIR", dir.path())
        .env("MNEMO_LISTEN", "not an address")
        .env_remove("MNEMO_CONFIG")
        .output()
        .unwrap();
    assert!(!output.status.success(), "{exe} started with a bad address");
    let error = String::from_utf8(output.stderr).unwrap();
    assert!(error.contains("invalid configuration"), "{error}");
    assert!(error.contains("listen"), "{error}");
}

/// One extractable preference per message, all different, so a subject
/// sent these ends with exactly these ten memories: what the process suites
/// post and then count.
pub const FACTS: [&str; 10] = [
    "I love green tea",
    "I love hiking in the Alps",
    "I love jazz records",
    "I love sourdough baking",
    "I love chess problems",
    "I love watercolor painting",
    "I love marathon running",
    "I love Korean cinema",
    "I love vintage motorcycles",
    "I love birdwatching at dawn",
];

/// A free TCP port on the loopback interface.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
