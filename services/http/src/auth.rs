//! The `Authenticated` extractor: a verified token's principal. The tenant of
//! every request comes from here and nowhere else.

use std::future::{ready, Ready};
use std::sync::Arc;

use actix_web::dev::Payload;
use actix_web::http::header::AUTHORIZATION;
use actix_web::{web, FromRequest, HttpMessage, HttpRequest};
use mnemo_auth::{bearer_token, AuthError, Principal, Verifier};

use crate::ApiError;

pub struct Authenticated(pub Principal);

impl FromRequest for Authenticated {
    type Error = ApiError;
    type Future = Ready<Result<Self, Self::Error>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(principal(req).map(Authenticated))
    }
}

/// The principal already verified for this request. Private, so nothing
/// but [`principal`] can put one in the request's extensions.
#[derive(Clone)]
struct Verified(Principal);

/// The request's principal: the token is verified once per request, however
/// many extractors (`Authenticated`, the subject path) ask for it.
pub(crate) fn principal(req: &HttpRequest) -> Result<Principal, ApiError> {
    if let Some(Verified(principal)) = req.extensions().get::<Verified>() {
        return Ok(principal.clone());
    }
    let principal = verify(req)?;
    req.extensions_mut().insert(Verified(principal.clone()));
    Ok(principal)
}

fn verify(req: &HttpRequest) -> Result<Principal, ApiError> {
    let verifier = req
        .app_data::<web::Data<Arc<Verifier>>>()
        .expect("the app registers a Verifier");
    let header = req
        .headers()
        .get(AUTHORIZATION)
        .ok_or(AuthError::MissingToken)?
        .to_str()
        .map_err(|_| AuthError::MalformedToken)?;
    let token = bearer_token(header)?;
    let principal = verifier.verify(token)?;
    tracing::Span::current().record("tenant", principal.tenant.as_str());
    Ok(principal)
}
