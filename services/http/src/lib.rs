//! What the HTTP services share, so every endpoint behaves the same way:
//! one [`ApiError`] with a stable JSON body `{"error": {"code", "message"}}`,
//! the [`Authenticated`] extractor (the tenant always comes from the token),
//! JSON/path/query extractor configs that turn bad input into 4xx JSON
//! errors, a middleware for request spans and metrics, the health and
//! metrics endpoints, and the OpenAPI document. Only `services/` know about actix-web.

pub mod auth;
pub mod context;
pub mod error;
pub mod health;
pub mod middleware;
pub mod openapi;
pub mod views;

pub use auth::Authenticated;
pub use error::ApiError;
pub use middleware::{extractor_configs, json_error_bodies, observe_requests};
