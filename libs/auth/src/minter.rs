use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use jsonwebtoken::{EncodingKey, Header};
use mnemo_domain::{SubjectId, TenantId};
use rand::rngs::OsRng;
use rand::RngCore;

use crate::claims::{check_text_claim, MintedClaims};
use crate::{AuthError, JwtAlgorithm, Scope, MIN_HS256_SECRET_BYTES};

/// What to put in a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MintRequest {
    pub tenant: TenantId,
    /// Becomes `sub`.
    pub actor: String,
    pub scopes: Vec<Scope>,
    /// Binds the token to one subject.
    pub subject: Option<SubjectId>,
    /// Whole seconds; at least one.
    pub ttl: Duration,
}

/// Mints HS256 tokens. Only HS256, because minting is for the embedded mode
/// (`mnemo token` with its dev secret) and for tests; production deployments
/// get their tokens from an identity provider.
#[derive(Clone)]
pub struct Minter {
    key: EncodingKey,
    /// Checked at mint time rather than construction so that `hs256` can stay
    /// infallible; the length is all we keep about the secret outside the key.
    secret_len: usize,
    issuer: String,
    audience: String,
}

// Hand-written so that the secret cannot reach a log through `{:?}`.
impl fmt::Debug for Minter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Minter")
            .field("secret", &"[REDACTED]")
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .finish()
    }
}

impl Minter {
    /// An empty `issuer` or `audience` leaves that claim out of the tokens.
    pub fn hs256(secret: &[u8], issuer: impl Into<String>, audience: impl Into<String>) -> Self {
        Self {
            key: EncodingKey::from_secret(secret),
            secret_len: secret.len(),
            issuer: issuer.into(),
            audience: audience.into(),
        }
    }

    pub fn mint(&self, request: &MintRequest) -> Result<String, AuthError> {
        // The verifier refuses short secrets; minting tokens nobody can
        // verify would only move the error somewhere more confusing.
        if self.secret_len < MIN_HS256_SECRET_BYTES {
            return Err(AuthError::Config(format!(
                "the HS256 secret must be at least {MIN_HS256_SECRET_BYTES} bytes"
            )));
        }
        check_text_claim("sub", &request.actor)?;
        let ttl = request.ttl.as_secs();
        if ttl == 0 {
            return Err(AuthError::InvalidClaims(
                "ttl must be at least one second".into(),
            ));
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_err(|_| AuthError::Config("the system clock is before 1970".into()))?
            .as_secs();
        let exp = now
            .checked_add(ttl)
            .ok_or_else(|| AuthError::InvalidClaims("ttl is too large".into()))?;

        let mut scopes: Vec<Scope> = request.scopes.clone();
        scopes.sort();
        scopes.dedup();
        let scope = (!scopes.is_empty()).then(|| {
            scopes
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(" ")
        });

        let mut jti = [0u8; 16];
        OsRng.fill_bytes(&mut jti);

        let claims = MintedClaims {
            iss: Some(self.issuer.as_str()).filter(|s| !s.is_empty()),
            aud: Some(self.audience.as_str()).filter(|s| !s.is_empty()),
            sub: &request.actor,
            tenant: request.tenant.as_str(),
            scope,
            subject: request.subject.as_ref().map(|s| s.as_str()),
            iat: now,
            exp,
            jti: URL_SAFE_NO_PAD.encode(jti),
        };
        let header = Header::new(JwtAlgorithm::HS256.to_jsonwebtoken());
        jsonwebtoken::encode(&header, &claims, &self.key)
            .map_err(|_| AuthError::Config("could not sign the token".into()))
    }
}

/// A fresh random HS256 secret from the operating system's CSPRNG.
pub fn generate_secret() -> [u8; 32] {
    let mut secret = [0u8; 32];
    OsRng.fill_bytes(&mut secret);
    secret
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> MintRequest {
        MintRequest {
            tenant: TenantId::parse("acme").unwrap(),
            actor: "cli".into(),
            scopes: vec![Scope::MemoriesRead],
            subject: None,
            ttl: Duration::from_secs(60),
        }
    }

    #[test]
    fn generated_secrets_differ() {
        let a = generate_secret();
        let b = generate_secret();
        assert_ne!(a, b);
        assert_ne!(a, [0u8; 32]);
    }

    #[test]
    fn refuses_short_secret_bad_actor_and_zero_ttl() {
        let short = Minter::hs256(&[7u8; 31], "iss", "aud");
        assert!(matches!(short.mint(&request()), Err(AuthError::Config(_))));

        let minter = Minter::hs256(&generate_secret(), "iss", "aud");
        assert!(minter.mint(&request()).is_ok());
        let mut bad = request();
        bad.actor = String::new();
        assert!(matches!(
            minter.mint(&bad),
            Err(AuthError::InvalidClaims(_))
        ));
        let mut bad = request();
        bad.ttl = Duration::from_millis(999);
        assert!(matches!(
            minter.mint(&bad),
            Err(AuthError::InvalidClaims(_))
        ));
    }

    #[test]
    fn debug_is_redacted() {
        let minter = Minter::hs256(b"0123456789abcdef0123456789abcdef", "iss", "aud");
        let debug = format!("{minter:?}");
        assert!(!debug.contains("0123456789"), "{debug}");
    }
}
