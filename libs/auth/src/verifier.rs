use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::DecodingKey;
use secrecy::{ExposeSecret, SecretSlice};
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};

use crate::claims::{ClaimChecks, RawClaims};
use crate::{AuthError, JwtAlgorithm, Principal};

/// Clock skew tolerated on `exp` and `nbf` unless configured otherwise.
pub const DEFAULT_LEEWAY_SECONDS: u64 = 30;
/// More skew than this means a broken clock, and would make short-lived
/// tokens meaningless.
pub const MAX_LEEWAY_SECONDS: u64 = 300;
/// RFC 7518 §3.2: an HS256 key MUST be at least as long as the hash output.
pub const MIN_HS256_SECRET_BYTES: usize = 32;
/// Real tokens are well under 2 KiB; the cap bounds the base64/JSON work an
/// unauthenticated caller can make us do per request.
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// A verification key for an asymmetric algorithm, as SPKI (`PUBLIC KEY`)
/// PEM; RSA also accepts PKCS#1 (`RSA PUBLIC KEY`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PublicKey {
    pub algorithm: JwtAlgorithm,
    pub pem: String,
    /// Matched against the token header's `kid` to pick among several keys
    /// of one algorithm (e.g. during a rotation).
    #[serde(default)]
    pub kid: Option<String>,
}

#[derive(Debug, Clone)]
pub struct VerifierConfig {
    /// Needed for HS256; at least [`MIN_HS256_SECRET_BYTES`] bytes.
    pub hs256_secret: Option<SecretSlice<u8>>,
    pub public_keys: Vec<PublicKey>,
    /// The allow-list. Empty refuses every token, so forgetting to configure
    /// it fails closed.
    pub allowed_algorithms: Vec<JwtAlgorithm>,
    /// When set, `iss` must be present and equal.
    pub issuer: Option<String>,
    /// When set, `aud` (a string or an array) must be present and contain it.
    pub audience: Option<String>,
    /// Applied to `exp` and `nbf`; at most [`MAX_LEEWAY_SECONDS`].
    pub leeway_seconds: u64,
}

impl Default for VerifierConfig {
    fn default() -> Self {
        Self {
            hs256_secret: None,
            public_keys: Vec::new(),
            allowed_algorithms: Vec::new(),
            issuer: None,
            audience: None,
            leeway_seconds: DEFAULT_LEEWAY_SECONDS,
        }
    }
}

struct LoadedKey {
    algorithm: JwtAlgorithm,
    kid: Option<String>,
    key: DecodingKey,
}

/// Checks tokens against a fixed configuration. Build once at start-up and
/// share it: keys are parsed in [`Verifier::new`], not per request.
pub struct Verifier {
    allowed: Vec<JwtAlgorithm>,
    hs256: Option<DecodingKey>,
    public_keys: Vec<LoadedKey>,
    leeway_seconds: u64,
    issuer: Option<String>,
    audience: Option<String>,
}

// Hand-written so that no key material can ever reach a log through `{:?}`.
impl fmt::Debug for Verifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keys: Vec<(JwtAlgorithm, Option<&str>)> = self
            .public_keys
            .iter()
            .map(|k| (k.algorithm, k.kid.as_deref()))
            .collect();
        f.debug_struct("Verifier")
            .field("allowed", &self.allowed)
            .field("hs256_secret", &self.hs256.as_ref().map(|_| "[REDACTED]"))
            .field("public_keys", &keys)
            .finish_non_exhaustive()
    }
}

/// The JOSE header fields we act on. Anything else (`typ`, `cty`, and in
/// particular the key-bearing `jwk`/`jku`/`x5u`/`x5c`) is ignored: keys come
/// from configuration only.
#[derive(Deserialize)]
struct JoseHeader {
    alg: String,
    #[serde(default)]
    kid: Option<String>,
    #[serde(default)]
    crit: Option<IgnoredAny>,
}

fn config_error(message: impl Into<String>) -> AuthError {
    AuthError::Config(message.into())
}

fn load_public_key(
    index: usize,
    pk: &PublicKey,
    allowed: &[JwtAlgorithm],
) -> Result<LoadedKey, AuthError> {
    // The kid is an operator-chosen label, not personal data, so it may
    // appear in messages; the PEM never does.
    let label = match &pk.kid {
        Some(kid) => format!("public key #{index} (kid `{kid}`)"),
        None => format!("public key #{index}"),
    };
    if pk.algorithm == JwtAlgorithm::HS256 {
        return Err(config_error(format!(
            "{label}: HS256 is symmetric; configure hs256_secret instead"
        )));
    }
    if !allowed.contains(&pk.algorithm) {
        return Err(config_error(format!(
            "{label}: {} is not in allowed_algorithms",
            pk.algorithm
        )));
    }
    if pk.kid.as_deref() == Some("") {
        return Err(config_error(format!("{label}: kid must not be empty")));
    }
    // jsonwebtoken would load some private-key PEMs as if they were public
    // keys and then fail every signature; say what is wrong instead, and keep
    // private keys out of verifier configuration.
    if pk.pem.contains("PRIVATE KEY") {
        return Err(config_error(format!(
            "{label}: is a private key; configure the public key"
        )));
    }
    let pem = pk.pem.as_bytes();
    let key = match pk.algorithm {
        JwtAlgorithm::RS256 => DecodingKey::from_rsa_pem(pem),
        JwtAlgorithm::ES256 => DecodingKey::from_ec_pem(pem),
        JwtAlgorithm::EdDSA => DecodingKey::from_ed_pem(pem),
        JwtAlgorithm::HS256 => unreachable!("refused above"),
    }
    .map_err(|_| {
        config_error(format!(
            "{label}: not a valid {} public key PEM",
            pk.algorithm
        ))
    })?;
    Ok(LoadedKey {
        algorithm: pk.algorithm,
        kid: pk.kid.clone(),
        key,
    })
}

impl Verifier {
    pub fn new(config: VerifierConfig) -> Result<Self, AuthError> {
        let VerifierConfig {
            hs256_secret,
            public_keys,
            allowed_algorithms,
            issuer,
            audience,
            leeway_seconds,
        } = config;

        if leeway_seconds > MAX_LEEWAY_SECONDS {
            return Err(config_error(format!(
                "leeway_seconds must be at most {MAX_LEEWAY_SECONDS}"
            )));
        }
        if issuer.as_deref().is_some_and(|s| s.trim().is_empty()) {
            return Err(config_error("issuer must not be empty when set"));
        }
        if audience.as_deref().is_some_and(|s| s.trim().is_empty()) {
            return Err(config_error("audience must not be empty when set"));
        }

        let mut allowed: Vec<JwtAlgorithm> = Vec::new();
        for alg in allowed_algorithms {
            if !allowed.contains(&alg) {
                allowed.push(alg);
            }
        }

        let hs256 = match hs256_secret {
            None => None,
            Some(secret) => {
                if !allowed.contains(&JwtAlgorithm::HS256) {
                    return Err(config_error(
                        "an HS256 secret is configured but HS256 is not in allowed_algorithms",
                    ));
                }
                if secret.expose_secret().len() < MIN_HS256_SECRET_BYTES {
                    return Err(config_error(format!(
                        "the HS256 secret must be at least {MIN_HS256_SECRET_BYTES} bytes"
                    )));
                }
                Some(DecodingKey::from_secret(secret.expose_secret()))
            }
        };

        let mut loaded: Vec<LoadedKey> = Vec::with_capacity(public_keys.len());
        for (index, pk) in public_keys.iter().enumerate() {
            let key = load_public_key(index, pk, &allowed)?;
            if key.kid.is_some()
                && loaded
                    .iter()
                    .any(|k| k.algorithm == key.algorithm && k.kid == key.kid)
            {
                return Err(config_error(format!(
                    "public key #{index}: another {} key has the same kid",
                    key.algorithm
                )));
            }
            loaded.push(key);
        }

        Ok(Self {
            allowed,
            hs256,
            public_keys: loaded,
            leeway_seconds,
            issuer,
            audience,
        })
    }

    /// Verifies `token` (without the `Bearer ` prefix, see [`bearer_token`])
    /// and returns who it speaks for.
    pub fn verify(&self, token: &str) -> Result<Principal, AuthError> {
        if token.is_empty() {
            return Err(AuthError::MissingToken);
        }
        let header = parse_header(token)?;

        // The allow-list is enforced on the raw header before any key is
        // chosen or any signature computed; `none` and every algorithm we do
        // not implement fall out here.
        let alg = JwtAlgorithm::from_header(&header.alg)
            .filter(|alg| self.allowed.contains(alg))
            .ok_or(AuthError::AlgorithmNotAllowed)?;
        if header.crit.is_some() {
            return Err(AuthError::MalformedToken);
        }
        // The standard header fields strictly typed, as `jsonwebtoken`'s
        // `decode` read them; their values are still ignored.
        jsonwebtoken::decode_header(token).map_err(|_| AuthError::MalformedToken)?;

        let candidates = self.candidates(alg, header.kid.as_deref());
        if candidates.is_empty() {
            return Err(AuthError::UnknownKey);
        }
        // `parse_header` checked the three-part shape.
        let (message, signature) = token.rsplit_once('.').ok_or(AuthError::MalformedToken)?;
        let (_, payload) = message.split_once('.').ok_or(AuthError::MalformedToken)?;
        // `jsonwebtoken` only does the signature maths here: its `decode`
        // also reads the registered claims, and skips any it cannot parse
        // (a non-numeric `nbf` switched the not-before check off) or fails
        // on them as a malformed token. The claims are ours to read, once
        // the signature holds. Keys were chosen by algorithm above, so an
        // HS256 token is never checked against a public key.
        for key in candidates {
            match jsonwebtoken::crypto::verify(
                signature,
                message.as_bytes(),
                key,
                alg.to_jsonwebtoken(),
            ) {
                Ok(true) => return read_claims(payload)?.verify(&self.claim_checks()),
                // Only a signature mismatch moves on to the next key; any
                // other failure is about the token's shape, and another key
                // would not change it.
                Ok(false) => continue,
                Err(e) if matches!(e.kind(), ErrorKind::InvalidSignature) => continue,
                Err(e) => return Err(map_jwt_error(e.kind())),
            }
        }
        Err(AuthError::InvalidSignature)
    }

    fn claim_checks(&self) -> ClaimChecks<'_> {
        // A clock before 1970 is broken: fail closed, every token then
        // looks expired.
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(u64::MAX, |d| d.as_secs());
        ClaimChecks {
            now,
            leeway: self.leeway_seconds,
            issuer: self.issuer.as_deref(),
            audience: self.audience.as_deref(),
        }
    }

    /// The keys a token signed with `alg` may be checked against. HS256 uses
    /// the secret and nothing else, whatever `kid` says. For the others: the
    /// key(s) whose kid matches; failing that, keys configured without a kid
    /// (a single-key setup should not break because the issuer labels its
    /// tokens); with no kid in the token, every key of the algorithm.
    fn candidates(&self, alg: JwtAlgorithm, kid: Option<&str>) -> Vec<&DecodingKey> {
        if alg == JwtAlgorithm::HS256 {
            return self.hs256.iter().collect();
        }
        let of_alg = || self.public_keys.iter().filter(move |k| k.algorithm == alg);
        let chosen: Vec<&LoadedKey> = match kid {
            None => of_alg().collect(),
            Some(kid) => {
                let exact: Vec<&LoadedKey> =
                    of_alg().filter(|k| k.kid.as_deref() == Some(kid)).collect();
                if exact.is_empty() {
                    of_alg().filter(|k| k.kid.is_none()).collect()
                } else {
                    exact
                }
            }
        };
        chosen.into_iter().map(|k| &k.key).collect()
    }
}

fn is_base64url(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

/// Checks the compact serialisation's shape and reads the header, without
/// trusting any of it yet. The signature part may be empty here so that an
/// `alg: none` token is reported as such rather than as malformed.
fn parse_header(token: &str) -> Result<JoseHeader, AuthError> {
    if token.len() > MAX_TOKEN_BYTES {
        return Err(AuthError::MalformedToken);
    }
    let mut parts = token.split('.');
    let (header, payload, signature) =
        match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some(h), Some(p), Some(s), None) => (h, p, s),
            _ => return Err(AuthError::MalformedToken),
        };
    if header.is_empty()
        || payload.is_empty()
        || ![header, payload, signature]
            .iter()
            .all(|part| part.bytes().all(is_base64url))
    {
        return Err(AuthError::MalformedToken);
    }
    let bytes = URL_SAFE_NO_PAD
        .decode(header)
        .map_err(|_| AuthError::MalformedToken)?;
    serde_json::from_slice(&bytes).map_err(|_| AuthError::MalformedToken)
}

/// The payload of a token whose signature holds: a JSON object, each claim
/// at most once.
fn read_claims(payload: &str) -> Result<RawClaims, AuthError> {
    let bytes = URL_SAFE_NO_PAD
        .decode(payload)
        .map_err(|_| AuthError::MalformedToken)?;
    serde_json::from_slice(&bytes).map_err(|_| AuthError::MalformedToken)
}

/// `jsonwebtoken` checks the signature only (see [`Verifier::verify`]), so
/// what it can report is about the algorithm, the key or the encoding.
fn map_jwt_error(kind: &ErrorKind) -> AuthError {
    match kind {
        ErrorKind::InvalidAlgorithm | ErrorKind::MissingAlgorithm => AuthError::AlgorithmNotAllowed,
        ErrorKind::InvalidSignature
        | ErrorKind::InvalidEcdsaKey
        | ErrorKind::InvalidRsaKey(_)
        | ErrorKind::Crypto(_) => AuthError::InvalidSignature,
        // Base64 (of the signature), InvalidToken, ...: the token's encoding.
        _ => AuthError::MalformedToken,
    }
}

/// Extracts the token from an `Authorization` header value. A header with
/// another scheme (e.g. `Basic`) presents no bearer token at all.
pub fn bearer_token(authorization_header: &str) -> Result<&str, AuthError> {
    let value = authorization_header.trim_matches([' ', '\t']);
    let (scheme, rest) = value.split_once(' ').unwrap_or((value, ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(AuthError::MissingToken);
    }
    let token = rest.trim_start_matches(' ');
    if token.is_empty() {
        return Err(AuthError::MissingToken);
    }
    if token.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(AuthError::MalformedToken);
    }
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_token_parsing() {
        assert_eq!(bearer_token("Bearer abc.def.ghi"), Ok("abc.def.ghi"));
        assert_eq!(bearer_token("bearer abc"), Ok("abc"));
        assert_eq!(bearer_token("BEARER abc"), Ok("abc"));
        assert_eq!(bearer_token("  Bearer   abc  "), Ok("abc"));
        assert_eq!(bearer_token(""), Err(AuthError::MissingToken));
        assert_eq!(bearer_token("   "), Err(AuthError::MissingToken));
        assert_eq!(bearer_token("Bearer"), Err(AuthError::MissingToken));
        assert_eq!(bearer_token("Bearer   "), Err(AuthError::MissingToken));
        assert_eq!(
            bearer_token("Basic dXNlcjpwdw=="),
            Err(AuthError::MissingToken)
        );
        assert_eq!(bearer_token("Bearerabc"), Err(AuthError::MissingToken));
        assert_eq!(bearer_token("Bearer a b"), Err(AuthError::MalformedToken));
        assert_eq!(bearer_token("Bearer a\tb"), Err(AuthError::MalformedToken));
    }

    #[test]
    fn header_shape_is_checked_before_anything_else() {
        for token in [
            "abc",
            "a.b",
            "a.b.c.d",
            ".e30.sig",
            "e30..sig",
            "e30.e30.si+g",
            "e30=.e30.sig",
            "bm90IGpzb24.e30.sig",
        ] {
            assert!(
                matches!(parse_header(token), Err(AuthError::MalformedToken)),
                "{token}"
            );
        }
        let long = format!("{}.e30.sig", "A".repeat(MAX_TOKEN_BYTES));
        assert!(matches!(
            parse_header(&long),
            Err(AuthError::MalformedToken)
        ));
    }

    #[test]
    fn verifier_is_shareable_across_threads() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Verifier>();
    }

    #[test]
    fn debug_does_not_show_the_secret() {
        let secret = vec![0x41u8; 32];
        let verifier = Verifier::new(VerifierConfig {
            hs256_secret: Some(secret.clone().into()),
            allowed_algorithms: vec![JwtAlgorithm::HS256],
            ..VerifierConfig::default()
        })
        .unwrap();
        let debug = format!("{verifier:?}");
        assert!(debug.contains("REDACTED"), "{debug}");
        assert!(!debug.contains("AAAA"), "{debug}");
        assert!(!debug.contains("65, 65"), "{debug}");
    }
}
