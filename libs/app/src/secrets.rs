//! Secrets the embedded mode keeps in its data dir when none is configured:
//! the master key (via `mnemo-crypto`) and the dev JWT secret.

use std::io::Write;
use std::path::Path;

use anyhow::Context;

/// Reads the dev HS256 secret, or creates it (hex, mode 0600) when absent.
/// Returns (secret bytes, created).
pub fn load_or_create_dev_secret(path: &Path) -> anyhow::Result<(Vec<u8>, bool)> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let secret = hex::decode(text.trim())
                .with_context(|| format!("{} is not a hex secret", path.display()))?;
            anyhow::ensure!(
                secret.len() >= 32,
                "{} holds a secret shorter than 32 bytes",
                path.display()
            );
            Ok((secret, false))
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            let secret = mnemo_auth::generate_secret().to_vec();
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create_new(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::OpenOptionsExt;
                options.mode(0o600);
            }
            match options.open(path) {
                Ok(mut file) => {
                    file.write_all(hex::encode(&secret).as_bytes())?;
                    file.sync_all()?;
                    Ok((secret, true))
                }
                // Another process created it first: use theirs.
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                    load_or_create_dev_secret(path)
                }
                Err(error) => {
                    Err(error).with_context(|| format!("cannot create {}", path.display()))
                }
            }
        }
        Err(error) => Err(error).with_context(|| format!("cannot read {}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creates_once_with_owner_only_permissions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/jwt-dev.secret");
        let (first, created) = load_or_create_dev_secret(&path).unwrap();
        assert!(created);
        let (second, created_again) = load_or_create_dev_secret(&path).unwrap();
        assert!(!created_again);
        assert_eq!(first, second);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
