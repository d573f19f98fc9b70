//! The OpenAPI document of the public API (`/openapi.json`), and the
//! `/docs` page that renders it in the browser ([`crate::docs_ui`]), so the
//! two cannot disagree. The document lives in `openapi.json` beside this
//! crate; a test in `tests/api` checks that every route served is
//! described, and every route described is served.

use actix_web::{web, HttpResponse};
use serde_json::Value;

/// The OpenAPI 3.1 document, as served.
pub const OPENAPI_JSON: &str = include_str!("../openapi.json");

pub fn document() -> Value {
    serde_json::from_str(OPENAPI_JSON).expect("openapi.json is valid JSON (tested)")
}

/// Registers `/openapi.json`, `/docs` with its assets, and the admin
/// console (`/console`).
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/openapi.json", web::get().to(openapi_json))
        .configure(crate::docs_ui::configure)
        .configure(crate::console::configure);
}

async fn openapi_json() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(OPENAPI_JSON)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_is_openapi() {
        let doc = document();
        assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    }
}
