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

/// What the verifier reads after `jsonwebtoken` has checked the signature and
/// the registered time/issuer/audience claims. Everything is a raw JSON value
/// so that a wrongly typed claim yields an error naming the claim, not a
/// serde message quoting its value. Serde's derive refuses duplicate keys,
/// which closes the door on parser-differential tricks.
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

fn required_string_claim(name: &str, value: Option<Value>) -> Result<String, AuthError> {
    string_claim(name, value)?.ok_or_else(|| invalid(format!("missing required claim `{name}`")))
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
    pub(crate) fn into_principal(self) -> Result<Principal, AuthError> {
        let tenant = required_string_claim("tenant", self.tenant)?;
        let tenant =
            TenantId::parse(tenant).map_err(|e| invalid(format!("claim `tenant`: {e}")))?;

        let actor = required_string_claim("sub", self.sub)?;
        check_text_claim("sub", &actor)?;

        let scopes = parse_scopes(self.scope)?;

        let subject = string_claim("subject", self.subject)?
            .map(|s| SubjectId::parse(s).map_err(|e| invalid(format!("claim `subject`: {e}"))))
            .transpose()?;

        let token_id = string_claim("jti", self.jti)?;
        if let Some(jti) = &token_id {
            check_text_claim("jti", jti)?;
        }

        // `iat` is informational, but a non-numeric one means the issuer is
        // not producing the tokens we think it is.
        match self.iat {
            None | Some(Value::Null) => {}
            Some(Value::Number(n)) if n.as_f64().is_some_and(|t| t >= 0.0) => {}
            Some(_) => return Err(invalid("claim `iat` must be a non-negative number")),
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

    fn principal(claims: Value) -> Result<Principal, AuthError> {
        serde_json::from_value::<RawClaims>(claims)
            .unwrap()
            .into_principal()
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
