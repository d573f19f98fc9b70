//! mnemo-auth turns a bearer JWT into a [`Principal`] (tenant, actor, scopes,
//! optional subject binding) and mints the HS256 tokens used by the embedded
//! mode and by tests. It owns the token format (claims `tenant`, `sub`,
//! `scope`, `subject`, `jti`), the scope vocabulary, and the 401-versus-403
//! distinction ([`AuthError::is_forbidden`]); it knows nothing of HTTP beyond
//! reading an `Authorization` value ([`bearer_token`]).
//!
//! Key decisions:
//! - The header's `alg` is checked against the configured allow-list before
//!   any key is touched, and `none` is never accepted. The key is then chosen
//!   *by algorithm*: HS256 tokens are checked only against the HS256 secret,
//!   asymmetric tokens only against public keys declared for that algorithm,
//!   so a public key can never serve as an HMAC secret (algorithm confusion).
//! - Keys carried or referenced by the token header (`jwk`, `jku`, `x5u`,
//!   `x5c`) are ignored; `kid` only chooses among configured keys. A header
//!   with `crit` is refused, since we implement no JWS extension.
//! - `exp` is mandatory, `nbf` is checked when present, and `iss`/`aud`
//!   become mandatory once configured. The leeway (default 30 s, at most
//!   300 s) applies to `exp` and `nbf` only.
//! - Every claim is type-checked here, registered ones included: a claim of
//!   the wrong JSON type (`"nbf": "soon"`, a string `exp`, a numeric
//!   `tenant`) is `invalid_claims`, never skipped. `jsonwebtoken` skips the
//!   registered claims it cannot parse, so it only checks signatures.
//! - Tenant and subject go through mnemo-domain's id parsers, so what leaves
//!   this crate is already validated. Unknown scopes are ignored so that one
//!   issuer can serve several services.
//! - Error messages name claims, never their values: tokens carry personal
//!   data and these messages end up in logs and responses.
//! - HS256 secrets must be at least 32 bytes (RFC 7518 §3.2).
//! - Signature maths is delegated to `jsonwebtoken` (ring); this crate does
//!   key selection and claim semantics only.

mod algorithm;
mod claims;
mod error;
mod minter;
mod principal;
mod scope;
mod verifier;

pub use algorithm::JwtAlgorithm;
pub use claims::MAX_ACTOR_CHARS;
pub use error::AuthError;
pub use minter::{generate_secret, MintRequest, Minter};
pub use principal::Principal;
pub use scope::Scope;
pub use verifier::{
    bearer_token, PublicKey, Verifier, VerifierConfig, DEFAULT_LEEWAY_SECONDS, MAX_LEEWAY_SECONDS,
    MAX_TOKEN_BYTES, MIN_HS256_SECRET_BYTES,
};

/// Re-exported so callers can build [`VerifierConfig::hs256_secret`] without
/// depending on `secrecy` themselves.
pub use secrecy::SecretSlice;
