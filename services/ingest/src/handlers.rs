//! The write endpoints: each reads the request (typed paths, JSON bodies,
//! headers), checks the scope, hands a typed request to its use case in
//! [`crate::write`] or [`crate::review`], and shapes the response.

use actix_web::{web, HttpRequest, HttpResponse, HttpResponseBuilder};
use mnemo_auth::Scope;
use mnemo_domain::{Memory, MemoryKind};
use mnemo_http::context::event_metadata;
use mnemo_http::views::MemoryView;
use mnemo_http::{ApiError, Authenticated, MemoryPath, ReviewPath, SubjectPath};
use serde::Deserialize;
use serde_json::json;

use crate::review::{self, ResolveInput, ResolveRequest};
use crate::write::{
    self, ConsolidationRequest, DeleteRequest, ErasureRequest, MessageInput, MessagesRequest,
    NewMemoryRequest, ReviseRequest,
};
use crate::IngestState;

/// An optional JSON body (DELETE, POST without parameters): empty means
/// the defaults; when present it is checked like any other body.
fn optional_json<T: Default + serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    serde_json::from_slice(body).map_err(|e| {
        if e.is_syntax() || e.is_eof() {
            ApiError::bad_request(
                "invalid_json",
                format!("request body is not valid JSON: {e}"),
            )
        } else {
            ApiError::bad_request(
                "invalid_body",
                format!("request body does not match the schema: {e}"),
            )
        }
    })
}

/// The version a write is against, from `If-Match` (an ETag, quoted or not)
/// or the body; both given must agree.
fn stated_version(req: &HttpRequest, from_body: Option<u64>) -> Result<Option<u64>, ApiError> {
    let from_header = match req.headers().get("if-match") {
        Some(value) => Some(
            value
                .to_str()
                .ok()
                .map(|v| v.trim().trim_matches('"'))
                .and_then(|v| v.parse::<u64>().ok())
                .ok_or_else(|| {
                    ApiError::bad_request("invalid_if_match", "If-Match must be a version number")
                })?,
        ),
        None => None,
    };
    match (from_header, from_body) {
        (Some(a), Some(b)) if a != b => Err(ApiError::bad_request(
            "conflicting_versions",
            "If-Match and expected_version disagree",
        )),
        (header, body) => Ok(header.or(body)),
    }
}

fn memory_response(response: &mut HttpResponseBuilder, memory: &Memory) -> HttpResponse {
    response
        .insert_header(("ETag", format!("\"{}\"", memory.version)))
        .json(MemoryView::of(memory))
}

// ---------------------------------------------------------------- messages

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MessageBatch {
    pub messages: Vec<MessageInput>,
}

pub async fn post_messages(
    Authenticated(principal): Authenticated,
    SubjectPath(subject): SubjectPath,
    body: web::Json<MessageBatch>,
    state: web::Data<IngestState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    principal.require_scope(Scope::MemoriesWrite)?;
    let body = body.into_inner();
    state.admit_storage(&principal.tenant).await?;
    state
        .admit(&principal.tenant, body.messages.len() as u64)
        .await?;
    let text: usize = body.messages.iter().map(|m| m.content.len()).sum();
    let tenant = principal.tenant.clone();
    let accepted = write::ingest_messages(
        &state,
        MessagesRequest {
            metadata: event_metadata(&req, &principal.actor),
            tenant: principal.tenant,
            subject,
            messages: body.messages,
        },
    )
    .await?;
    state.count_storage(&tenant, text);
    let fresh = accepted.iter().filter(|m| !m.event.duplicate).count();
    let events: Vec<_> = accepted
        .iter()
        .map(|m| {
            json!({"id": m.message_id, "event_id": m.event.event_id.to_string(), "position": m.event.global_position, "duplicate": m.event.duplicate})
        })
        .collect();
    Ok(HttpResponse::Accepted().json(json!({
        "accepted": fresh,
        "duplicates": events.len() - fresh,
        "events": events,
    })))
}

// ---------------------------------------------------------------- memories

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewMemoryInput {
    pub content: String,
    pub kind: MemoryKind,
    #[serde(default)]
    pub tags: Vec<String>,
    pub confidence: Option<f32>,
    pub importance: Option<f32>,
    pub session: Option<String>,
    pub agent: Option<String>,
    /// Ids of the subject's messages (as posted) this memory comes from:
    /// its provenance.
    #[serde(default)]
    pub sources: Vec<String>,
}

pub async fn create_memory(
    Authenticated(principal): Authenticated,
    SubjectPath(subject): SubjectPath,
    body: web::Json<NewMemoryInput>,
    state: web::Data<IngestState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    principal.require_scope(Scope::MemoriesWrite)?;
    state.admit_storage(&principal.tenant).await?;
    state.admit_memory(&principal.tenant, &subject).await?;
    state.admit(&principal.tenant, 0).await?;
    let input = body.into_inner();
    let tenant = principal.tenant.clone();
    let text = input.content.len();
    let memory = write::create_memory(
        &state,
        NewMemoryRequest {
            metadata: event_metadata(&req, &principal.actor),
            tenant: principal.tenant,
            subject,
            content: input.content,
            kind: input.kind,
            tags: input.tags,
            confidence: input.confidence,
            importance: input.importance,
            session: input.session,
            agent: input.agent,
            sources: input.sources,
        },
    )
    .await?;
    state.count_storage(&tenant, text);
    Ok(memory_response(
        HttpResponse::Created().insert_header(("Location", format!("/v1/memories/{}", memory.id))),
        &memory,
    ))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviseInput {
    pub content: Option<String>,
    pub kind: Option<MemoryKind>,
    pub tags: Option<Vec<String>>,
    pub confidence: Option<f32>,
    pub importance: Option<f32>,
    pub reason: Option<String>,
    pub expected_version: Option<u64>,
}

pub async fn revise_memory(
    Authenticated(principal): Authenticated,
    MemoryPath(id): MemoryPath,
    body: web::Json<ReviseInput>,
    state: web::Data<IngestState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    state.admit_storage(&principal.tenant).await?;
    state.admit(&principal.tenant, 0).await?;
    let input = body.into_inner();
    let text = input.content.as_ref().map_or(0, String::len);
    let memory = write::revise_memory(
        &state,
        ReviseRequest {
            caller: &principal,
            memory: id,
            content: input.content,
            kind: input.kind,
            tags: input.tags,
            confidence: input.confidence,
            importance: input.importance,
            reason: input.reason,
            expected_version: stated_version(&req, input.expected_version)?,
            metadata: event_metadata(&req, &principal.actor),
        },
    )
    .await?;
    state.count_storage(&principal.tenant, text);
    Ok(memory_response(&mut HttpResponse::Ok(), &memory))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeleteInput {
    pub reason: Option<String>,
}

pub async fn delete_memory(
    Authenticated(principal): Authenticated,
    MemoryPath(id): MemoryPath,
    body: web::Bytes,
    state: web::Data<IngestState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let input: DeleteInput = optional_json(&body)?;
    state.admit(&principal.tenant, 0).await?;
    let memory = write::delete_memory(
        &state,
        DeleteRequest {
            caller: &principal,
            memory: id,
            reason: input.reason,
            metadata: event_metadata(&req, &principal.actor),
        },
    )
    .await?;
    Ok(memory_response(&mut HttpResponse::Ok(), &memory))
}

// ---------------------------------------------------------------- consolidation

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConsolidateInput {
    pub session: Option<String>,
}

/// Asks the consolidator to consolidate the subject's waiting messages now.
pub async fn request_consolidation(
    Authenticated(principal): Authenticated,
    SubjectPath(subject): SubjectPath,
    body: web::Bytes,
    state: web::Data<IngestState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    principal.require_scope(Scope::MemoriesWrite)?;
    let input: ConsolidateInput = optional_json(&body)?;
    state.admit(&principal.tenant, 0).await?;
    let event_id = write::request_consolidation(
        &state,
        ConsolidationRequest {
            metadata: event_metadata(&req, &principal.actor),
            tenant: principal.tenant,
            subject,
            session: input.session,
        },
    )
    .await?;
    Ok(HttpResponse::Accepted()
        .json(json!({"status": "requested", "event_id": event_id.to_string()})))
}

// ---------------------------------------------------------------- erasure

pub async fn erase_subject(
    Authenticated(principal): Authenticated,
    SubjectPath(subject): SubjectPath,
    state: web::Data<IngestState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    principal.require_scope(Scope::GdprErase)?;
    let erasure_id = write::request_erasure(
        &state,
        ErasureRequest {
            metadata: event_metadata(&req, &principal.actor),
            tenant: principal.tenant,
            subject,
        },
    )
    .await?;
    let receipt = format!("/v1/erasures/{erasure_id}");
    Ok(HttpResponse::Accepted()
        .insert_header(("Location", receipt.clone()))
        .json(json!({
            "erasure_id": erasure_id.to_string(),
            "status": "pending",
            "receipt": receipt,
        })))
}

// ---------------------------------------------------------------- review

pub async fn resolve_review(
    Authenticated(principal): Authenticated,
    ReviewPath(review_id): ReviewPath,
    body: web::Json<ResolveInput>,
    state: web::Data<IngestState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let resolved = review::resolve_review(
        &state,
        ResolveRequest {
            caller: &principal,
            review: review_id,
            decision: body.into_inner(),
            metadata: event_metadata(&req, &principal.actor),
        },
    )
    .await?;
    let (request, resolution) = (&resolved.request, &resolved.resolution);
    let recorded = &resolved.resolved.recorded;
    Ok(HttpResponse::Ok().json(json!({
        "review": {
            "id": resolved.review_id.to_string(),
            "subject": resolved.subject.as_str(),
            "decision": resolution.decision.as_str(),
            "action": request.action.as_str(),
            "target": request.target.map(|t| t.to_string()),
            "proposed": request.proposed.as_text(),
            "edited": resolution.edited.as_ref().and_then(|t| t.as_text()),
            "note": resolution.note.as_ref().and_then(|t| t.as_text()),
            "resolved_by": recorded.metadata.actor,
            "resolved_at": recorded.recorded_at,
        },
        "memory_id": resolution.memory_id.map(|id| id.to_string()),
        "memory": resolved.memory.as_ref().map(MemoryView::of),
    })))
}

#[cfg(test)]
mod tests {
    use actix_web::test::TestRequest;

    use super::*;

    #[test]
    fn stated_version_comes_from_if_match_or_the_body() {
        let none = TestRequest::default().to_http_request();
        assert_eq!(stated_version(&none, None).unwrap(), None);
        assert_eq!(stated_version(&none, Some(3)).unwrap(), Some(3));
        let quoted = TestRequest::default()
            .insert_header(("If-Match", "\"4\""))
            .to_http_request();
        assert_eq!(stated_version(&quoted, None).unwrap(), Some(4));
        assert_eq!(stated_version(&quoted, Some(4)).unwrap(), Some(4));
        assert_eq!(
            stated_version(&quoted, Some(5)).unwrap_err().code(),
            "conflicting_versions"
        );
        let weak = TestRequest::default()
            .insert_header(("If-Match", "W/\"abc\""))
            .to_http_request();
        assert_eq!(
            stated_version(&weak, None).unwrap_err().code(),
            "invalid_if_match"
        );
    }
}
