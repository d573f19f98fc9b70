//! `[auth]`: who may call, and how their tokens are checked.

use std::path::PathBuf;

use mnemo_auth::JwtAlgorithm;
use secrecy::SecretString;
use serde::Deserialize;

use crate::env::Env;
use crate::{invalid, ConfigError, DEFAULT_AUDIENCE, DEFAULT_ISSUER};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawAuth {
    issuer: Option<String>,
    audience: Option<String>,
    hs256_secret: Option<String>,
    #[serde(default)]
    public_keys: Vec<RawPublicKey>,
    allowed_algorithms: Option<Vec<String>>,
    leeway_seconds: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPublicKey {
    algorithm: String,
    pem_file: PathBuf,
    kid: Option<String>,
}

#[derive(Debug, Clone)]
pub struct PublicKeySetting {
    pub algorithm: JwtAlgorithm,
    pub pem_file: PathBuf,
    pub kid: Option<String>,
}

#[derive(Debug, Clone)]
pub struct AuthSettings {
    pub issuer: String,
    pub audience: String,
    /// None: the embedded mode uses (and creates) the dev secret in the data dir.
    pub hs256_secret: Option<SecretString>,
    pub public_keys: Vec<PublicKeySetting>,
    pub allowed_algorithms: Vec<JwtAlgorithm>,
    pub leeway_seconds: u64,
}

fn algorithm(key: &str, name: &str) -> Result<JwtAlgorithm, ConfigError> {
    name.parse::<JwtAlgorithm>()
        .map_err(|_| invalid(key, format!("unknown algorithm {name}")))
}

impl RawAuth {
    pub(crate) fn with_env(mut self, env: &Env) -> Self {
        self.issuer = env.get("MNEMO_JWT_ISSUER").or(self.issuer);
        self.audience = env.get("MNEMO_JWT_AUDIENCE").or(self.audience);
        self.hs256_secret = env.get("MNEMO_JWT_SECRET").or(self.hs256_secret);
        self
    }

    pub(crate) fn resolve(self) -> Result<AuthSettings, ConfigError> {
        let allowed_algorithms = match self.allowed_algorithms {
            Some(names) => names
                .iter()
                .map(|name| algorithm("auth.allowed_algorithms", name))
                .collect::<Result<Vec<_>, _>>()?,
            None => vec![
                JwtAlgorithm::HS256,
                JwtAlgorithm::RS256,
                JwtAlgorithm::ES256,
                JwtAlgorithm::EdDSA,
            ],
        };
        let public_keys = self
            .public_keys
            .into_iter()
            .map(|key| {
                Ok(PublicKeySetting {
                    algorithm: algorithm("auth.public_keys.algorithm", &key.algorithm)?,
                    pem_file: key.pem_file,
                    kid: key.kid,
                })
            })
            .collect::<Result<Vec<_>, ConfigError>>()?;
        if self.hs256_secret.as_ref().is_some_and(|s| s.len() < 32) {
            return Err(invalid("auth.hs256_secret", "must be at least 32 bytes"));
        }
        let leeway_seconds = self.leeway_seconds.unwrap_or(30);
        if leeway_seconds > 300 {
            return Err(invalid("auth.leeway_seconds", "at most 300"));
        }
        Ok(AuthSettings {
            issuer: self.issuer.unwrap_or_else(|| DEFAULT_ISSUER.to_owned()),
            audience: self.audience.unwrap_or_else(|| DEFAULT_AUDIENCE.to_owned()),
            hs256_secret: self.hs256_secret.map(SecretString::from),
            public_keys,
            allowed_algorithms,
            leeway_seconds,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::{load_env, load_toml};

    #[test]
    fn a_bad_auth_value_is_refused_naming_its_key() {
        let error = load_toml("[auth]\nleeway_seconds = 301\n").unwrap_err();
        assert!(error.to_string().contains("auth.leeway_seconds"), "{error}");
        let error = load_toml("[auth]\nallowed_algorithms = [\"HS1\"]\n").unwrap_err();
        assert!(
            error.to_string().contains("auth.allowed_algorithms"),
            "{error}"
        );
        let error = load_env(&[("MNEMO_JWT_SECRET", "short")]).unwrap_err();
        assert!(error.to_string().contains("auth.hs256_secret"), "{error}");
    }
}
