//! The `/docs` page: Swagger UI over the server's own `/openapi.json`, with
//! its bundle and stylesheet compiled into the binary from
//! `docs-ui/vendor/` (the exact files of the pinned `swagger-ui-dist`,
//! checked by `docs-ui/check`), so the page works offline and no CDN sees
//! who reads it. The page is a shell; `docs-ui/docs.js` starts the renderer.
//!
//! The page sets its own Content-Security-Policy (the server sends none
//! elsewhere): a user pastes a bearer token into it, so scripts come only
//! from this server and requests go only back to it.

use std::sync::LazyLock;

use actix_web::http::header::{self, EntityTag, IfNoneMatch};
use actix_web::{web, HttpMessage, HttpRequest, HttpResponse};
use sha2::{Digest, Sha256};

/// The page and its assets, for the route list (documented in
/// `openapi.json` like every other route).
pub const ROUTES: &[(&str, &str)] = &[
    ("GET", "/docs"),
    ("GET", "/docs/swagger-ui.css"),
    ("GET", "/docs/swagger-ui-bundle.js"),
    ("GET", "/docs/docs.js"),
];

/// For the page only: scripts and styles from this server, requests back
/// to it alone, no framing (the page holds a pasted token and has buttons
/// that send requests with it). Swagger UI needs no inline script or style
/// (it sets styles through the DOM, which the policy allows) and no eval;
/// `img-src data:` is for the stylesheet's icons and the page's empty
/// favicon.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

/// A response body fixed at build time, with the tag it is cached by.
pub struct Asset {
    pub body: web::Bytes,
    pub content_type: &'static str,
    /// A prefix of the body's SHA-256: the ETag, and the `v` the page links
    /// the asset with, so a new binary's assets are new URLs.
    pub tag: String,
}

impl Asset {
    pub(crate) fn new(body: web::Bytes, content_type: &'static str) -> Self {
        let digest = Sha256::digest(&body);
        Asset {
            body,
            content_type,
            tag: hex::encode(&digest[..8]),
        }
    }
}

pub static STYLESHEET: LazyLock<Asset> = LazyLock::new(|| {
    Asset::new(
        web::Bytes::from_static(include_bytes!("../docs-ui/vendor/swagger-ui.css")),
        "text/css; charset=utf-8",
    )
});

pub static BUNDLE: LazyLock<Asset> = LazyLock::new(|| {
    Asset::new(
        web::Bytes::from_static(include_bytes!("../docs-ui/vendor/swagger-ui-bundle.js")),
        "application/javascript; charset=utf-8",
    )
});

pub static SCRIPT: LazyLock<Asset> = LazyLock::new(|| {
    Asset::new(
        web::Bytes::from_static(include_bytes!("../docs-ui/docs.js")),
        "application/javascript; charset=utf-8",
    )
});

/// The page, linking each asset by its tag.
pub static PAGE: LazyLock<Asset> = LazyLock::new(|| {
    let linked = |path: &str, asset: &Asset| format!("{path}?v={}", asset.tag);
    let html = include_str!("../docs-ui/index.html")
        .replace(
            "{{stylesheet}}",
            &linked("docs/swagger-ui.css", &STYLESHEET),
        )
        .replace("{{bundle}}", &linked("docs/swagger-ui-bundle.js", &BUNDLE))
        .replace("{{script}}", &linked("docs/docs.js", &SCRIPT));
    Asset::new(web::Bytes::from(html), "text/html; charset=utf-8")
});

/// Registers the page and its assets.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/docs", web::get().to(page))
        .route("/docs/swagger-ui.css", web::get().to(stylesheet))
        .route("/docs/swagger-ui-bundle.js", web::get().to(bundle))
        .route("/docs/docs.js", web::get().to(script));
}

async fn page(request: HttpRequest) -> HttpResponse {
    // A link followed from a rendered description would otherwise tell its
    // site this server's address.
    respond_page(&request, &PAGE, CONTENT_SECURITY_POLICY)
}

/// A page that holds a pasted token (`/docs`, `/console`): never cached
/// without revalidation, with its own Content-Security-Policy, and no
/// Referer sent when a link on it is followed.
pub(crate) fn respond_page(
    request: &HttpRequest,
    page: &Asset,
    policy: &'static str,
) -> HttpResponse {
    let mut response = respond(request, page, false);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        header::HeaderValue::from_static(policy),
    );
    headers.insert(
        header::REFERRER_POLICY,
        header::HeaderValue::from_static("no-referrer"),
    );
    response
}

async fn stylesheet(request: HttpRequest) -> HttpResponse {
    respond(&request, &STYLESHEET, true)
}

async fn bundle(request: HttpRequest) -> HttpResponse {
    respond(&request, &BUNDLE, true)
}

async fn script(request: HttpRequest) -> HttpResponse {
    respond(&request, &SCRIPT, true)
}

/// The asset, or 304 when the client holds this version. The page is
/// revalidated on every load (it names the assets' versions); an asset
/// asked for by its current tag never changes, so it is cached for good,
/// while one asked for without it (or by an old tag) is revalidated.
pub(crate) fn respond(request: &HttpRequest, asset: &Asset, cacheable: bool) -> HttpResponse {
    let etag = EntityTag::new_strong(asset.tag.clone());
    let tagged = request
        .query_string()
        .split('&')
        .any(|pair| pair.strip_prefix("v=") == Some(asset.tag.as_str()));
    let cache_control = match cacheable && tagged {
        true => "public, max-age=31536000, immutable",
        false => "no-cache",
    };
    let held = match request.get_header::<IfNoneMatch>() {
        Some(IfNoneMatch::Any) => true,
        Some(IfNoneMatch::Items(tags)) => tags.iter().any(|tag| tag.weak_eq(&etag)),
        None => false,
    };
    let mut response = match held {
        true => HttpResponse::NotModified(),
        false => HttpResponse::Ok(),
    };
    response
        .insert_header(header::ETag(etag))
        .insert_header((header::CACHE_CONTROL, cache_control))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"));
    match held {
        true => response.finish(),
        false => response
            .content_type(asset.content_type)
            .body(asset.body.clone()),
    }
}

#[cfg(test)]
mod tests {
    use actix_web::http::StatusCode;
    use actix_web::test::{call_service, init_service, read_body, TestRequest};
    use actix_web::App;

    use super::*;

    async fn get(
        uri: &str,
        if_none_match: Option<&str>,
    ) -> (StatusCode, Vec<(String, String)>, Vec<u8>) {
        let app = init_service(App::new().configure(configure)).await;
        let mut request = TestRequest::get().uri(uri);
        if let Some(tag) = if_none_match {
            request = request.insert_header((header::IF_NONE_MATCH, tag));
        }
        let response = call_service(&app, request.to_request()).await;
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
    async fn the_page_links_each_asset_by_its_current_tag_under_its_policy() {
        let (status, headers, body) = get("/docs", None).await;
        assert_eq!(status, StatusCode::OK);
        let html = String::from_utf8(body).unwrap();
        for (path, asset) in [
            ("docs/swagger-ui.css", &*STYLESHEET),
            ("docs/swagger-ui-bundle.js", &*BUNDLE),
            ("docs/docs.js", &*SCRIPT),
        ] {
            let link = format!("\"{path}?v={}\"", asset.tag);
            assert!(html.contains(&link), "{link} missing from {html}");
        }
        assert!(!html.contains("{{"), "an unfilled placeholder: {html}");
        assert_eq!(
            header(&headers, "content-security-policy"),
            Some(CONTENT_SECURITY_POLICY)
        );
        assert_eq!(header(&headers, "cache-control"), Some("no-cache"));
        assert_eq!(
            header(&headers, "content-type"),
            Some("text/html; charset=utf-8")
        );
    }

    #[actix_web::test]
    async fn an_asset_asked_for_by_its_tag_is_cached_for_good_else_revalidated() {
        let tag = &BUNDLE.tag;
        let (status, headers, body) =
            get(&format!("/docs/swagger-ui-bundle.js?v={tag}"), None).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, BUNDLE.body.as_ref());
        assert_eq!(
            header(&headers, "cache-control"),
            Some("public, max-age=31536000, immutable")
        );
        assert_eq!(
            header(&headers, "etag"),
            Some(format!("\"{tag}\"").as_str())
        );
        assert_eq!(header(&headers, "x-content-type-options"), Some("nosniff"));

        for uri in [
            "/docs/swagger-ui-bundle.js",
            "/docs/swagger-ui-bundle.js?v=0123456789abcdef",
        ] {
            let (status, headers, _) = get(uri, None).await;
            assert_eq!(status, StatusCode::OK);
            assert_eq!(header(&headers, "cache-control"), Some("no-cache"), "{uri}");
        }
    }

    #[actix_web::test]
    async fn a_client_holding_the_current_version_gets_304_without_a_body() {
        let current = format!("\"{}\"", STYLESHEET.tag);
        let (status, headers, body) = get("/docs/swagger-ui.css", Some(&current)).await;
        assert_eq!(status, StatusCode::NOT_MODIFIED);
        assert!(body.is_empty());
        assert_eq!(header(&headers, "etag"), Some(current.as_str()));

        let (status, _, body) = get("/docs/swagger-ui.css", Some("\"0123456789abcdef\"")).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, STYLESHEET.body.as_ref());

        let page = format!("\"{}\"", PAGE.tag);
        let (status, _, _) = get("/docs", Some(&page)).await;
        assert_eq!(status, StatusCode::NOT_MODIFIED);
    }

    #[test]
    fn tags_follow_the_content() {
        assert_eq!(STYLESHEET.tag.len(), 16);
        assert_ne!(STYLESHEET.tag, BUNDLE.tag);
        assert_ne!(BUNDLE.tag, SCRIPT.tag);
    }
}
