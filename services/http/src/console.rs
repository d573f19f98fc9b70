//! The `/console` page: mnemo's admin console, a single-page app built by
//! Vite from `console/src` into `console/dist` (committed, checked against
//! a fresh build by `console/check`) and compiled into the binary here, so
//! the server needs no Node and the page loads nothing from elsewhere. It
//! talks to the public API with a token pasted into it.
//!
//! Every path under `/console/` answers the same shell (the app routes on
//! the client: `/console/subjects/user-42` can be reloaded or shared),
//! except the two assets, which are registered first.

use std::sync::LazyLock;

use actix_web::{web, HttpRequest, HttpResponse};

use crate::docs_ui::{respond, respond_page, Asset};

/// The page, its client-side routes and its assets, for the route list
/// (documented in `openapi.json` like every other route).
pub const ROUTES: &[(&str, &str)] = &[
    ("GET", "/console"),
    ("GET", "/console/console.js"),
    ("GET", "/console/console.css"),
    ("GET", "/console/{path}"),
];

/// The console's own policy, as strict as the `/docs` page's: its script
/// and stylesheet from this server (no inline script or style: the app
/// sets styles through the DOM only), requests back to this server alone
/// (the API it reads with the pasted token), no framing, no form posts,
/// no `<base>`. `img-src data:` is for the empty favicon.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

pub static STYLESHEET: LazyLock<Asset> = LazyLock::new(|| {
    Asset::new(
        web::Bytes::from_static(include_bytes!("../console/dist/console.css")),
        "text/css; charset=utf-8",
    )
});

pub static SCRIPT: LazyLock<Asset> = LazyLock::new(|| {
    Asset::new(
        web::Bytes::from_static(include_bytes!("../console/dist/console.js")),
        "application/javascript; charset=utf-8",
    )
});

/// The shell, linking each asset by its tag. Absolute links: the same
/// shell answers every depth of client-side route.
pub static PAGE: LazyLock<Asset> = LazyLock::new(|| {
    let linked = |path: &str, asset: &Asset| format!("{path}?v={}", asset.tag);
    let html = include_str!("../console/index.html")
        .replace(
            "{{stylesheet}}",
            &linked("/console/console.css", &STYLESHEET),
        )
        .replace("{{script}}", &linked("/console/console.js", &SCRIPT));
    Asset::new(web::Bytes::from(html), "text/html; charset=utf-8")
});

/// Registers the assets, then the page for `/console` and every path
/// below it.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/console/console.js", web::get().to(script))
        .route("/console/console.css", web::get().to(stylesheet))
        .route("/console", web::get().to(page))
        .route("/console/{path:.*}", web::get().to(page));
}

async fn page(request: HttpRequest) -> HttpResponse {
    // The console's URLs name subjects and memories: a followed link must
    // not carry them to another site (no Referer).
    respond_page(&request, &PAGE, CONTENT_SECURITY_POLICY)
}

async fn stylesheet(request: HttpRequest) -> HttpResponse {
    respond(&request, &STYLESHEET, true)
}

async fn script(request: HttpRequest) -> HttpResponse {
    respond(&request, &SCRIPT, true)
}

#[cfg(test)]
mod tests {
    use actix_web::http::StatusCode;
    use actix_web::test::{call_service, init_service, read_body, TestRequest};
    use actix_web::App;

    use super::*;

    async fn get(uri: &str) -> (StatusCode, Vec<(String, String)>, Vec<u8>) {
        let app = init_service(App::new().configure(configure)).await;
        let response = call_service(&app, TestRequest::get().uri(uri).to_request()).await;
        let status = response.status();
        let headers = response
            .headers()
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_str().unwrap().to_owned()))
            .collect();
        (status, headers, read_body(response).await.to_vec())
    }

    fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    #[actix_web::test]
    async fn every_client_route_answers_the_shell_under_its_policy() {
        for uri in [
            "/console",
            "/console/",
            "/console/subjects/user-42",
            "/console/memories/0190a5b6-1d1b-7c3e-9a61-3b4f1f0c2d11",
            "/console/audit?subject=user-42",
        ] {
            let (status, headers, body) = get(uri).await;
            assert_eq!(status, StatusCode::OK, "{uri}");
            assert_eq!(body, PAGE.body.as_ref(), "{uri}");
            assert_eq!(
                header(&headers, "content-security-policy"),
                Some(CONTENT_SECURITY_POLICY),
                "{uri}"
            );
            assert_eq!(header(&headers, "referrer-policy"), Some("no-referrer"));
            assert_eq!(header(&headers, "cache-control"), Some("no-cache"));
        }
        let html = String::from_utf8(PAGE.body.to_vec()).unwrap();
        for (path, asset) in [
            ("/console/console.css", &*STYLESHEET),
            ("/console/console.js", &*SCRIPT),
        ] {
            let link = format!("\"{path}?v={}\"", asset.tag);
            assert!(html.contains(&link), "{link} missing from {html}");
        }
        assert!(!html.contains("{{"), "an unfilled placeholder: {html}");
        assert!(!html.contains("<script>"), "no inline script: {html}");
    }

    #[actix_web::test]
    async fn the_assets_are_the_built_files_cached_by_their_tag() {
        for (path, asset, content_type) in [
            (
                "/console/console.js",
                &*SCRIPT,
                "application/javascript; charset=utf-8",
            ),
            (
                "/console/console.css",
                &*STYLESHEET,
                "text/css; charset=utf-8",
            ),
        ] {
            let (status, headers, body) = get(&format!("{path}?v={}", asset.tag)).await;
            assert_eq!(status, StatusCode::OK);
            assert_eq!(body, asset.body.as_ref());
            assert_eq!(header(&headers, "content-type"), Some(content_type));
            assert_eq!(
                header(&headers, "cache-control"),
                Some("public, max-age=31536000, immutable")
            );
            assert_eq!(header(&headers, "content-security-policy"), None);
        }
    }
}
