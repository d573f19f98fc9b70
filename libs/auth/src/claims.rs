//! The token's claim set, in one place for both directions so that what the
//! [`Minter`](crate::Minter) writes is exactly what the
//! [`Verifier`](crate::Verifier) reads.

use std::collections::BTreeSet;

use mnemo_domain::{SubjectId, TenantId};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{AuthError, Principal, Scope};

/// Longest accepted `sub` and `jti`, in characters. Generous for service
/// names and UUIDs, small enough that a token cannot smuggle a document
/// into every log line.
pub(crate) const MAX_TEXT_CLAIM_CHARS: usize = 256;

/// Longest actor (`sub` claim, [`Principal::actor`]), in characters: what a
/// filter on the actor may be compared with.
pub const MAX_ACTOR_CHARS: usize = MAX_TEXT_CLAIM_CHARS;

/// The whole claim set as the verifier reads it once the signature has
/// checked out. Everything is a raw JSON value so that a wrongly typed claim
/// yields an error naming the claim, not a serde message quoting its value.
/// Serde's derive refuses duplicate keys, which closes the door on
/// parser-differential tricks.
///
/// The registered claims (`exp`, `nbf`, `iat`, `iss`, `aud`) are read and
/// checked here too, not by `jsonwebtoken`: it silently skips a claim it
/// cannot parse, so `"nbf": "soon"` (or `true`, `-1`, `{}`) would switch the
/// not-before check off instead of refusing the token.
#[derive(Debug, Deserialize)]
pub(crate) struct RawClaims {
    #[serde(default)]
    tenant: Option<Value>,
    #[serde(default)]
    sub: Option<Value>,
    #[serde(default)]
    scope: Option<Value>,
    #[serde(default)]
    subject: Option<Value>,
    #[serde(default)]
    jti: Option<Value>,
    #[serde(default)]
    iat: Option<Value>,
    #[serde(default)]
    exp: Option<Value>,
    #[serde(default)]
    nbf: Option<Value>,
    #[serde(default)]
    iss: Option<Value>,
    #[serde(default)]
    aud: Option<Value>,
}

/// What the registered claims are checked against, for one verification.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClaimChecks<'a> {
    /// Seconds since the Unix epoch.
    pub now: u64,
    /// Tolerated clock skew on `exp` and `nbf`, in seconds.
    pub leeway: u64,
    /// When set, `iss` must be present and equal.
    pub issuer: Option<&'a str>,
    /// When set, `aud` must be present and name it.
    pub audience: Option<&'a str>,
}

/// `aud`: RFC 7519 §4.1.3 allows one string or an array of strings.
enum Audience {
    One(String),
    Many(Vec<String>),
}

impl Audience {
    fn contains(&self, wanted: &str) -> bool {
        match self {
            Audience::One(aud) => aud == wanted,
            Audience::Many(auds) => auds.iter().any(|aud| aud == wanted),
        }
    }
}

fn invalid(message: impl Into<String>) -> AuthError {
    AuthError::InvalidClaims(message.into())
}

/// A string claim; JSON `null` counts as absent.
fn string_claim(name: &str, value: Option<Value>) -> Result<Option<String>, AuthError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(invalid(format!("claim `{name}` must be a string"))),
    }
}

/// A NumericDate (RFC 7519 §2): a non-negative JSON number of seconds,
/// fractions allowed and rounded as `jsonwebtoken` does. Anything else, a
/// numeric string included, is refused; JSON `null` counts as absent.
fn numeric_date_claim(name: &str, value: Option<Value>) -> Result<Option<u64>, AuthError> {
    let refused = || invalid(format!("claim `{name}` must be a non-negative number"));
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match (n.as_u64(), n.as_f64()) {
            (Some(seconds), _) => Ok(Some(seconds)),
            (None, Some(t)) if t.is_finite() && t >= 0.0 && t < u64::MAX as f64 => {
                Ok(Some(t.round() as u64))
            }
            _ => Err(refused()),
        },
        Some(_) => Err(refused()),
    }
}

fn audience_claim(value: Option<Value>) -> Result<Option<Audience>, AuthError> {
    const SHAPE: &str = "claim `aud` must be a string or an array of strings";
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(aud)) => Ok(Some(Audience::One(aud))),
        Some(Value::Array(items)) => items
            .into_iter()
            .map(|item| match item {
                Value::String(aud) => Ok(aud),
                _ => Err(invalid(SHAPE)),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(|auds| Some(Audience::Many(auds))),
        Some(_) => Err(invalid(SHAPE)),
    }
}

/// Free-text claims (`sub`, `jti`) end up in logs and audit records: bound
/// their size and keep control characters (newlines, ANSI escapes) out.
pub(crate) fn check_text_claim(name: &str, value: &str) -> Result<(), AuthError> {
    let chars = value.chars().count();
    if chars == 0 || chars > MAX_TEXT_CLAIM_CHARS {
        return Err(invalid(format!(
            "claim `{name}` must be 1 to {MAX_TEXT_CLAIM_CHARS} characters"
        )));
    }
    if value.chars().any(char::is_control) {
        return Err(invalid(format!(
            "claim `{name}` must not contain control characters"
        )));
    }
    Ok(())
}

/// RFC 8693 §4.2 says a space-separated string; some issuers send an array.
/// Both are accepted, and names we do not know are skipped: they may belong
/// to another service sharing the issuer.
fn parse_scopes(value: Option<Value>) -> Result<BTreeSet<Scope>, AuthError> {
    const SHAPE: &str = "claim `scope` must be a string or an array of strings";
    match value {
        None | Some(Value::Null) => Ok(BTreeSet::new()),
        Some(Value::String(s)) => Ok(s
            .split_ascii_whitespace()
            .filter_map(Scope::parse)
            .collect()),
        Some(Value::Array(items)) => {
            let mut scopes = BTreeSet::new();
            for item in items {
                let Value::String(name) = item else {
                    return Err(invalid(SHAPE));
                };
                scopes.extend(Scope::parse(&name));
            }
            Ok(scopes)
        }
        Some(_) => Err(invalid(SHAPE)),
    }
}

impl RawClaims {
    /// Checks every claim and builds the principal. The shape of every
    /// claim is checked first, so a wrongly typed one is always
    /// `invalid_claims`, whatever else is wrong; then time, issuer and
    /// audience; then the values of our own claims.
    pub(crate) fn verify(self, checks: &ClaimChecks<'_>) -> Result<Principal, AuthError> {
        let exp = numeric_date_claim("exp", self.exp)?
            .ok_or_else(|| invalid("claim `exp` is required and must be a number"))?;
        let nbf = numeric_date_claim("nbf", self.nbf)?;
        // `iat` is informational, but a non-numeric one means the issuer is
        // not producing the tokens we think it is.
        numeric_date_claim("iat", self.iat)?;
        let iss = string_claim("iss", self.iss)?;
        let aud = audience_claim(self.aud)?;
        let tenant = string_claim("tenant", self.tenant)?;
        let actor = string_claim("sub", self.sub)?;
        let scopes = parse_scopes(self.scope)?;
        let subject = string_claim("subject", self.subject)?;
        let token_id = string_claim("jti", self.jti)?;

        // The same comparisons (and leeway) as `jsonwebtoken`'s.
        if exp.saturating_add(checks.leeway) < checks.now {
            return Err(AuthError::TokenExpired);
        }
        if nbf.is_some_and(|nbf| nbf > checks.now.saturating_add(checks.leeway)) {
            return Err(AuthError::TokenNotYetValid);
        }
        // A token without the configured iss/aud is not for us.
        if let Some(issuer) = checks.issuer {
            if iss.as_deref() != Some(issuer) {
                return Err(AuthError::WrongIssuer);
            }
        }
        if let Some(audience) = checks.audience {
            if !aud.is_some_and(|aud| aud.contains(audience)) {
                return Err(AuthError::WrongAudience);
            }
        }

        let tenant = tenant.ok_or_else(|| invalid("missing required claim `tenant`"))?;
        let tenant =
            TenantId::parse(tenant).map_err(|e| invalid(format!("claim `tenant`: {e}")))?;

        let actor = actor.ok_or_else(|| invalid("missing required claim `sub`"))?;
        check_text_claim("sub", &actor)?;

        let subject = subject
            .map(|s| SubjectId::parse(s).map_err(|e| invalid(format!("claim `subject`: {e}"))))
            .transpose()?;

        if let Some(jti) = &token_id {
            check_text_claim("jti", jti)?;
        }

        Ok(Principal {
            tenant,
            actor,
            scopes,
            subject,
            token_id,
        })
    }
}

/// What the minter writes. Optional claims are left out rather than written
/// as `null`.
#[derive(Debug, Serialize)]
pub(crate) struct MintedClaims<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iss: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aud: Option<&'a str>,
    pub sub: &'a str,
    pub tenant: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<&'a str>,
    pub iat: u64,
    pub exp: u64,
    pub jti: String,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const NOW: u64 = 1_800_000_000;

    /// Verified at [`NOW`], with an `exp` an hour later unless given.
    fn principal(mut claims: Value) -> Result<Principal, AuthError> {
        if claims.get("exp").is_none() {
            claims["exp"] = json!(NOW + 3600);
        }
        serde_json::from_value::<RawClaims>(claims)
            .unwrap()
            .verify(&ClaimChecks {
                now: NOW,
                leeway: 0,
                issuer: None,
                audience: None,
            })
    }

    #[test]
    fn minimal_claims() {
        let p = principal(json!({"tenant": "acme", "sub": "agent"})).unwrap();
        assert_eq!(p.tenant.as_str(), "acme");
        assert_eq!(p.actor, "agent");
        assert!(p.scopes.is_empty());
        assert_eq!(p.subject, None);
        assert_eq!(p.token_id, None);
    }

    #[test]
    fn wrong_types_name_the_claim_not_the_value() {
        for (claims, name) in [
            (json!({"tenant": 12345, "sub": "a"}), "tenant"),
            (json!({"tenant": "acme", "sub": ["secret-name"]}), "sub"),
            (
                json!({"tenant": "acme", "sub": "a", "scope": {"x": "secret-name"}}),
                "scope",
            ),
            (
                json!({"tenant": "acme", "sub": "a", "scope": ["memories:read", 7]}),
                "scope",
            ),
            (
                json!({"tenant": "acme", "sub": "a", "subject": "secret name"}),
                "subject",
            ),
            (json!({"tenant": "acme", "sub": "a", "jti": 12345}), "jti"),
            (
                json!({"tenant": "acme", "sub": "a", "iat": "secret-name"}),
                "iat",
            ),
            (
                json!({"tenant": "acme", "sub": "a", "nbf": "secret-name"}),
                "nbf",
            ),
            (
                json!({"tenant": "acme", "sub": "a", "exp": "secret-name"}),
                "exp",
            ),
            (
                json!({"tenant": "acme", "sub": "a", "iss": ["secret-name"]}),
                "iss",
            ),
            (
                json!({"tenant": "acme", "sub": "a", "aud": {"secret": 12345}}),
                "aud",
            ),
        ] {
            let err = principal(claims).unwrap_err();
            let message = err.to_string();
            assert!(matches!(err, AuthError::InvalidClaims(_)), "{message}");
            assert!(message.contains(&format!("`{name}`")), "{message}");
            assert!(!message.contains("secret"), "{message}");
            assert!(!message.contains("12345"), "{message}");
        }
    }

    #[test]
    fn numeric_dates() {
        for (value, expected) in [
            (json!(null), None),
            (json!(0), Some(0)),
            (json!(NOW), Some(NOW)),
            (json!(12.4), Some(12)),
            (json!(12.6), Some(13)),
        ] {
            assert_eq!(
                numeric_date_claim("nbf", Some(value.clone())),
                Ok(expected),
                "{value}"
            );
        }
        assert_eq!(numeric_date_claim("nbf", None), Ok(None));
        for value in [
            json!(-1),
            json!(-0.5),
            json!(1e300),
            json!("1800000000"),
            json!("soon"),
            json!(true),
            json!([NOW]),
            json!({"t": NOW}),
        ] {
            let err = numeric_date_claim("nbf", Some(value.clone())).unwrap_err();
            assert!(err.to_string().contains("`nbf`"), "{value}: {err}");
        }
    }

    #[test]
    fn type_errors_come_before_time_errors() {
        // Expired and mistyped: the mistyped claim is what gets reported.
        let err = principal(json!({"tenant": 1, "sub": "a", "exp": 1})).unwrap_err();
        assert!(matches!(err, AuthError::InvalidClaims(_)), "{err}");
        assert_eq!(
            principal(json!({"tenant": "acme", "sub": "a", "exp": 1})),
            Err(AuthError::TokenExpired)
        );
    }

    #[test]
    fn text_claims_are_bounded() {
        assert!(check_text_claim("sub", &"é".repeat(256)).is_ok());
        assert!(check_text_claim("sub", &"x".repeat(257)).is_err());
        assert!(check_text_claim("sub", "").is_err());
        assert!(check_text_claim("sub", "line\nbreak").is_err());
        assert!(check_text_claim("sub", "esc\u{1b}[31m").is_err());
        assert!(check_text_claim("sub", "svc:indexer@acme").is_ok());
    }

    #[test]
    fn duplicate_claims_are_refused() {
        let raw = r#"{"tenant":"acme","sub":"a","tenant":"other"}"#;
        assert!(serde_json::from_str::<RawClaims>(raw).is_err());
    }
}
