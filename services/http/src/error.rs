//! The one error type of the HTTP surface.

use std::fmt;

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use mnemo_domain::{Classified, ErrorClass};
use serde_json::json;

pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
    /// Logged for 5xx, never sent to the client.
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
    /// A refusal that passes: seconds for `Retry-After`, and extra fields
    /// of the error object (which limit refused). Boxed: errors travel in
    /// every `Result` of the handlers, and this is rare.
    retry: Option<Box<(u64, serde_json::Value)>>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            source: None,
            retry: None,
        }
    }

    /// A refusal the client may retry after `seconds` (429 or 503): the
    /// response carries `Retry-After`, and `retry_after_seconds` with
    /// `details` in the error object.
    pub fn retry_after(mut self, seconds: u64, details: serde_json::Value) -> Self {
        self.retry = Some(Box::new((seconds.max(1), details)));
        self
    }

    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }

    pub fn not_found(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, code, message)
    }

    pub fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, code, message)
    }

    pub fn unprocessable(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, code, message)
    }

    /// A server-side failure: the client sees a generic message, the log
    /// gets the cause chain.
    pub fn internal(source: impl std::error::Error + Send + Sync + 'static) -> Self {
        ApiError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            code: "internal_error",
            message: "internal error".to_owned(),
            source: Some(Box::new(source)),
            retry: None,
        }
    }

    pub fn unavailable(source: impl std::error::Error + Send + Sync + 'static) -> Self {
        ApiError {
            status: StatusCode::SERVICE_UNAVAILABLE,
            code: "unavailable",
            message: "a backing store is unavailable, retry later".to_owned(),
            source: Some(Box::new(source)),
            retry: None,
        }
    }

    pub fn status(&self) -> StatusCode {
        self.status
    }

    pub fn code(&self) -> &'static str {
        self.code
    }

    pub fn message(&self) -> &str {
        &self.message
    }

    pub fn body(code: &str, message: &str) -> serde_json::Value {
        json!({"error": {"code": code, "message": message}})
    }
}

impl fmt::Debug for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiError")
            .field("status", &self.status)
            .field("code", &self.code)
            .finish()
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.status
    }

    fn error_response(&self) -> HttpResponse {
        if let Some(source) = &self.source {
            let mut chain = source.to_string();
            let mut next = source.source();
            while let Some(cause) = next {
                chain.push_str(": ");
                chain.push_str(&cause.to_string());
                next = cause.source();
            }
            tracing::error!(code = self.code, status = self.status.as_u16(), error = %chain, "request failed");
        }
        let mut body = Self::body(self.code, &self.message);
        let mut response = HttpResponse::build(self.status);
        if let Some(retry) = &self.retry {
            let (seconds, details) = &**retry;
            response.insert_header((actix_web::http::header::RETRY_AFTER, seconds.to_string()));
            body["error"]["retry_after_seconds"] = json!(seconds);
            if let serde_json::Value::Object(details) = details {
                for (key, value) in details {
                    body["error"][key] = value.clone();
                }
            }
        }
        response.json(body)
    }
}

/// The one mapping from an error's class to an HTTP status.
pub fn status_of(class: ErrorClass) -> StatusCode {
    match class {
        ErrorClass::Malformed => StatusCode::BAD_REQUEST,
        ErrorClass::Invalid => StatusCode::UNPROCESSABLE_ENTITY,
        ErrorClass::Unauthenticated => StatusCode::UNAUTHORIZED,
        ErrorClass::Forbidden => StatusCode::FORBIDDEN,
        ErrorClass::NotFound => StatusCode::NOT_FOUND,
        ErrorClass::Conflict => StatusCode::CONFLICT,
        ErrorClass::Gone => StatusCode::GONE,
        ErrorClass::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        ErrorClass::Internal => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// Every classified error (the use cases', the auth and id errors, the
/// log's) becomes an `ApiError` the same way: its class picks the status, its
/// code is kept, and its message is shown only for a client error, since a
/// server error's message may name internals.
impl<E: Classified + Send + Sync + 'static> From<E> for ApiError {
    fn from(error: E) -> Self {
        match error.class() {
            ErrorClass::Unavailable => ApiError {
                code: error.code(),
                ..ApiError::unavailable(error)
            },
            ErrorClass::Internal => ApiError {
                code: error.code(),
                ..ApiError::internal(error)
            },
            class => ApiError::new(status_of(class), error.code(), error.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use mnemo_auth::{AuthError, Scope};
    use mnemo_domain::SubjectId;

    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("the thing broke")]
    struct Broken(ErrorClass);

    impl Classified for Broken {
        fn class(&self) -> ErrorClass {
            self.0
        }

        fn code(&self) -> &'static str {
            "thing_broke"
        }
    }

    #[test]
    fn classes_map_to_statuses() {
        let table = [
            (ErrorClass::Malformed, 400),
            (ErrorClass::Invalid, 422),
            (ErrorClass::Unauthenticated, 401),
            (ErrorClass::Forbidden, 403),
            (ErrorClass::NotFound, 404),
            (ErrorClass::Conflict, 409),
            (ErrorClass::Gone, 410),
            (ErrorClass::Unavailable, 503),
            (ErrorClass::Internal, 500),
        ];
        for (class, status) in table {
            let error = ApiError::from(Broken(class));
            assert_eq!(error.status().as_u16(), status, "{class:?}");
            assert_eq!(error.code(), "thing_broke", "{class:?}");
        }
    }

    #[test]
    fn only_client_errors_show_their_message() {
        assert_eq!(
            ApiError::from(Broken(ErrorClass::Conflict)).message(),
            "the thing broke"
        );
        for class in [ErrorClass::Unavailable, ErrorClass::Internal] {
            let message = ApiError::from(Broken(class)).message().to_owned();
            assert!(!message.contains("broke"), "{message}");
        }
    }

    #[test]
    fn auth_and_id_errors_keep_their_statuses_and_codes() {
        let scope = ApiError::from(AuthError::InsufficientScope {
            required: Scope::AuditRead,
        });
        assert_eq!(
            (scope.status().as_u16(), scope.code()),
            (403, "insufficient_scope")
        );
        let expired = ApiError::from(AuthError::TokenExpired);
        assert_eq!(
            (expired.status().as_u16(), expired.code()),
            (401, "token_expired")
        );
        let id = ApiError::from(SubjectId::parse("a b").unwrap_err());
        assert_eq!((id.status().as_u16(), id.code()), (400, "invalid_id"));
    }
}
