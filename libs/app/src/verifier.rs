//! The JWT verifier from the auth settings.

use anyhow::Context;
use mnemo_auth::{JwtAlgorithm, PublicKey, Verifier, VerifierConfig};
use mnemo_config::Settings;
use secrecy::ExposeSecret;

use crate::secrets::load_or_create_dev_secret;

/// Builds the JWT verifier: configured keys, or the dev secret of the data
/// dir when nothing is configured.
pub fn build_verifier(settings: &Settings) -> anyhow::Result<Verifier> {
    let auth = &settings.auth;
    let hs256_secret: Option<Vec<u8>> = match &auth.hs256_secret {
        Some(secret) => Some(secret.expose_secret().as_bytes().to_vec()),
        None if auth.public_keys.is_empty() => {
            let path = settings.dev_secret_file();
            let (secret, created) = load_or_create_dev_secret(&path)?;
            if created {
                tracing::warn!(path = %path.display(), "generated a development JWT secret; configure auth keys for production");
            }
            Some(secret)
        }
        None => None,
    };
    let public_keys = auth
        .public_keys
        .iter()
        .map(|key| {
            let pem = std::fs::read_to_string(&key.pem_file)
                .with_context(|| format!("cannot read {}", key.pem_file.display()))?;
            Ok(PublicKey {
                algorithm: key.algorithm,
                pem,
                kid: key.kid.clone(),
            })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let allowed_algorithms: Vec<JwtAlgorithm> = auth
        .allowed_algorithms
        .iter()
        .copied()
        .filter(|a| *a != JwtAlgorithm::HS256 || hs256_secret.is_some())
        .collect();
    Verifier::new(VerifierConfig {
        hs256_secret: hs256_secret.map(Into::into),
        public_keys,
        allowed_algorithms,
        issuer: Some(auth.issuer.clone()),
        audience: Some(auth.audience.clone()),
        leeway_seconds: auth.leeway_seconds,
    })
    .context("invalid auth settings")
}
