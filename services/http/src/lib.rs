//! What the HTTP services share, so every endpoint behaves the same way:
//! one [`ApiError`] with a stable JSON body `{"error": {"code", "message"}}`,
//! the [`Authenticated`] extractor (the tenant always comes from the token),
//! typed path extractors ([`paths`]), the counted log the services append
//! through ([`CountedLog`]), JSON/path/query extractor configs that turn bad
//! input into 4xx JSON errors, a middleware for request spans and metrics,
//! the health, readiness and metrics endpoints ([`health`]), the OpenAPI
//! document ([`openapi`]), the `/docs` page that renders it from assets
//! compiled into the binary ([`docs_ui`]), and the admin console at
//! `/console`, compiled in the same way ([`console`]). Only `services/` know about
//! actix-web; errors reach HTTP through their [`mnemo_domain::ErrorClass`],
//! mapped in [`error`] alone.

pub mod appends;
pub mod auth;
pub mod backlog;
pub mod console;
pub mod context;
pub mod docs_ui;
pub mod error;
pub mod health;
pub mod middleware;
pub mod openapi;
pub mod pacing;
pub mod paths;
pub mod views;

pub use appends::CountedLog;
pub use auth::Authenticated;
pub use error::ApiError;
pub use middleware::{
    extractor_configs, json_error_bodies, limit_request_headers, observe_requests,
    MAX_REQUEST_HEADER_BYTES,
};
pub use paths::{ErasurePath, MemoryPath, ReviewPath, SubjectPath};
