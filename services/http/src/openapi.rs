//! The OpenAPI document of the public API (`/openapi.json`) and a
//! human-readable page generated from it (`/docs`), so the two cannot
//! disagree. The document lives in `openapi.json` beside this crate; a test
//! in the `mnemo` binary checks that every route it serves is described.

use std::fmt::Write as _;

use actix_web::{web, HttpResponse};
use serde_json::Value;

/// The OpenAPI 3.1 document, as served.
pub const OPENAPI_JSON: &str = include_str!("../openapi.json");

pub fn document() -> Value {
    serde_json::from_str(OPENAPI_JSON).expect("openapi.json is valid JSON (tested)")
}

/// Registers `/openapi.json` and `/docs`.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/openapi.json", web::get().to(openapi_json))
        .route("/docs", web::get().to(docs_page));
}

async fn openapi_json() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(OPENAPI_JSON)
}

async fn docs_page() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/html; charset=utf-8")
        .body(render_html(&document()))
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Every path and method with its summary, description, parameters, body
/// and responses. Plain HTML with no scripts or remote assets, so it works
/// offline and under a strict content security policy.
pub fn render_html(doc: &Value) -> String {
    let title = doc["info"]["title"].as_str().unwrap_or("API");
    let mut html = String::new();
    let _ = write!(
        html,
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{t}</title>\
         <style>body{{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;line-height:1.5}}\
         code,pre{{background:#f4f4f4;padding:.1rem .3rem}}pre{{padding:.6rem;overflow:auto}}\
         .op{{border-top:1px solid #ddd;padding-top:1rem;margin-top:1.5rem}}.m{{font-weight:bold;text-transform:uppercase}}\
         table{{border-collapse:collapse}}td,th{{border:1px solid #ddd;padding:.2rem .5rem;text-align:left}}</style>\
         </head><body><h1>{t}</h1><p>{d}</p><p>Machine-readable: <a href=\"/openapi.json\">/openapi.json</a></p>",
        t = escape(title),
        d = escape(doc["info"]["description"].as_str().unwrap_or("")),
    );
    if let Some(paths) = doc["paths"].as_object() {
        for (path, item) in paths {
            let Some(methods) = item.as_object() else {
                continue;
            };
            for (method, op) in methods {
                if method == "parameters" {
                    continue;
                }
                let _ = write!(
                    html,
                    "<div class=\"op\"><h2><span class=\"m\">{m}</span> <code>{p}</code></h2><p><b>{s}</b></p><p>{d}</p>",
                    m = escape(method),
                    p = escape(path),
                    s = escape(op["summary"].as_str().unwrap_or("")),
                    d = escape(op["description"].as_str().unwrap_or("")),
                );
                if let Some(scopes) = op["security"][0]["bearer"].as_array() {
                    let scopes: Vec<&str> = scopes.iter().filter_map(Value::as_str).collect();
                    if !scopes.is_empty() {
                        let _ = write!(
                            html,
                            "<p>Scope: <code>{}</code></p>",
                            escape(&scopes.join(" "))
                        );
                    }
                }
                if let Some(params) = op["parameters"].as_array() {
                    html.push_str(
                        "<table><tr><th>parameter</th><th>in</th><th>description</th></tr>",
                    );
                    for param in params {
                        let _ = write!(
                            html,
                            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td></tr>",
                            escape(param["name"].as_str().unwrap_or("")),
                            escape(param["in"].as_str().unwrap_or("")),
                            escape(param["description"].as_str().unwrap_or("")),
                        );
                    }
                    html.push_str("</table>");
                }
                let body = &op["requestBody"]["content"]["application/json"]["schema"];
                if !body.is_null() {
                    let _ = write!(
                        html,
                        "<p>Request body:</p><pre>{}</pre>",
                        escape(
                            &serde_json::to_string_pretty(&resolve(doc, body)).unwrap_or_default()
                        )
                    );
                }
                if let Some(responses) = op["responses"].as_object() {
                    html.push_str("<table><tr><th>status</th><th>meaning</th></tr>");
                    for (status, response) in responses {
                        let _ = write!(
                            html,
                            "<tr><td>{}</td><td>{}</td></tr>",
                            escape(status),
                            escape(response["description"].as_str().unwrap_or("")),
                        );
                    }
                    html.push_str("</table>");
                }
                html.push_str("</div>");
            }
        }
    }
    html.push_str("</body></html>");
    html
}

/// Follows one level of `$ref` so the page shows the schema, not a pointer.
fn resolve(doc: &Value, schema: &Value) -> Value {
    if let Some(reference) = schema["$ref"].as_str() {
        let mut node = doc;
        for part in reference.trim_start_matches("#/").split('/') {
            node = &node[part];
        }
        return node.clone();
    }
    schema.clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_is_openapi_and_renders() {
        let doc = document();
        assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
        let html = render_html(&doc);
        for path in doc["paths"].as_object().unwrap().keys() {
            assert!(html.contains(&escape(path)), "{path} missing from the page");
        }
    }
}
