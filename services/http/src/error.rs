//! The one error type of the HTTP surface.

use std::fmt;

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use mnemo_auth::AuthError;
use mnemo_domain::IdError;
use mnemo_event_store::sealed::LogError;
use mnemo_event_store::EventStoreError;
use serde_json::json;

pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
    /// Logged for 5xx, never sent to the client.
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            source: None,
        }
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
        }
    }

    pub fn unavailable(source: impl std::error::Error + Send + Sync + 'static) -> Self {
        ApiError {
            status: StatusCode::SERVICE_UNAVAILABLE,
            code: "unavailable",
            message: "a backing store is unavailable, retry later".to_owned(),
            source: Some(Box::new(source)),
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
        HttpResponse::build(self.status).json(Self::body(self.code, &self.message))
    }
}

impl From<AuthError> for ApiError {
    fn from(error: AuthError) -> Self {
        let status = if error.is_forbidden() {
            StatusCode::FORBIDDEN
        } else {
            StatusCode::UNAUTHORIZED
        };
        ApiError::new(status, error.code(), error.to_string())
    }
}

impl From<IdError> for ApiError {
    fn from(error: IdError) -> Self {
        ApiError::bad_request("invalid_id", error.to_string())
    }
}

impl From<EventStoreError> for ApiError {
    fn from(error: EventStoreError) -> Self {
        match error {
            EventStoreError::Conflict { .. } => ApiError::conflict(
                "version_conflict",
                "the memory changed since the version you read; fetch it and retry",
            ),
            EventStoreError::EventIdTaken(_) => {
                ApiError::conflict("id_taken", "that id is already used by another resource")
            }
            EventStoreError::Backend(_) => ApiError::unavailable(error),
            other => ApiError::internal(other),
        }
    }
}

impl From<LogError> for ApiError {
    fn from(error: LogError) -> Self {
        match error {
            LogError::Store(store) => store.into(),
            other => ApiError::internal(other),
        }
    }
}
