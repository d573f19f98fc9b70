use mnemo_domain::ErrorClass;

use crate::Scope;

/// Everything that can go wrong while authenticating or authorising.
///
/// Messages name the failed check or claim but never carry the token or a
/// claim's value: both may hold personal data and these messages are logged
/// and sent back to clients.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    #[error("no bearer token was presented")]
    MissingToken,
    #[error("the token is not a well-formed JWT")]
    MalformedToken,
    #[error("the token signature does not verify")]
    InvalidSignature,
    #[error("the token's signing algorithm is not allowed")]
    AlgorithmNotAllowed,
    #[error("no configured key matches the token")]
    UnknownKey,
    #[error("the token has expired")]
    TokenExpired,
    #[error("the token is not valid yet")]
    TokenNotYetValid,
    #[error("the token is not meant for this audience")]
    WrongAudience,
    #[error("the token was not issued by the expected issuer")]
    WrongIssuer,
    #[error("invalid token claims: {0}")]
    InvalidClaims(String),
    #[error("the token lacks the `{required}` scope")]
    InsufficientScope { required: Scope },
    #[error("the token is bound to another subject")]
    SubjectForbidden,
    #[error("auth configuration error: {0}")]
    Config(String),
}

impl AuthError {
    /// A stable, machine-readable code for API error bodies and metrics.
    pub fn code(&self) -> &'static str {
        match self {
            AuthError::MissingToken => "missing_token",
            AuthError::MalformedToken => "malformed_token",
            AuthError::InvalidSignature => "invalid_signature",
            AuthError::AlgorithmNotAllowed => "algorithm_not_allowed",
            AuthError::UnknownKey => "unknown_key",
            AuthError::TokenExpired => "token_expired",
            AuthError::TokenNotYetValid => "token_not_yet_valid",
            AuthError::WrongAudience => "wrong_audience",
            AuthError::WrongIssuer => "wrong_issuer",
            AuthError::InvalidClaims(_) => "invalid_claims",
            AuthError::InsufficientScope { .. } => "insufficient_scope",
            AuthError::SubjectForbidden => "subject_forbidden",
            AuthError::Config(_) => "auth_config",
        }
    }

    /// True when the caller is authenticated but not allowed (HTTP 403);
    /// false when the credentials themselves are missing or bad (HTTP 401).
    pub fn is_forbidden(&self) -> bool {
        matches!(
            self,
            AuthError::InsufficientScope { .. } | AuthError::SubjectForbidden
        )
    }
}

impl mnemo_domain::Classified for AuthError {
    fn class(&self) -> ErrorClass {
        match self {
            AuthError::InsufficientScope { .. } | AuthError::SubjectForbidden => {
                ErrorClass::Forbidden
            }
            // A server that cannot check tokens refuses them all, as before.
            _ => ErrorClass::Unauthenticated,
        }
    }

    fn code(&self) -> &'static str {
        AuthError::code(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_statuses() {
        let table = [
            (AuthError::MissingToken, "missing_token", false),
            (AuthError::MalformedToken, "malformed_token", false),
            (AuthError::InvalidSignature, "invalid_signature", false),
            (
                AuthError::AlgorithmNotAllowed,
                "algorithm_not_allowed",
                false,
            ),
            (AuthError::UnknownKey, "unknown_key", false),
            (AuthError::TokenExpired, "token_expired", false),
            (AuthError::TokenNotYetValid, "token_not_yet_valid", false),
            (AuthError::WrongAudience, "wrong_audience", false),
            (AuthError::WrongIssuer, "wrong_issuer", false),
            (
                AuthError::InvalidClaims("x".into()),
                "invalid_claims",
                false,
            ),
            (
                AuthError::InsufficientScope {
                    required: Scope::AuditRead,
                },
                "insufficient_scope",
                true,
            ),
            (AuthError::SubjectForbidden, "subject_forbidden", true),
            (AuthError::Config("x".into()), "auth_config", false),
        ];
        for (error, code, forbidden) in table {
            assert_eq!(error.code(), code, "{error:?}");
            assert_eq!(error.is_forbidden(), forbidden, "{error:?}");
            let class = if forbidden {
                ErrorClass::Forbidden
            } else {
                ErrorClass::Unauthenticated
            };
            assert_eq!(mnemo_domain::Classified::class(&error), class, "{error:?}");
            assert_eq!(mnemo_domain::Classified::code(&error), code, "{error:?}");
        }
    }

    #[test]
    fn insufficient_scope_names_the_scope() {
        let error = AuthError::InsufficientScope {
            required: Scope::GdprErase,
        };
        assert_eq!(error.to_string(), "the token lacks the `gdpr:erase` scope");
    }
}
