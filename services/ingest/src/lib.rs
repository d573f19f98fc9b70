//! The ingest service: the write side of the API. It authenticates,
//! validates, scrubs PII by tenant policy, seals subject content and appends
//! events in one transaction, then answers. Nothing slow (embedding, LLM,
//! consolidation) happens here: those follow from the log via the bus.
//!
//! Invariant: PII is scrubbed before an event is appended; every stored
//! piece of subject text went through [`scrub::Scrubbers`]. A request a
//! quota or the backlog ceiling refuses is refused before anything is
//! appended ([`IngestState::admit`]).

pub mod error;
pub mod handlers;
mod input;
pub mod quota;
pub mod review;
pub mod scrub;
pub mod write;

use std::sync::Arc;

use actix_web::http::StatusCode;
use actix_web::web;
use mnemo_config::Limits;
use mnemo_domain::{EventType, MemoryState, SubjectId, TenantId};
use mnemo_event_store::sealed::SealedLog;
use mnemo_http::backlog::Backlog;
use mnemo_http::pacing::Pace;
use mnemo_http::{ApiError, CountedLog};
use mnemo_read_model::{MemoryReadModel, SubjectFilter};
use mnemo_telemetry::Metrics;

pub use error::{InputError, WriteError};
pub use scrub::Scrubbers;

/// What the ingest handlers need.
pub struct IngestState {
    pub log: SealedLog,
    pub scrubbers: Scrubbers,
    pub limits: Limits,
    pub metrics: Arc<Metrics>,
    /// Messages past its ceiling are refused with 503 before the append.
    pub backlog: Arc<Backlog>,
    pub quotas: quota::Quotas,
    /// The memory counts the `memories_per_subject` quota is checked
    /// against.
    pub read_model: Arc<dyn MemoryReadModel>,
}

impl IngestState {
    /// Lets a write request through, or refuses it before anything is
    /// appended. For messages: the global backlog ceiling (503), then the
    /// tenant's pace, its share of what the consolidator's lag sets (the
    /// request waits its turn, or 503 `slow_down` when the wait would be
    /// too long); then the tenant's quota (429), which gives the pace back
    /// when it refuses. Every refusal answers `Retry-After`.
    pub async fn admit(&self, tenant: &TenantId, messages: u64) -> Result<(), ApiError> {
        if messages > 0 {
            if let Some(waiting) = self.backlog.over_ceiling().await {
                let ceiling = self.backlog.limits().ceiling;
                return Err(self.refused(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "backlog_full",
                    format!(
                        "{waiting} messages wait for consolidation, more than the {ceiling} this deployment takes on; retry later"
                    ),
                    5,
                    ("backlog_ceiling", ceiling),
                ));
            }
        }
        let pace = self.backlog.pace(tenant, messages).await;
        if let Pace::Refuse { retry_after, rate } = pace {
            let seconds = retry_after.as_secs_f64().ceil() as u64;
            return Err(self.refused(
                StatusCode::SERVICE_UNAVAILABLE,
                "slow_down",
                format!(
                    "consolidation trails ingest, which admits {rate:.0} messages a second now; \
                     these {messages} would wait {seconds} s, so retry later or post fewer at once"
                ),
                seconds,
                // An integer, as every limit_value is (the rate is at least 1).
                ("slowdown", rate.round() as u64),
            ));
        }
        let now = chrono::Utc::now();
        if messages > 0 {
            if let Err(error) = self.read_day(tenant, now).await {
                self.backlog.unpace(tenant, messages);
                return Err(error);
            }
        }
        if let Err(refusal) = self.quotas.admit(tenant, messages, now) {
            // Refused after all: the tenant's next requests do not wait
            // for these.
            self.backlog.unpace(tenant, messages);
            return Err(self.refuse(refusal));
        }
        if let Pace::Wait(wait) = pace {
            // Held, not refused: the client sees the pipeline's speed as a
            // slower answer. Nothing is appended before the wait ends, so a
            // client that gives up loses nothing it was told was accepted.
            self.metrics.ingest_paced_requests_total.inc();
            tokio::time::sleep(wait).await;
        }
        Ok(())
    }

    /// Reads the tenant's messages of the day from the log, when its
    /// `messages_per_day` quota counts them and the figure kept here is
    /// stale: a restarted process, or another replica, counts what was
    /// accepted before it.
    async fn read_day(
        &self,
        tenant: &TenantId,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<(), ApiError> {
        let today = now.date_naive();
        if !self.quotas.day_needs_reading(tenant, today) {
            return Ok(());
        }
        let midnight = today.and_time(chrono::NaiveTime::MIN).and_utc();
        let count = self
            .log
            .store()
            .count_since(tenant, EventType::MessageReceived.as_str(), midnight)
            .await
            .map_err(ApiError::unavailable)?;
        self.quotas.remember_day(tenant, today, count);
        Ok(())
    }

    /// Lets a write that grows the tenant's log through, or refuses it:
    /// 507 when the data dir's disk is below its floor of free space
    /// (every tenant), 429 when the tenant's events take its
    /// `storage_bytes` already.
    /// Asked before [`IngestState::admit`], so a refused batch of messages
    /// is not counted against the day; once the write is admitted,
    /// [`IngestState::count_storage`] adds its text to the figure.
    pub async fn admit_storage(&self, tenant: &TenantId) -> Result<(), ApiError> {
        if let Some(free) = self.backlog.disk_short().await {
            let floor = self.backlog.limits().min_free_disk;
            // 507: the request is fine and the server cannot store it; a
            // retry helps only once an operator has made room.
            return Err(self.refused(
                StatusCode::INSUFFICIENT_STORAGE,
                "insufficient_storage",
                format!(
                    "the server's disk has {free} bytes free, under the {floor} it keeps; \
                     nothing was stored, retry once it has room"
                ),
                60,
                ("min_free_disk_bytes", floor),
            ));
        }
        let Some(limit) = self.quotas.policy(tenant).storage_bytes else {
            return Ok(());
        };
        let used = match self.quotas.cached_storage(tenant) {
            Some(bytes) => bytes,
            None => {
                let bytes = self
                    .log
                    .store()
                    .stored_bytes(tenant)
                    .await
                    .map_err(ApiError::unavailable)?;
                self.quotas.remember_storage(tenant, bytes);
                bytes
            }
        };
        if used >= limit {
            return Err(self.refuse(quota::Refusal::StorageBytes { limit }));
        }
        Ok(())
    }

    /// Counts an admitted write's text (about what it adds to the log)
    /// against the tenant's storage figure until the log is read again.
    pub fn count_storage(&self, tenant: &TenantId, adds: usize) {
        if self.quotas.policy(tenant).storage_bytes.is_some() {
            self.quotas.add_storage(tenant, adds as u64);
        }
    }

    /// Lets a new memory of `subject` through, or refuses it (429) when
    /// the subject has its `memories_per_subject` active memories already.
    pub async fn admit_memory(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<(), ApiError> {
        let Some(limit) = self.quotas.policy(tenant).memories_per_subject else {
            return Ok(());
        };
        let filter = SubjectFilter {
            only: Some(subject.clone()),
            limit: 1,
            ..Default::default()
        };
        let summaries = self
            .read_model
            .list_subjects(tenant, &filter)
            .await
            .map_err(ApiError::unavailable)?;
        let active = summaries
            .iter()
            .filter(|summary| &summary.subject == subject)
            .flat_map(|summary| &summary.states)
            .filter(|(state, _)| *state == MemoryState::Active)
            .map(|(_, count)| *count)
            .sum::<u64>();
        if active >= limit {
            return Err(self.refuse(quota::Refusal::MemoriesPerSubject { limit }));
        }
        Ok(())
    }

    /// The 429 for a quota's refusal.
    fn refuse(&self, refusal: quota::Refusal) -> ApiError {
        let limit = refusal.limit_name();
        self.refused(
            StatusCode::TOO_MANY_REQUESTS,
            "quota_exceeded",
            format!(
                "the tenant's {limit} quota ({}) is used up; retry after {} s",
                refusal.limit(),
                refusal.retry_after()
            ),
            refusal.retry_after(),
            (limit, refusal.limit()),
        )
    }

    /// A refusal before the append: counted in
    /// `mnemo_ingest_refused_total` under the limit it names, with
    /// `Retry-After` and the limit and its value in the body.
    fn refused(
        &self,
        status: StatusCode,
        code: &'static str,
        message: String,
        retry_after: u64,
        (limit, value): (&'static str, u64),
    ) -> ApiError {
        self.metrics
            .ingest_refused_total
            .with_label_values(&[limit])
            .inc();
        ApiError::new(status, code, message).retry_after(
            retry_after,
            serde_json::json!({"limit": limit, "limit_value": value}),
        )
    }

    /// The log to append through: it counts what it appends.
    pub fn events(&self) -> CountedLog<'_> {
        CountedLog::new(&self.log, &self.metrics)
    }
}

/// The routes this service serves, for the OpenAPI coverage test.
pub const ROUTES: &[(&str, &str)] = &[
    ("POST", "/v1/subjects/{subject}/messages"),
    ("POST", "/v1/subjects/{subject}/memories"),
    ("PATCH", "/v1/memories/{id}"),
    ("DELETE", "/v1/memories/{id}"),
    ("DELETE", "/v1/subjects/{subject}"),
    ("POST", "/v1/subjects/{subject}/consolidate"),
    ("POST", "/v1/review/{id}"),
];

pub fn configure(state: Arc<IngestState>) -> impl Fn(&mut web::ServiceConfig) + Clone {
    move |cfg: &mut web::ServiceConfig| {
        cfg.app_data(web::Data::from(state.clone()))
            .route(
                "/v1/subjects/{subject}/messages",
                web::post().to(handlers::post_messages),
            )
            .route(
                "/v1/subjects/{subject}/memories",
                web::post().to(handlers::create_memory),
            )
            .route(
                "/v1/memories/{id}",
                web::patch().to(handlers::revise_memory),
            )
            .route(
                "/v1/memories/{id}",
                web::delete().to(handlers::delete_memory),
            )
            .route(
                "/v1/subjects/{subject}",
                web::delete().to(handlers::erase_subject),
            )
            .route(
                "/v1/subjects/{subject}/consolidate",
                web::post().to(handlers::request_consolidation),
            )
            .route("/v1/review/{id}", web::post().to(handlers::resolve_review));
    }
}
