//! docs/ARCHITECTURE.md names real things: every path it puts in
//! backticks exists, every codemap heading is a folder, and every
//! workspace member has its heading. A rename that forgets the map fails
//! here instead of misleading the next reader.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn architecture() -> String {
    std::fs::read_to_string(root().join("docs/ARCHITECTURE.md")).unwrap()
}

/// The backticked spans of `text`.
fn spans(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// A span that names a file or folder of the repository: a relative path
/// with a slash, made of path characters, under a top-level folder.
fn as_repo_path(span: &str) -> Option<&str> {
    const TOP: [&str; 8] = [
        "libs/",
        "services/",
        "tools/",
        "tests/",
        "docs/",
        "deploy/",
        "migrations/",
        "scripts/",
    ];
    let path = span.trim_end_matches('/');
    let plain = path
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '_' | '-' | '.'));
    (plain && TOP.iter().any(|top| span.starts_with(top)) && !path.contains("<")).then_some(path)
}

#[test]
fn every_path_the_architecture_names_exists() {
    let text = architecture();
    let mut missing = Vec::new();
    let mut checked = 0;
    for path in spans(&text).into_iter().filter_map(as_repo_path) {
        checked += 1;
        if !root().join(path).exists() {
            missing.push(path.to_owned());
        }
    }
    assert!(checked > 20, "the codemap names paths ({checked} found)");
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names missing paths: {missing:?}"
    );
}

#[test]
fn every_workspace_member_has_a_codemap_heading() {
    let text = architecture();
    let headings: Vec<&str> = text
        .lines()
        .filter(|line| line.starts_with("### "))
        .flat_map(spans)
        .collect();
    for heading in &headings {
        let folder = heading.trim_end_matches('/');
        assert!(
            root().join(folder).is_dir(),
            "codemap heading `{heading}` is not a folder"
        );
    }
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let members: toml::Value = toml::from_str(&manifest).unwrap();
    let members = members["workspace"]["members"].as_array().unwrap();
    for member in members.iter().map(|m| m.as_str().unwrap()) {
        // A service's binary package is mapped with its service.
        let mapped_as = member.trim_end_matches("/bin");
        assert!(
            headings
                .iter()
                .any(|h| h.trim_end_matches('/') == mapped_as),
            "workspace member {member} has no codemap heading"
        );
    }
}
