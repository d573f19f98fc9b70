//! PostgreSQL adapter of the event log (schema in
//! `migrations/postgres/0001_events.sql`, applied by `mnemo_pg::migrate`).
//!
//! Tenant calls run in a tenant-scoped transaction of the application role
//! ([`TenantPool::begin`]), so row-level security filters them a second
//! time after the `WHERE tenant_id = ...` of every query.
//!
//! `read_all` and `head_position` read across tenants. They go through the
//! system role's pool ([`SystemPool`]): the only role with a policy that
//! shows every tenant's events, and only for `SELECT`. That access is a
//! separate login rather than a setting or a function a tenant session
//! could call, so a bug in tenant code cannot reach it.
//!
//! Gap-free relay reads: positions are derived from transaction ids (see
//! the migration), and `read_all` returns only rows whose transaction is
//! older than the oldest transaction still running
//! (`tx_id < pg_snapshot_xmin(pg_current_snapshot())`). Every transaction
//! that may still commit has a larger xid, hence larger positions, than any
//! event returned, so a reader that moves its checkpoint past what it read
//! never skips an event. The horizon is cluster-wide: a long transaction in
//! any database of the server holds the relay back until it ends.
//!
//! `wait_for_append` listens on the `mnemo_events` channel (a statement
//! trigger notifies at commit), so a relay in another process wakes as soon
//! as an append commits. It still polls the head now and then: an event can
//! become readable without a notification, when an older unrelated
//! transaction ends.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use mnemo_domain::{EventId, EventMetadata, NewEvent, RecordedEvent, SubjectId, TenantId};
use mnemo_pg::{PgError, SystemPool, TenantPool};
use sqlx::postgres::{PgListener, PgRow};
use sqlx::types::Json;
use sqlx::{PgConnection, Row};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::{
    AppendResult, AppendedEvent, EventQuery, EventStore, EventStoreError, ExpectedVersion,
    StreamAppend,
};

/// How often `wait_for_append` looks at the head when nothing woke it.
const DEFAULT_HEAD_POLL: Duration = Duration::from_millis(500);

/// The channel the `events_notify` trigger notifies.
const CHANNEL: &str = "mnemo_events";

/// Rows below this horizon belong to finished transactions only.
const SAFE: &str = "tx_id < pg_snapshot_xmin(pg_current_snapshot())";

const COLUMNS: &str = "global_position, event_id, tenant_id, stream_id, stream_version, \
     subject_id, event_type, schema_version, payload, metadata, recorded_at";

#[derive(Clone)]
pub struct PostgresEventStore {
    tenant: TenantPool,
    system: SystemPool,
    /// Moved by this instance's own appends.
    head: Arc<watch::Sender<i64>>,
    /// Bumped on every notification of a commit, from any process.
    notified: Arc<watch::Sender<u64>>,
    listener: Arc<OnceLock<AbortOnDrop>>,
    head_poll: Duration,
}

/// The listener task lives as long as the store (and its clones).
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Forwards notifications until the task is aborted, reconnecting after a
/// failure. It holds one connection of the system pool.
async fn listen(system: SystemPool, notified: Arc<watch::Sender<u64>>) {
    loop {
        if system.pool().is_closed() {
            return;
        }
        match PgListener::connect_with(system.pool()).await {
            Ok(mut listener) => match listener.listen(CHANNEL).await {
                Ok(()) => loop {
                    match listener.recv().await {
                        Ok(_) => notified.send_modify(|count| *count = count.wrapping_add(1)),
                        Err(error) => {
                            tracing::debug!(%error, "event notifications interrupted");
                            break;
                        }
                    }
                },
                Err(error) => tracing::debug!(%error, "cannot listen for event notifications"),
            },
            Err(error) => tracing::debug!(%error, "cannot connect the event listener"),
        }
        // Polling covers the gap; retry the listener calmly.
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

fn backend(error: sqlx::Error) -> EventStoreError {
    EventStoreError::Backend(error.to_string())
}

fn pg(error: PgError) -> EventStoreError {
    EventStoreError::Backend(error.to_string())
}

/// Which constraint an insert violated, if it was a unique violation.
fn unique_violation(error: &sqlx::Error) -> Option<String> {
    match error {
        sqlx::Error::Database(db) if db.is_unique_violation() => {
            Some(db.constraint().unwrap_or_default().to_owned())
        }
        _ => None,
    }
}

enum Attempt<T> {
    Done(T),
    /// Another transaction inserted one of our event ids after we looked:
    /// look again (it is either ours to report as a duplicate, or another
    /// tenant's and the id is taken).
    EventIdRaced(EventId),
}

impl PostgresEventStore {
    /// `tenant` logs in as the application role, `system` as the system role
    /// (see `mnemo_pg`); the schema must be migrated.
    pub fn new(tenant: TenantPool, system: SystemPool) -> Self {
        PostgresEventStore {
            tenant,
            system,
            head: Arc::new(watch::channel(0).0),
            notified: Arc::new(watch::channel(0).0),
            listener: Arc::new(OnceLock::new()),
            head_poll: DEFAULT_HEAD_POLL,
        }
    }

    /// How often `wait_for_append` re-reads the head when no notification
    /// came (500 ms by default).
    pub fn with_head_poll(mut self, interval: Duration) -> Self {
        self.head_poll = interval;
        self
    }

    /// Starts the notification listener on first use (it needs a runtime,
    /// and only a relay waits).
    fn ensure_listener(&self) {
        self.listener.get_or_init(|| {
            AbortOnDrop(tokio::spawn(listen(
                self.system.clone(),
                self.notified.clone(),
            )))
        });
    }

    fn decode_row(row: &PgRow) -> Result<RecordedEvent, EventStoreError> {
        let corrupt = |what: &str| EventStoreError::Corrupt(what.to_owned());
        let event_id: String = row.get("event_id");
        let tenant: String = row.get("tenant_id");
        let subject: Option<String> = row.get("subject_id");
        let stream_version: i64 = row.get("stream_version");
        let schema_version: i32 = row.get("schema_version");
        let Json(metadata): Json<EventMetadata> =
            row.try_get("metadata").map_err(|_| corrupt("metadata"))?;
        Ok(RecordedEvent {
            global_position: row.get("global_position"),
            event_id: EventId::parse(&event_id).map_err(|_| corrupt("event_id"))?,
            tenant: TenantId::parse(tenant).map_err(|_| corrupt("tenant_id"))?,
            stream_id: row.get("stream_id"),
            stream_version: u64::try_from(stream_version).map_err(|_| corrupt("stream_version"))?,
            subject: subject
                .map(SubjectId::parse)
                .transpose()
                .map_err(|_| corrupt("subject_id"))?,
            event_type: row.get("event_type"),
            schema_version: u16::try_from(schema_version).map_err(|_| corrupt("schema_version"))?,
            payload: row.try_get("payload").map_err(|_| corrupt("payload"))?,
            metadata,
            recorded_at: row.get::<DateTime<Utc>, _>("recorded_at"),
        })
    }

    fn decode_rows(rows: Vec<PgRow>) -> Result<Vec<RecordedEvent>, EventStoreError> {
        rows.iter().map(Self::decode_row).collect()
    }

    // One transaction on purpose: the streams' advisory locks, the
    // idempotency and version checks and the inserts must share it (its
    // xid is the events' position), which a split would hand around.
    async fn try_append(
        &self,
        tenant: &TenantId,
        appends: &[StreamAppend],
    ) -> Result<Attempt<Vec<AppendResult>>, EventStoreError> {
        let mut tx = self.tenant.begin(tenant).await.map_err(pg)?;
        // Appends to one stream take turns (the lock ends with the
        // transaction). Without it two `Any` appends would both compute the
        // same next version and one would fail; with it the version read
        // below is the truth, and a stale `Exact` reports the actual one.
        // Length-prefixed, so ("ab", "c") and ("a", "bc") are different keys
        // (text cannot hold a NUL separator); a hash collision only makes
        // two streams take turns. Several streams are locked in one order
        // (sorted, once each), so two multi-stream appends cannot deadlock.
        let streams: std::collections::BTreeSet<&str> =
            appends.iter().map(|a| a.stream_id.as_str()).collect();
        for stream_id in streams {
            sqlx::query(
                "SELECT pg_advisory_xact_lock(hashtextextended(length($1) || ':' || $1 || $2, 0))",
            )
            .bind(tenant.as_str())
            .bind(stream_id)
            .execute(&mut *tx)
            .await
            .map_err(backend)?;
        }
        let now = Utc::now();
        let mut results = Vec::with_capacity(appends.len());
        for append in appends {
            match append_in(&mut tx, tenant, append, now).await? {
                Attempt::Done(result) => results.push(result),
                Attempt::EventIdRaced(id) => return Ok(Attempt::EventIdRaced(id)),
            }
        }
        tx.commit().await.map_err(backend)?;
        crate::advance_head(&self.head, &results);
        Ok(Attempt::Done(results))
    }

    async fn tenant_rows(
        &self,
        tenant: &TenantId,
        query: sqlx::query::Query<'_, sqlx::Postgres, sqlx::postgres::PgArguments>,
    ) -> Result<Vec<PgRow>, EventStoreError> {
        let mut tx = self.tenant.begin(tenant).await.map_err(pg)?;
        let rows = query.fetch_all(&mut *tx).await.map_err(backend)?;
        tx.commit().await.map_err(backend)?;
        Ok(rows)
    }
}

/// The non-negative integer in the first column of a one-row answer (a
/// sum or a count; 0 without a row).
fn first_count(rows: &[PgRow]) -> Result<u64, EventStoreError> {
    let value: i64 = rows
        .first()
        .map(|row| row.try_get(0))
        .transpose()
        .map_err(backend)?
        .unwrap_or(0);
    Ok(value.max(0) as u64)
}

/// One stream's part of an append, inside the caller's transaction (its
/// advisory lock held): the idempotency and version checks, then the
/// inserts.
async fn append_in(
    tx: &mut PgConnection,
    tenant: &TenantId,
    append: &StreamAppend,
    now: DateTime<Utc>,
) -> Result<Attempt<AppendResult>, EventStoreError> {
    let stream_id = append.stream_id.as_str();
    let expected = append.expected;
    let events = &append.events;
    let mut existing = Vec::with_capacity(events.len());
    for event in events {
        // Row-level security shows only this tenant's rows: an id taken
        // by another tenant is found by the unique index at insert time.
        let row = sqlx::query(
            "SELECT stream_id, global_position, stream_version FROM events \
             WHERE tenant_id = $1 AND event_id = $2",
        )
        .bind(tenant.as_str())
        .bind(event.event_id.to_string())
        .fetch_optional(&mut *tx)
        .await
        .map_err(backend)?;
        let found = match row {
            Some(row) => {
                let row_stream: String = row.get("stream_id");
                if row_stream != stream_id {
                    return Err(EventStoreError::EventIdTaken(event.event_id));
                }
                let position: i64 = row.get("global_position");
                let version: i64 = row.get("stream_version");
                Some((position, version as u64))
            }
            None => None,
        };
        existing.push(found);
    }

    let current: i64 = sqlx::query_scalar(
        "SELECT COALESCE(MAX(stream_version), 0) FROM events WHERE tenant_id = $1 AND stream_id = $2",
    )
    .bind(tenant.as_str())
    .bind(stream_id)
    .fetch_one(&mut *tx)
    .await
    .map_err(backend)?;
    let current = current as u64;

    if let Some(result) = crate::check_stream(stream_id, expected, events, &existing, current)? {
        return Ok(Attempt::Done(result));
    }
    let conflict = || EventStoreError::Conflict {
        stream_id: stream_id.to_owned(),
        expected,
        actual: current,
    };

    let mut version = current;
    let mut appended = Vec::with_capacity(events.len());
    for (event, found) in events.iter().zip(&existing) {
        if let Some((position, existing_version)) = found {
            appended.push(AppendedEvent {
                event_id: event.event_id,
                global_position: *position,
                stream_version: *existing_version,
                duplicate: true,
            });
            continue;
        }
        version += 1;
        let inserted = insert(&mut *tx, tenant, stream_id, version, event, now).await;
        let position = match inserted {
            Ok(position) => position,
            Err(error) => {
                return match unique_violation(&error).as_deref() {
                    Some("events_event_id_key") => Ok(Attempt::EventIdRaced(event.event_id)),
                    Some(_) => Err(conflict()),
                    None => Err(backend(error)),
                }
            }
        };
        appended.push(AppendedEvent {
            event_id: event.event_id,
            global_position: position,
            stream_version: version,
            duplicate: false,
        });
    }
    Ok(Attempt::Done(AppendResult {
        events: appended,
        stream_version: version,
    }))
}

async fn insert(
    tx: &mut PgConnection,
    tenant: &TenantId,
    stream_id: &str,
    version: u64,
    event: &NewEvent,
    now: DateTime<Utc>,
) -> Result<i64, sqlx::Error> {
    // The position and tx_id are assigned by the table's trigger.
    sqlx::query_scalar(
        "INSERT INTO events (event_id, tenant_id, stream_id, stream_version, \
         subject_id, event_type, schema_version, actor, payload, metadata, recorded_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING global_position",
    )
    .bind(event.event_id.to_string())
    .bind(tenant.as_str())
    .bind(stream_id)
    .bind(version as i64)
    .bind(event.subject.as_ref().map(SubjectId::as_str))
    .bind(&event.event_type)
    .bind(i32::from(event.schema_version))
    .bind(&event.metadata.actor)
    .bind(&event.payload)
    .bind(Json(&event.metadata))
    .bind(now)
    .fetch_one(tx)
    .await
}

#[async_trait]
impl EventStore for PostgresEventStore {
    async fn append(
        &self,
        tenant: &TenantId,
        stream_id: &str,
        expected: ExpectedVersion,
        events: Vec<NewEvent>,
    ) -> Result<AppendResult, EventStoreError> {
        let mut results = self
            .append_streams(
                tenant,
                vec![StreamAppend {
                    stream_id: stream_id.to_owned(),
                    expected,
                    events,
                }],
            )
            .await?;
        results
            .pop()
            .ok_or_else(|| EventStoreError::Corrupt("no result for an append of one stream".into()))
    }

    async fn append_streams(
        &self,
        tenant: &TenantId,
        appends: Vec<StreamAppend>,
    ) -> Result<Vec<AppendResult>, EventStoreError> {
        crate::check_appends(&appends)?;
        match self.try_append(tenant, &appends).await? {
            Attempt::Done(results) => Ok(results),
            // Looked again under the same rules: a racing retry of our own is
            // now visible and reported as a duplicate.
            Attempt::EventIdRaced(_) => match self.try_append(tenant, &appends).await? {
                Attempt::Done(results) => Ok(results),
                // Still invisible yet taken: another tenant owns the id.
                Attempt::EventIdRaced(taken) => Err(EventStoreError::EventIdTaken(taken)),
            },
        }
    }

    async fn read_stream(
        &self,
        tenant: &TenantId,
        stream_id: &str,
    ) -> Result<Vec<RecordedEvent>, EventStoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM events WHERE tenant_id = $1 AND stream_id = $2 ORDER BY stream_version"
        );
        let rows = self
            .tenant_rows(
                tenant,
                sqlx::query(&sql).bind(tenant.as_str()).bind(stream_id),
            )
            .await?;
        Self::decode_rows(rows)
    }

    async fn read_streams(
        &self,
        tenant: &TenantId,
        stream_ids: &[String],
    ) -> Result<Vec<RecordedEvent>, EventStoreError> {
        if stream_ids.is_empty() {
            return Ok(Vec::new());
        }
        let sql =
            format!("SELECT {COLUMNS} FROM events WHERE tenant_id = $1 AND stream_id = ANY($2)");
        let rows = self
            .tenant_rows(
                tenant,
                sqlx::query(&sql)
                    .bind(tenant.as_str())
                    .bind(stream_ids.to_vec()),
            )
            .await?;
        Ok(crate::in_stream_order(stream_ids, Self::decode_rows(rows)?))
    }

    async fn read_streams_after(
        &self,
        tenant: &TenantId,
        streams: &[(String, u64)],
    ) -> Result<Vec<RecordedEvent>, EventStoreError> {
        if streams.is_empty() {
            return Ok(Vec::new());
        }
        // One range of the (tenant, stream, version) index per stream:
        // only the events after each version are read, not whole streams.
        let (ids, after): (Vec<String>, Vec<i64>) = crate::each_stream_once(streams)
            .into_iter()
            .map(|(id, version)| (id, crate::version_bound(version)))
            .unzip();
        let sql = format!(
            "SELECT {COLUMNS} FROM events \
             JOIN unnest($2::text[], $3::bigint[]) AS wanted (wanted_stream, wanted_after) \
             ON stream_id = wanted_stream AND stream_version > wanted_after \
             WHERE tenant_id = $1"
        );
        let rows = self
            .tenant_rows(
                tenant,
                sqlx::query(&sql)
                    .bind(tenant.as_str())
                    .bind(&ids)
                    .bind(&after),
            )
            .await?;
        Ok(crate::in_stream_order(&ids, Self::decode_rows(rows)?))
    }

    async fn read_stream_range(
        &self,
        tenant: &TenantId,
        stream_id: &str,
        from: u64,
        to: u64,
    ) -> Result<Vec<RecordedEvent>, EventStoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM events WHERE tenant_id = $1 AND stream_id = $2 \
             AND stream_version BETWEEN $3 AND $4 ORDER BY stream_version"
        );
        let rows = self
            .tenant_rows(
                tenant,
                sqlx::query(&sql)
                    .bind(tenant.as_str())
                    .bind(stream_id)
                    .bind(crate::version_bound(from))
                    .bind(crate::version_bound(to)),
            )
            .await?;
        Self::decode_rows(rows)
    }

    async fn read_subject(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<Vec<RecordedEvent>, EventStoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM events WHERE tenant_id = $1 AND subject_id = $2 ORDER BY global_position"
        );
        let rows = self
            .tenant_rows(
                tenant,
                sqlx::query(&sql)
                    .bind(tenant.as_str())
                    .bind(subject.as_str()),
            )
            .await?;
        Self::decode_rows(rows)
    }

    async fn redact_legacy(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<u64, EventStoreError> {
        // `events_redacted` is the function the update trigger checks
        // against (migrations/postgres/0009_legacy_redaction.sql).
        let sql = format!(
            "UPDATE events SET payload = events_redacted(payload), \
                 metadata = metadata - 'correlation_id' \
             WHERE tenant_id = $1 AND subject_id = $2 AND {}",
            crate::LEGACY_PLAIN_EVENTS
        );
        let mut tx = self.tenant.begin(tenant).await.map_err(pg)?;
        let done = sqlx::query(&sql)
            .bind(tenant.as_str())
            .bind(subject.as_str())
            .execute(&mut *tx)
            .await
            .map_err(backend)?;
        tx.commit().await.map_err(backend)?;
        Ok(done.rows_affected())
    }

    async fn get_event(
        &self,
        tenant: &TenantId,
        event_id: &EventId,
    ) -> Result<Option<RecordedEvent>, EventStoreError> {
        let sql = format!("SELECT {COLUMNS} FROM events WHERE tenant_id = $1 AND event_id = $2");
        let rows = self
            .tenant_rows(
                tenant,
                sqlx::query(&sql)
                    .bind(tenant.as_str())
                    .bind(event_id.to_string()),
            )
            .await?;
        rows.first().map(Self::decode_row).transpose()
    }

    async fn get_events(
        &self,
        tenant: &TenantId,
        event_ids: &[EventId],
    ) -> Result<Vec<RecordedEvent>, EventStoreError> {
        let wanted = crate::unique_in_order(event_ids);
        if wanted.is_empty() {
            return Ok(Vec::new());
        }
        // One array parameter, whatever the count: one statement, one
        // transaction (the tenant's), one plan for every batch size.
        let keys: Vec<String> = wanted.iter().map(ToString::to_string).collect();
        let sql =
            format!("SELECT {COLUMNS} FROM events WHERE tenant_id = $1 AND event_id = ANY($2)");
        let rows = self
            .tenant_rows(tenant, sqlx::query(&sql).bind(tenant.as_str()).bind(&keys))
            .await?;
        Ok(crate::in_order_of(&wanted, Self::decode_rows(rows)?))
    }

    async fn query(
        &self,
        tenant: &TenantId,
        query: &EventQuery,
    ) -> Result<Vec<RecordedEvent>, EventStoreError> {
        let mut builder =
            sqlx::QueryBuilder::new(format!("SELECT {COLUMNS} FROM events WHERE tenant_id = "));
        builder.push_bind(tenant.as_str());
        if let Some(subject) = &query.subject {
            builder
                .push(" AND subject_id = ")
                .push_bind(subject.as_str());
        }
        if let Some(actor) = &query.actor {
            builder.push(" AND actor = ").push_bind(actor.clone());
        }
        if let Some(stream_id) = &query.stream_id {
            builder
                .push(" AND stream_id = ")
                .push_bind(stream_id.clone());
        }
        if !query.event_types.is_empty() {
            builder
                .push(" AND event_type = ANY(")
                .push_bind(query.event_types.clone())
                .push(")");
        }
        if let Some(from) = query.from {
            builder.push(" AND recorded_at >= ").push_bind(from);
        }
        if let Some(to) = query.to {
            builder.push(" AND recorded_at < ").push_bind(to);
        }
        if let Some(after) = query.after_position {
            builder.push(" AND global_position > ").push_bind(after);
        }
        builder
            .push(" ORDER BY global_position LIMIT ")
            .push_bind(i64::from(query.limit.max(1)));
        let rows = self.tenant_rows(tenant, builder.build()).await?;
        Self::decode_rows(rows)
    }

    async fn read_all(
        &self,
        after_position: i64,
        limit: u32,
    ) -> Result<Vec<RecordedEvent>, EventStoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM events WHERE global_position > $1 AND {SAFE} \
             ORDER BY global_position LIMIT $2"
        ))
        .bind(after_position)
        .bind(i64::from(limit.max(1)))
        .fetch_all(self.system.pool())
        .await
        .map_err(backend)?;
        Self::decode_rows(rows)
    }

    /// The highest position `read_all` may return now: events of
    /// transactions still running, or newer than one still running, are not
    /// counted yet, so the relay never waits for a head it cannot read.
    async fn head_position(&self) -> Result<i64, EventStoreError> {
        sqlx::query_scalar(&format!(
            "SELECT COALESCE(MAX(global_position), 0) FROM events WHERE {SAFE}"
        ))
        .fetch_one(self.system.pool())
        .await
        .map_err(backend)
    }

    async fn stored_bytes(&self, tenant: &TenantId) -> Result<u64, EventStoreError> {
        let rows = self
            .tenant_rows(
                tenant,
                sqlx::query(
                    "SELECT COALESCE(SUM(pg_column_size(payload) + pg_column_size(metadata)), 0)::BIGINT \
                     FROM events WHERE tenant_id = $1",
                )
                .bind(tenant.as_str()),
            )
            .await?;
        first_count(&rows)
    }

    async fn count_since(
        &self,
        tenant: &TenantId,
        event_type: &str,
        since: DateTime<Utc>,
    ) -> Result<u64, EventStoreError> {
        // As on SQLite: the first event at or after `since` by time starts
        // the range of positions counted.
        let rows = self
            .tenant_rows(
                tenant,
                sqlx::query(
                    "SELECT COUNT(*) FROM events \
                     WHERE tenant_id = $1 AND event_type = $2 AND global_position >= \
                     COALESCE((SELECT global_position FROM events \
                               WHERE tenant_id = $1 AND recorded_at >= $3 \
                               ORDER BY recorded_at LIMIT 1), 9223372036854775807)",
                )
                .bind(tenant.as_str())
                .bind(event_type)
                .bind(since),
            )
            .await?;
        first_count(&rows)
    }

    async fn wait_for_append(&self, after_position: i64, timeout: Duration) {
        let deadline = tokio::time::Instant::now() + timeout;
        self.ensure_listener();
        // Subscribed before the first look at the head, so a commit between
        // that look and the wait below still wakes us.
        let mut local = self.head.subscribe();
        let mut notified = self.notified.subscribe();
        // After a wake that found nothing readable (the commit sits behind
        // an older open transaction, whose end notifies nobody), look again
        // soon, backing off towards the normal poll.
        let mut recheck: Option<Duration> = None;
        loop {
            match self.head_position().await {
                Ok(head) if head > after_position => return,
                Ok(_) => {}
                // The relay's next read reports the error; here it only
                // means "not yet".
                Err(error) => tracing::debug!(%error, "head position unavailable"),
            }
            let now = tokio::time::Instant::now();
            if now >= deadline {
                return;
            }
            let nap = recheck.unwrap_or(self.head_poll).min(deadline - now);
            let woken = tokio::select! {
                _ = local.changed() => true,
                _ = notified.changed() => true,
                _ = tokio::time::sleep(nap) => false,
            };
            recheck = if woken {
                Some(Duration::from_millis(20))
            } else {
                recheck
                    .map(|interval| interval * 2)
                    .filter(|interval| *interval < self.head_poll)
            };
        }
    }
}
