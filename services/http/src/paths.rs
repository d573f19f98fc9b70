//! Typed path segments: each route's ids are parsed once, here, so a bad id
//! is a 400 `invalid_id` before any handler runs, and a `{subject}` is
//! checked against the token's subject binding in the same step.

use std::future::{ready, Ready};

use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest};
use mnemo_domain::{ErasureId, MemoryId, SubjectId};
use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::ApiError;

#[derive(Deserialize)]
struct SubjectSegment {
    subject: String,
}

#[derive(Deserialize)]
struct IdSegment {
    id: String,
}

/// The route's segments, fully percent-decoded as `web::Path` gives them.
fn segments<T: DeserializeOwned>(req: &HttpRequest) -> Result<T, ApiError> {
    req.match_info()
        .load()
        .map_err(|e| ApiError::bad_request("invalid_path", e.to_string()))
}

/// `{subject}`, parsed, for a token that may act on it: a token bound to
/// another subject is refused with 403 `subject_forbidden`. The caller is
/// authenticated first (401 before any look at the path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubjectPath(pub SubjectId);

impl SubjectPath {
    pub fn into_inner(self) -> SubjectId {
        self.0
    }
}

impl FromRequest for SubjectPath {
    type Error = ApiError;
    type Future = Ready<Result<Self, Self::Error>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready((|| {
            let principal = crate::auth::principal(req)?;
            let SubjectSegment { subject } = segments(req)?;
            let subject = SubjectId::parse(subject)?;
            principal.require_subject(&subject)?;
            Ok(SubjectPath(subject))
        })())
    }
}

macro_rules! id_path {
    ($(#[$meta:meta])* $name:ident($id:ty)) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $name(pub $id);

        impl $name {
            pub fn into_inner(self) -> $id {
                self.0
            }
        }

        impl FromRequest for $name {
            type Error = ApiError;
            type Future = Ready<Result<Self, Self::Error>>;

            fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
                ready(
                    segments(req)
                        .and_then(|IdSegment { id }| Ok($name(<$id>::parse(&id)?))),
                )
            }
        }
    };
}

id_path!(
    /// `{id}` of a memory route. Whether the token may see the memory is
    /// known only once its subject is read: the use case checks it then.
    MemoryPath(MemoryId)
);

id_path!(
    /// `{id}` of a review route; like a memory, checked against the token's
    /// binding once the review's subject is read.
    ReviewPath(MemoryId)
);

id_path!(
    /// `{id}` of an erasure receipt.
    ErasurePath(ErasureId)
);

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use actix_web::http::StatusCode;
    use actix_web::{test, web, App, HttpResponse};
    use mnemo_auth::{
        JwtAlgorithm, MintRequest, Minter, Scope, SecretSlice, Verifier, VerifierConfig,
    };
    use mnemo_domain::TenantId;
    use serde_json::Value;

    use super::*;
    use crate::Authenticated;

    const SECRET: &[u8] = b"a test secret of at least 32 bytes!";

    fn verifier() -> web::Data<Arc<Verifier>> {
        let verifier = Verifier::new(VerifierConfig {
            hs256_secret: Some(SecretSlice::from(SECRET.to_vec())),
            allowed_algorithms: vec![JwtAlgorithm::HS256],
            ..Default::default()
        })
        .unwrap();
        web::Data::new(Arc::new(verifier))
    }

    fn token(subject: Option<&str>) -> String {
        Minter::hs256(SECRET, "", "")
            .mint(&MintRequest {
                tenant: TenantId::parse("acme").unwrap(),
                actor: "agent-1".into(),
                scopes: vec![Scope::MemoriesRead],
                subject: subject.map(|s| SubjectId::parse(s).unwrap()),
                ttl: Duration::from_secs(60),
            })
            .unwrap()
    }

    async fn subject_handler(
        Authenticated(principal): Authenticated,
        SubjectPath(subject): SubjectPath,
    ) -> HttpResponse {
        HttpResponse::Ok().body(format!("{}/{subject}", principal.tenant))
    }

    async fn memory_handler(MemoryPath(id): MemoryPath) -> HttpResponse {
        HttpResponse::Ok().body(id.to_string())
    }

    async fn review_handler(ReviewPath(id): ReviewPath) -> HttpResponse {
        HttpResponse::Ok().body(id.to_string())
    }

    async fn erasure_handler(ErasurePath(id): ErasurePath) -> HttpResponse {
        HttpResponse::Ok().body(id.to_string())
    }

    /// Calls `uri` on a tiny app with one route per extractor.
    async fn call(uri: &str, token: Option<&str>) -> (StatusCode, String) {
        let app = test::init_service(
            App::new()
                .app_data(verifier())
                .route("/subjects/{subject}", web::get().to(subject_handler))
                .route("/memories/{id}", web::get().to(memory_handler))
                .route("/review/{id}", web::get().to(review_handler))
                .route("/erasures/{id}", web::get().to(erasure_handler)),
        )
        .await;
        let mut request = test::TestRequest::get().uri(uri);
        if let Some(token) = token {
            request = request.insert_header(("Authorization", format!("Bearer {token}")));
        }
        let response = test::call_service(&app, request.to_request()).await;
        let status = response.status();
        let body = test::read_body(response).await;
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    fn error_code(body: &str) -> String {
        let body: Value = serde_json::from_str(body).unwrap();
        body["error"]["code"].as_str().unwrap().to_owned()
    }

    #[actix_web::test]
    async fn subject_path_parses_the_subject() {
        let (status, body) = call("/subjects/alice", Some(&token(None))).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, "acme/alice");
        // Percent-decoded first, as `web::Path<String>` was.
        let (status, body) = call("/subjects/al%69ce", Some(&token(None))).await;
        assert_eq!((status, body.as_str()), (StatusCode::OK, "acme/alice"));
    }

    #[actix_web::test]
    async fn subject_path_refuses_a_bad_subject_id() {
        for uri in ["/subjects/bad%20subject", "/subjects/alice@example.com"] {
            let (status, body) = call(uri, Some(&token(None))).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{uri}");
            assert_eq!(error_code(&body), "invalid_id", "{uri}");
        }
    }

    #[actix_web::test]
    async fn subject_path_refuses_another_subject_under_a_bound_token() {
        let alice = token(Some("alice"));
        let (status, body) = call("/subjects/bob", Some(&alice)).await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        assert_eq!(error_code(&body), "subject_forbidden");
        let (status, body) = call("/subjects/alice", Some(&alice)).await;
        assert_eq!((status, body.as_str()), (StatusCode::OK, "acme/alice"));
    }

    #[actix_web::test]
    async fn subject_path_authenticates_before_reading_the_path() {
        let (status, body) = call("/subjects/bad%20subject", None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(error_code(&body), "missing_token");
    }

    #[actix_web::test]
    async fn memory_path_parses_the_id() {
        let id = MemoryId::new();
        let (status, body) = call(&format!("/memories/{id}"), None).await;
        assert_eq!((status, body), (StatusCode::OK, id.to_string()));
        let (status, body) = call("/memories/not-a-uuid", None).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(error_code(&body), "invalid_id");
    }

    #[actix_web::test]
    async fn review_path_parses_the_id() {
        let id = MemoryId::new();
        let (status, body) = call(&format!("/review/{id}"), None).await;
        assert_eq!((status, body), (StatusCode::OK, id.to_string()));
        let (status, body) = call("/review/not-a-uuid", None).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(error_code(&body), "invalid_id");
    }

    #[actix_web::test]
    async fn erasure_path_parses_the_id() {
        let id = ErasureId::new();
        let (status, body) = call(&format!("/erasures/{id}"), None).await;
        assert_eq!((status, body), (StatusCode::OK, id.to_string()));
        let (status, body) = call("/erasures/not-a-uuid", None).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(error_code(&body), "invalid_id");
    }
}
