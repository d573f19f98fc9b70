//! The read endpoints: each reads the request (typed paths, queries),
//! checks the scope, hands a typed request to its use case in
//! [`crate::read`], [`crate::review`] or [`crate::report`], and shapes the
//! response. Search and context are in [`crate::search`].

use actix_web::{web, HttpRequest, HttpResponse};
use chrono::Utc;
use mnemo_auth::Scope;
use mnemo_domain::MemoryState;
use mnemo_http::context::event_metadata;
use mnemo_http::views::{EventView, MemoryView};
use mnemo_http::{ApiError, Authenticated, ErasurePath, MemoryPath, SubjectPath};
use serde_json::json;

use crate::asof::{
    self, AsOfQuery, ChangesQuery, ChangesRequest, ListAsOfRequest, MemoryAsOfRequest,
};
use crate::error::ReadError;
use crate::read::{
    self, AuditQuery, AuditRequest, ExportRequest, ListQuery, ListRequest, MemoryRequest,
    ReceiptRequest, SubjectsQuery, SubjectsRequest,
};
use crate::report::{self, ReportQuery, ReportRequest};
use crate::review::{self, ReviewListQuery, ReviewListRequest, StatsQuery, StatsRequest};
use crate::RetrieverState;

pub async fn get_memory(
    Authenticated(principal): Authenticated,
    MemoryPath(id): MemoryPath,
    query: web::Query<AsOfQuery>,
    state: web::Data<RetrieverState>,
) -> Result<HttpResponse, ApiError> {
    if let Some(at) = query.instant()? {
        let found = asof::memory_as_of(
            &state,
            MemoryAsOfRequest {
                caller: &principal,
                memory: id,
                at,
            },
        )
        .await?;
        // No ETag: a past version is no precondition for a write.
        return Ok(HttpResponse::Ok().json(found.to_json(at)));
    }
    let memory = read::get_memory(
        &state,
        MemoryRequest {
            caller: &principal,
            memory: id,
        },
    )
    .await?;
    Ok(HttpResponse::Ok()
        .insert_header(("ETag", format!("\"{}\"", memory.version)))
        .json(MemoryView::of(&memory)))
}

pub async fn history(
    Authenticated(principal): Authenticated,
    MemoryPath(id): MemoryPath,
    state: web::Data<RetrieverState>,
) -> Result<HttpResponse, ApiError> {
    let history = read::history(
        &state,
        MemoryRequest {
            caller: &principal,
            memory: id,
        },
    )
    .await?;
    Ok(HttpResponse::Ok().json(json!({
        "memory_id": id.to_string(),
        "subject": history.subject.as_str(),
        "versions": history.versions,
    })))
}

pub async fn list_memories(
    Authenticated(principal): Authenticated,
    SubjectPath(subject): SubjectPath,
    query: web::Query<ListQuery>,
    state: web::Data<RetrieverState>,
) -> Result<HttpResponse, ApiError> {
    principal.require_scope(Scope::MemoriesRead)?;
    let query = query.into_inner();
    if let Some(raw) = query.as_of.as_deref() {
        let at = asof::parse_instant("as_of", raw)?;
        let page = asof::list_as_of(
            &state,
            ListAsOfRequest {
                tenant: principal.tenant,
                subject,
                filter: query.filter()?,
                at,
            },
        )
        .await?;
        let views: Vec<_> = page.items.iter().map(|m| m.to_json(at)).collect();
        return Ok(
            HttpResponse::Ok().json(json!({"memories": views, "next_cursor": page.next_cursor}))
        );
    }
    let page = read::list_memories(
        &state,
        ListRequest {
            tenant: principal.tenant,
            subject,
            query,
        },
    )
    .await?;
    let views: Vec<_> = page.items.iter().map(MemoryView::of).collect();
    Ok(HttpResponse::Ok().json(json!({"memories": views, "next_cursor": page.next_cursor})))
}

pub async fn subject_changes(
    Authenticated(principal): Authenticated,
    SubjectPath(subject): SubjectPath,
    query: web::Query<ChangesQuery>,
    state: web::Data<RetrieverState>,
) -> Result<HttpResponse, ApiError> {
    principal.require_scope(Scope::MemoriesRead)?;
    let page = asof::changes(
        &state,
        ChangesRequest {
            tenant: principal.tenant,
            subject,
            query: query.into_inner(),
        },
    )
    .await?;
    let items: Vec<_> = page.items.iter().map(asof::Change::to_json).collect();
    Ok(HttpResponse::Ok().json(json!({"items": items, "next_cursor": page.next_cursor})))
}

pub async fn list_subjects(
    Authenticated(principal): Authenticated,
    query: web::Query<SubjectsQuery>,
    state: web::Data<RetrieverState>,
) -> Result<HttpResponse, ApiError> {
    principal.require_scope(Scope::MemoriesRead)?;
    let page = read::list_subjects(
        &state,
        SubjectsRequest {
            caller: &principal,
            query: query.into_inner(),
        },
    )
    .await?;
    let items: Vec<_> = page
        .items
        .iter()
        .map(|summary| {
            // Every state a row can hold, zero when the subject has none,
            // so a client reads a fixed shape (erased is never stored).
            let counts: serde_json::Map<String, serde_json::Value> = MemoryState::ALL
                .iter()
                .filter(|s| **s != MemoryState::Erased)
                .map(|state| {
                    let n = summary
                        .states
                        .iter()
                        .find(|(s, _)| s == state)
                        .map_or(0, |(_, n)| *n);
                    (state.as_str().to_owned(), json!(n))
                })
                .collect();
            json!({
                "subject": summary.subject.as_str(),
                "memories": counts,
                "last_activity": summary.last_activity,
            })
        })
        .collect();
    Ok(HttpResponse::Ok().json(json!({"items": items, "next_cursor": page.next_cursor})))
}

pub async fn export_subject(
    Authenticated(principal): Authenticated,
    SubjectPath(subject): SubjectPath,
    state: web::Data<RetrieverState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    principal.require_scope(Scope::GdprExport)?;
    let export = read::export_subject(
        &state,
        ExportRequest {
            tenant: principal.tenant.clone(),
            subject: subject.clone(),
            metadata: event_metadata(&req, &principal.actor),
        },
    )
    .await?;
    Ok(HttpResponse::Ok()
        .insert_header((
            "Content-Disposition",
            format!("attachment; filename=\"mnemo-export-{subject}.json\""),
        ))
        .json(json!({
            "tenant": principal.tenant.as_str(),
            "subject": subject.as_str(),
            "generated_at": Utc::now(),
            "counts": export.counts,
            "messages": export.messages,
            "memories": export.memories,
            "erasures": export.erasures,
        })))
}

pub async fn audit(
    Authenticated(principal): Authenticated,
    query: web::Query<AuditQuery>,
    state: web::Data<RetrieverState>,
) -> Result<HttpResponse, ApiError> {
    principal.require_scope(Scope::AuditRead)?;
    let page = read::audit(
        &state,
        AuditRequest {
            caller: &principal,
            query: query.into_inner(),
        },
    )
    .await?;
    let views: Vec<_> = page.items.iter().map(EventView::of).collect();
    Ok(HttpResponse::Ok().json(json!({"events": views, "next_cursor": page.next_cursor})))
}

pub async fn erasure_receipt(
    Authenticated(principal): Authenticated,
    ErasurePath(id): ErasurePath,
    state: web::Data<RetrieverState>,
) -> Result<HttpResponse, ApiError> {
    // Whoever may erase may follow an erasure, and so may an auditor.
    if !principal.has_scope(Scope::GdprErase) {
        principal.require_scope(Scope::AuditRead)?;
    }
    let erasure = read::erasure_receipt(
        &state,
        ReceiptRequest {
            caller: &principal,
            erasure: id,
        },
    )
    .await?;
    Ok(HttpResponse::Ok().json(json!({
        "erasure_id": erasure.id.to_string(),
        "subject": erasure.subject,
        "status": if erasure.receipt.is_some() { "completed" } else { "pending" },
        "requested_at": erasure.requested_at,
        "requested_by": erasure.requested_by,
        "receipt": erasure.receipt,
    })))
}

pub async fn consolidation_report(
    Authenticated(principal): Authenticated,
    query: web::Query<ReportQuery>,
    state: web::Data<RetrieverState>,
) -> Result<HttpResponse, ApiError> {
    principal.require_scope(Scope::AuditRead)?;
    // A subject-bound token is about one subject: its report is that
    // subject's, as its audit log is.
    let subject = principal.visible_subject(None)?;
    let (days, report) = report::consolidation_report(
        &state,
        ReportRequest {
            tenant: principal.tenant.clone(),
            subject: subject.clone(),
            days: query.days,
        },
    )
    .await?;
    Ok(HttpResponse::Ok().json(json!({
        "tenant": principal.tenant.as_str(),
        "subject": subject.as_ref().map(|s| s.as_str()),
        "days": days,
        "pricing": {
            "input_per_million": state.llm_pricing.input_per_million,
            "output_per_million": state.llm_pricing.output_per_million,
        },
        "report": report,
    })))
}

pub async fn get_profile(
    Authenticated(principal): Authenticated,
    SubjectPath(subject): SubjectPath,
    query: web::Query<AsOfQuery>,
    state: web::Data<RetrieverState>,
) -> Result<HttpResponse, ApiError> {
    principal.require_scope(Scope::MemoriesRead)?;
    if let Some(at) = query.instant()? {
        let (profile, cause) = asof::profile_as_of(&state, &principal.tenant, &subject, at)
            .await?
            .ok_or(ReadError::ProfileNotFound)?;
        let mut body = profile.to_json(&subject);
        body["as_of"] = json!({"at": at, "event": cause.to_json()});
        return Ok(HttpResponse::Ok().json(body));
    }
    let profile = review::latest_profile(&state, &principal.tenant, &subject)
        .await?
        .ok_or(ReadError::ProfileNotFound)?;
    Ok(HttpResponse::Ok().json(profile.to_json(&subject)))
}

pub async fn list_reviews(
    Authenticated(principal): Authenticated,
    query: web::Query<ReviewListQuery>,
    state: web::Data<RetrieverState>,
) -> Result<HttpResponse, ApiError> {
    principal.require_scope(Scope::MemoriesReview)?;
    let page = review::list_reviews(
        &state,
        ReviewListRequest {
            caller: &principal,
            query: query.into_inner(),
        },
    )
    .await?;
    Ok(HttpResponse::Ok().json(json!({"reviews": page.items, "next_cursor": page.next_cursor})))
}

pub async fn review_stats(
    Authenticated(principal): Authenticated,
    query: web::Query<StatsQuery>,
    state: web::Data<RetrieverState>,
) -> Result<HttpResponse, ApiError> {
    principal.require_scope(Scope::MemoriesReview)?;
    let stats = review::review_stats(
        &state,
        StatsRequest {
            caller: &principal,
            query: query.into_inner(),
        },
    )
    .await?;
    Ok(HttpResponse::Ok().json(stats))
}
