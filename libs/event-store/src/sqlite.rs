//! SQLite adapter: one database file holds the log, the subject keys, the bus
//! and the read models of the embedded mode.
//!
//! SQLite runs one write transaction at a time, so positions are assigned in
//! commit order and a reader can never see position N+1 before N: the relay
//! is gap-free without the xmin trick PostgreSQL needs. Writes in this process
//! are also serialized by a mutex so they never wait on SQLITE_BUSY.

use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, TimeZone, Utc};
use mnemo_domain::{EventId, EventMetadata, NewEvent, RecordedEvent, SubjectId, TenantId};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Row, SqlitePool};
use tokio::sync::{watch, Mutex};

use crate::{
    AppendResult, AppendedEvent, EncodedEvent, EventQuery, EventStore, EventStoreError,
    ExpectedVersion, StreamAppend,
};

mod handoff;
mod heap;

pub use handoff::handoffs as lock_handoffs;
pub use heap::{configure as configure_heap, Heap};

/// How long a statement waits for the write lock before it fails.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Opens (creating if needed) the embedded database and applies migrations.
///
/// `secure_delete` makes SQLite zero the bytes of deleted rows, so an erased
/// subject's key and plaintext projections do not linger in free pages.
/// Every connection waits for the write lock through [`handoff`]: woken by
/// the commit that frees it rather than by SQLite's sleeping busy handler.
///
/// `temp_store = MEMORY` keeps statement journals (the undo copy of the
/// pages a multi-row statement changes inside a transaction) and temporary
/// tables in memory: in a temporary file they were a quarter of the
/// process's writes under the load test, and a copy of sealed rows and
/// clear ids outside the data directory.
///
/// `journal_size_limit` cuts the WAL file back to [`WAL_SIZE_LIMIT`] when
/// a checkpoint has taken in all of it: SQLite otherwise keeps the file at
/// the largest size it ever reached (260 MB after a load test of 93k
/// messages) for the life of the data dir.
///
/// The first call in a process also sets where SQLite allocates
/// ([`heap`]), which only takes before SQLite opens its first database.
///
/// The pool hands out a connection without pinging it first (sqlx's
/// `test_before_acquire`, on by default): the ping guards against a
/// server that hung up, which a database file in this process cannot do,
/// and it cost every statement run on the pool a round trip to the
/// connection's thread and back (1.8 % of the samples of `bench
/// searchable` on the runtime's side alone, beside the wake-ups).
///
/// Its [`POOL_SIZE`] connections are all opened now, by the calling task
/// ([`open_pool`] says why).
pub async fn connect(path: &Path) -> Result<SqlitePool, sqlx::Error> {
    let pool = open_pool(path, POOL_SIZE).await?;
    migrate(&pool).await?;
    Ok(pool)
}

/// A pool of `size` connections to the database at `path`, configured as
/// [`connect`] describes, every one of them opened now, by the calling
/// task, and kept for the pool's life; no migration. For a second pool on
/// a database [`connect`] opened: one whose connections' threads have
/// another priority.
///
/// Each connection runs its statements on a thread of its own, which
/// starts with the priority of the thread that started it. Opened on
/// demand, a connection took the priority of whichever task first found
/// the pool empty: the request threads' or the background runtime's
/// lowered one (`mnemo_app::runtime`), by chance. So the server opens one
/// pool from each, and gives each its own work (`mnemo_app::stores`).
/// sqlx would otherwise close a connection idle for ten minutes or thirty
/// minutes old, and any task would open the next; with `min_connections`
/// it opens connections from a task it spawns, wherever that runs.
pub async fn open_pool(path: &Path, size: u32) -> Result<SqlitePool, sqlx::Error> {
    configure_heap();
    let options = SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(BUSY_TIMEOUT)
        .foreign_keys(true)
        .pragma("secure_delete", "ON")
        .pragma("temp_store", "MEMORY")
        .pragma("journal_size_limit", WAL_SIZE_LIMIT.to_string());
    let pool = SqlitePoolOptions::new()
        .max_connections(size)
        .idle_timeout(None)
        .max_lifetime(None)
        .test_before_acquire(false)
        .after_connect(|connection, _| {
            Box::pin(async move { handoff::install(connection, BUSY_TIMEOUT).await })
        })
        .connect_with(options)
        .await?;
    // Each one held while the next is asked for, so each is a new
    // connection, whose thread this task's thread starts.
    let mut opened = Vec::with_capacity(size as usize);
    for _ in 0..size {
        opened.push(pool.acquire().await?);
    }
    drop(opened);
    Ok(pool)
}

/// The connections of the pool [`connect`] opens.
pub const POOL_SIZE: u32 = 8;

/// The size the WAL file is cut back to once a checkpoint has taken it all
/// in. Steady writes keep it near 4 MB (a checkpoint every 1,000 pages);
/// only a burst the checkpoints could not follow grows it past this.
pub const WAL_SIZE_LIMIT: i64 = 32 * 1024 * 1024;

/// Applies the SQLite migrations under `migrations/sqlite/`.
pub async fn migrate(pool: &SqlitePool) -> Result<(), sqlx::Error> {
    sqlx::migrate!("../../migrations/sqlite")
        .run(pool)
        .await
        .map_err(|e| sqlx::Error::Migrate(Box::new(e)))
}

/// Shrinks the write-ahead log to nothing, so deleted pages do not survive in
/// it (called after an erasure).
pub async fn checkpoint_truncate(pool: &SqlitePool) -> Result<(), sqlx::Error> {
    sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
        .execute(pool)
        .await
        .map(|_| ())
}

#[derive(Clone)]
pub struct SqliteEventStore {
    pool: SqlitePool,
    write_lock: Arc<Mutex<()>>,
    head: Arc<watch::Sender<i64>>,
}

fn backend(error: sqlx::Error) -> EventStoreError {
    EventStoreError::Backend(error.to_string())
}

/// The tenant's events of a type from the first one recorded at or after a
/// time: both reads covered by an index (`events_tenant_time` finds the
/// position, `events_tenant_type` counts from it), no row read.
const COUNT_SINCE: &str = "SELECT COUNT(*) FROM events \
     WHERE tenant_id = ?1 AND event_type = ?2 AND global_position >= \
     COALESCE((SELECT global_position FROM events \
               WHERE tenant_id = ?1 AND recorded_at >= ?3 \
               ORDER BY recorded_at LIMIT 1), 9223372036854775807)";

fn micros(at: DateTime<Utc>) -> i64 {
    at.timestamp_micros()
}

/// Ids per `get_events` statement: far below SQLite's bound-parameter
/// limit, and more than a search reads.
const GET_EVENTS_CHUNK: usize = 500;

const COLUMNS: &str = "global_position, event_id, tenant_id, stream_id, stream_version, \
     subject_id, event_type, schema_version, payload, metadata, recorded_at";

impl SqliteEventStore {
    pub async fn new(pool: SqlitePool) -> Result<Self, EventStoreError> {
        let head: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(global_position), 0) FROM events")
            .fetch_one(&pool)
            .await
            .map_err(backend)?;
        Ok(SqliteEventStore {
            pool,
            write_lock: Arc::new(Mutex::new(())),
            head: Arc::new(watch::channel(head).0),
        })
    }

    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// This store with its statements on another pool of the same
    /// database: one write lock and one head for both, so an append
    /// through either waits for the other's and wakes the other's
    /// readers ([`EventStore::wait_for_append`]).
    pub fn on_pool(&self, pool: SqlitePool) -> Self {
        SqliteEventStore {
            pool,
            write_lock: self.write_lock.clone(),
            head: self.head.clone(),
        }
    }

    fn decode_row(row: &sqlx::sqlite::SqliteRow) -> Result<RecordedEvent, EventStoreError> {
        let corrupt = |what: &str| EventStoreError::Corrupt(what.to_owned());
        let event_id: String = row.get("event_id");
        let tenant: String = row.get("tenant_id");
        let subject: Option<String> = row.get("subject_id");
        let payload: String = row.get("payload");
        let metadata: String = row.get("metadata");
        let recorded_at: i64 = row.get("recorded_at");
        let stream_version: i64 = row.get("stream_version");
        let schema_version: i64 = row.get("schema_version");
        Ok(RecordedEvent {
            global_position: row.get("global_position"),
            event_id: EventId::parse(&event_id).map_err(|_| corrupt("event_id"))?,
            tenant: TenantId::parse(tenant).map_err(|_| corrupt("tenant_id"))?,
            stream_id: row.get("stream_id"),
            stream_version: stream_version as u64,
            subject: subject
                .map(SubjectId::parse)
                .transpose()
                .map_err(|_| corrupt("subject_id"))?,
            event_type: row.get("event_type"),
            schema_version: u16::try_from(schema_version).map_err(|_| corrupt("schema_version"))?,
            payload: serde_json::from_str(&payload).map_err(|_| corrupt("payload"))?,
            metadata: serde_json::from_str::<EventMetadata>(&metadata)
                .map_err(|_| corrupt("metadata"))?,
            recorded_at: Utc
                .timestamp_micros(recorded_at)
                .single()
                .ok_or_else(|| corrupt("recorded_at"))?,
        })
    }

    fn decode_rows(
        rows: Vec<sqlx::sqlite::SqliteRow>,
    ) -> Result<Vec<RecordedEvent>, EventStoreError> {
        rows.iter().map(Self::decode_row).collect()
    }

    /// Every tenant's rows after a position, in commit order: what
    /// `read_all` and `read_all_encoded` read.
    async fn rows_after(
        &self,
        after_position: i64,
        limit: u32,
    ) -> Result<Vec<sqlx::sqlite::SqliteRow>, EventStoreError> {
        sqlx::query(&format!(
            "SELECT {COLUMNS} FROM events WHERE global_position > ? ORDER BY global_position LIMIT ?"
        ))
        .bind(after_position)
        .bind(i64::from(limit.max(1)))
        .fetch_all(&self.pool)
        .await
        .map_err(backend)
    }

    /// A row as the relay publishes it: the stored payload and metadata,
    /// JSON text, go into the envelope as they are (checked to be JSON,
    /// never parsed into values), where parsing them into a
    /// [`RecordedEvent`] and serializing that would write the same fields
    /// (`read_all_encoded_is_what_read_all_serializes`).
    fn encode_row(row: &sqlx::sqlite::SqliteRow) -> Result<EncodedEvent, EventStoreError> {
        let corrupt = |what: &str| EventStoreError::Corrupt(what.to_owned());
        let event_id: &str = row.get("event_id");
        let tenant: String = row.get("tenant_id");
        let subject: Option<String> = row.get("subject_id");
        let stream_id: String = row.get("stream_id");
        let event_type: String = row.get("event_type");
        let payload: &str = row.get("payload");
        let metadata: &str = row.get("metadata");
        let recorded_at: i64 = row.get("recorded_at");
        let stream_version: i64 = row.get("stream_version");
        let schema_version: i64 = row.get("schema_version");
        let global_position: i64 = row.get("global_position");
        let event_id = EventId::parse(event_id).map_err(|_| corrupt("event_id"))?;
        let tenant = TenantId::parse(tenant).map_err(|_| corrupt("tenant_id"))?;
        let subject = subject
            .map(SubjectId::parse)
            .transpose()
            .map_err(|_| corrupt("subject_id"))?;
        let schema_version =
            u16::try_from(schema_version).map_err(|_| corrupt("schema_version"))?;
        let recorded_at = Utc
            .timestamp_micros(recorded_at)
            .single()
            .ok_or_else(|| corrupt("recorded_at"))?;
        // Checked without building a value: a corrupt row is refused here,
        // as `read_all` refuses it, not put on the bus.
        serde_json::from_str::<serde::de::IgnoredAny>(payload).map_err(|_| corrupt("payload"))?;
        let traceparent = serde_json::from_str::<EventMetadata>(metadata)
            .map_err(|_| corrupt("metadata"))?
            .traceparent;

        // The fields in the order `RecordedEvent`'s `Serialize` writes them.
        let mut envelope = Vec::with_capacity(payload.len() + metadata.len() + 320);
        fn key(envelope: &mut Vec<u8>, name: &str) {
            envelope.push(if envelope.is_empty() { b'{' } else { b',' });
            envelope.push(b'"');
            envelope.extend_from_slice(name.as_bytes());
            envelope.extend_from_slice(b"\":");
        }
        fn field(
            envelope: &mut Vec<u8>,
            name: &str,
            value: &impl serde::Serialize,
        ) -> serde_json::Result<()> {
            key(envelope, name);
            serde_json::to_writer(envelope, value)
        }
        let encoded = (|| -> serde_json::Result<()> {
            field(&mut envelope, "global_position", &global_position)?;
            field(&mut envelope, "event_id", &event_id)?;
            field(&mut envelope, "tenant", &tenant)?;
            field(&mut envelope, "stream_id", &stream_id)?;
            field(&mut envelope, "stream_version", &(stream_version as u64))?;
            field(&mut envelope, "subject", &subject)?;
            field(&mut envelope, "event_type", &event_type)?;
            field(&mut envelope, "schema_version", &schema_version)?;
            key(&mut envelope, "payload");
            envelope.extend_from_slice(payload.as_bytes());
            key(&mut envelope, "metadata");
            envelope.extend_from_slice(metadata.as_bytes());
            field(&mut envelope, "recorded_at", &recorded_at)
        })();
        encoded.map_err(|e| corrupt(&format!("unencodable event: {e}")))?;
        envelope.push(b'}');
        Ok(EncodedEvent {
            global_position,
            event_id,
            tenant,
            stream_id,
            subject,
            event_type,
            traceparent,
            envelope,
        })
    }
}

#[async_trait]
impl EventStore for SqliteEventStore {
    // One function on purpose: the idempotency check, the version check,
    // the position assignment and the inserts must share one IMMEDIATE
    // transaction, and splitting it would pass that transaction through
    // helpers that each could commit or drop it early.
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
        let _guard = self.write_lock.lock().await;
        // IMMEDIATE takes the write lock up front: a deferred transaction
        // that reads first and writes later fails with SQLITE_BUSY (no
        // retry) when another connection wrote in between.
        let mut tx = self
            .pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(backend)?;
        let now = micros(Utc::now());
        let results = append_all(&mut tx, tenant, &appends, now).await?;
        tx.commit().await.map_err(backend)?;
        crate::advance_head(&self.head, &results);
        Ok(results)
    }

    async fn read_stream(
        &self,
        tenant: &TenantId,
        stream_id: &str,
    ) -> Result<Vec<RecordedEvent>, EventStoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM events WHERE tenant_id = ? AND stream_id = ? ORDER BY stream_version"
        ))
        .bind(tenant.as_str())
        .bind(stream_id)
        .fetch_all(&self.pool)
        .await
        .map_err(backend)?;
        Self::decode_rows(rows)
    }

    async fn read_streams(
        &self,
        tenant: &TenantId,
        stream_ids: &[String],
    ) -> Result<Vec<RecordedEvent>, EventStoreError> {
        let whole: Vec<(String, u64)> = stream_ids.iter().map(|id| (id.clone(), 0)).collect();
        self.read_streams_after(tenant, &whole).await
    }

    async fn read_streams_after(
        &self,
        tenant: &TenantId,
        streams: &[(String, u64)],
    ) -> Result<Vec<RecordedEvent>, EventStoreError> {
        let unique = crate::each_stream_once(streams);
        let mut events = Vec::new();
        for part in unique.chunks(GET_EVENTS_CHUNK) {
            let mut builder = streams_after_query("", tenant, part);
            let rows = builder
                .build()
                .fetch_all(&self.pool)
                .await
                .map_err(backend)?;
            events.extend(Self::decode_rows(rows)?);
        }
        let order: Vec<String> = streams.iter().map(|(id, _)| id.clone()).collect();
        Ok(crate::in_stream_order(&order, events))
    }

    async fn read_stream_range(
        &self,
        tenant: &TenantId,
        stream_id: &str,
        from: u64,
        to: u64,
    ) -> Result<Vec<RecordedEvent>, EventStoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM events WHERE tenant_id = ? AND stream_id = ? \
             AND stream_version BETWEEN ? AND ? ORDER BY stream_version"
        ))
        .bind(tenant.as_str())
        .bind(stream_id)
        .bind(crate::version_bound(from))
        .bind(crate::version_bound(to))
        .fetch_all(&self.pool)
        .await
        .map_err(backend)?;
        Self::decode_rows(rows)
    }

    async fn read_subject(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<Vec<RecordedEvent>, EventStoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM events WHERE tenant_id = ? AND subject_id = ? ORDER BY global_position"
        ))
        .bind(tenant.as_str())
        .bind(subject.as_str())
        .fetch_all(&self.pool)
        .await
        .map_err(backend)?;
        Self::decode_rows(rows)
    }

    async fn redact_legacy(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<u64, EventStoreError> {
        let _guard = self.write_lock.lock().await;
        // The expression is the one the update trigger checks against
        // (migrations/sqlite/0009_legacy_redaction.sql).
        let done = sqlx::query(&format!(
            "UPDATE events SET \
                 payload = json_replace(payload, \
                     '$.tags', json('{{\"$erased\":true}}'), \
                     '$.session', json('{{\"$erased\":true}}'), \
                     '$.message_id', json('{{\"$erased\":true}}')), \
                 metadata = json_remove(metadata, '$.correlation_id') \
             WHERE tenant_id = ? AND subject_id = ? AND {}",
            crate::LEGACY_PLAIN_EVENTS
        ))
        .bind(tenant.as_str())
        .bind(subject.as_str())
        .execute(&self.pool)
        .await
        .map_err(backend)?;
        Ok(done.rows_affected())
    }

    async fn get_event(
        &self,
        tenant: &TenantId,
        event_id: &EventId,
    ) -> Result<Option<RecordedEvent>, EventStoreError> {
        let row = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM events WHERE tenant_id = ? AND event_id = ?"
        ))
        .bind(tenant.as_str())
        .bind(event_id.to_string())
        .fetch_optional(&self.pool)
        .await
        .map_err(backend)?;
        row.as_ref().map(Self::decode_row).transpose()
    }

    async fn get_events(
        &self,
        tenant: &TenantId,
        event_ids: &[EventId],
    ) -> Result<Vec<RecordedEvent>, EventStoreError> {
        let wanted = crate::unique_in_order(event_ids);
        let mut events = Vec::with_capacity(wanted.len());
        for part in wanted.chunks(GET_EVENTS_CHUNK) {
            // `+tenant_id` keeps the tenant out of the index choice: with
            // bound values and no statistics SQLite otherwise walks a
            // tenant index (every event of the tenant, ~40 ms at 200k)
            // instead of looking each id up in the unique index.
            let mut builder = sqlx::QueryBuilder::new(format!(
                "SELECT {COLUMNS} FROM events WHERE event_id IN ("
            ));
            let mut list = builder.separated(", ");
            for id in part {
                list.push_bind(id.to_string());
            }
            builder.push(") AND +tenant_id = ");
            builder.push_bind(tenant.as_str());
            let rows = builder
                .build()
                .fetch_all(&self.pool)
                .await
                .map_err(backend)?;
            events.extend(Self::decode_rows(rows)?);
        }
        Ok(crate::in_order_of(&wanted, events))
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
            builder.push(" AND event_type IN (");
            let mut separated = builder.separated(", ");
            for event_type in &query.event_types {
                separated.push_bind(event_type.clone());
            }
            builder.push(")");
        }
        if let Some(from) = query.from {
            builder.push(" AND recorded_at >= ").push_bind(micros(from));
        }
        if let Some(to) = query.to {
            builder.push(" AND recorded_at < ").push_bind(micros(to));
        }
        if let Some(after) = query.after_position {
            builder.push(" AND global_position > ").push_bind(after);
        }
        builder
            .push(" ORDER BY global_position LIMIT ")
            .push_bind(i64::from(query.limit.max(1)));
        let rows = builder
            .build()
            .fetch_all(&self.pool)
            .await
            .map_err(backend)?;
        Self::decode_rows(rows)
    }

    async fn read_all_encoded(
        &self,
        after_position: i64,
        limit: u32,
    ) -> Result<Vec<EncodedEvent>, EventStoreError> {
        let rows = self.rows_after(after_position, limit).await?;
        rows.iter().map(Self::encode_row).collect()
    }

    async fn read_all(
        &self,
        after_position: i64,
        limit: u32,
    ) -> Result<Vec<RecordedEvent>, EventStoreError> {
        Self::decode_rows(self.rows_after(after_position, limit).await?)
    }

    async fn head_position(&self) -> Result<i64, EventStoreError> {
        sqlx::query_scalar("SELECT COALESCE(MAX(global_position), 0) FROM events")
            .fetch_one(&self.pool)
            .await
            .map_err(backend)
    }

    async fn stored_bytes(&self, tenant: &TenantId) -> Result<u64, EventStoreError> {
        let bytes: i64 = sqlx::query_scalar(
            "SELECT COALESCE(SUM(LENGTH(CAST(payload AS BLOB)) + LENGTH(CAST(metadata AS BLOB))), 0) \
             FROM events WHERE tenant_id = ?",
        )
        .bind(tenant.as_str())
        .fetch_one(&self.pool)
        .await
        .map_err(backend)?;
        Ok(bytes.max(0) as u64)
    }

    async fn count_since(
        &self,
        tenant: &TenantId,
        event_type: &str,
        since: DateTime<Utc>,
    ) -> Result<u64, EventStoreError> {
        // Positions follow commit order and times the appends' clocks, so
        // the first event at or after `since` by time starts the range; an
        // append racing the boundary may fall on either side of it.
        let count: i64 = sqlx::query_scalar(COUNT_SINCE)
            .bind(tenant.as_str())
            .bind(event_type)
            .bind(micros(since))
            .fetch_one(&self.pool)
            .await
            .map_err(backend)?;
        Ok(count.max(0) as u64)
    }

    async fn wait_for_append(&self, after_position: i64, timeout: Duration) {
        let mut receiver = self.head.subscribe();
        let _ =
            tokio::time::timeout(timeout, receiver.wait_for(|head| *head > after_position)).await;
    }
}

/// The events of `streams` (tenant's, each after its version), in no
/// particular order, as one statement after `prefix`: one range of the
/// (tenant, stream, version) index per stream, looked up from a table of
/// the wanted streams. An OR of the ranges would do for a few streams, but
/// SQLite (no statistics) plans an OR of a few dozen as a scan of all the
/// tenant's events (27-60 ms a read-ahead under the pipeline bench,
/// against 0.4 ms this way). CROSS JOIN keeps `wanted` the outer loop.
fn streams_after_query<'a>(
    prefix: &str,
    tenant: &'a TenantId,
    streams: &'a [(String, u64)],
) -> sqlx::QueryBuilder<'a, sqlx::Sqlite> {
    let mut builder = sqlx::QueryBuilder::new(format!(
        "{prefix}WITH wanted (wanted_stream, wanted_after) AS (VALUES "
    ));
    for (i, (stream_id, after)) in streams.iter().enumerate() {
        if i > 0 {
            builder.push(", ");
        }
        builder.push("(");
        builder.push_bind(stream_id.as_str());
        builder.push(", ");
        builder.push_bind(crate::version_bound(*after));
        builder.push(")");
    }
    builder.push(format!(
        ") SELECT {COLUMNS} FROM wanted CROSS JOIN events ON events.tenant_id = "
    ));
    builder.push_bind(tenant.as_str());
    builder.push(" AND events.stream_id = wanted_stream AND events.stream_version > wanted_after");
    builder
}

/// Opens the database at `path` and returns the event store over it.
pub async fn open(path: &Path) -> Result<SqliteEventStore, EventStoreError> {
    let pool = connect(path).await.map_err(backend)?;
    SqliteEventStore::new(pool).await
}

impl FromStr for ExpectedVersion {
    type Err = std::num::ParseIntError;
    /// `*` → Any, `0` → NoStream, `n` → Exact(n) (for If-Match style headers).
    fn from_str(raw: &str) -> Result<Self, Self::Err> {
        if raw == "*" {
            return Ok(ExpectedVersion::Any);
        }
        let version: u64 = raw.parse()?;
        Ok(if version == 0 {
            ExpectedVersion::NoStream
        } else {
            ExpectedVersion::Exact(version)
        })
    }
}

/// At most this many ids in one `IN (...)` list, and this many rows in one
/// multi-row `INSERT` (11 parameters each): well under SQLite's limit of
/// 32,766 parameters a statement.
const IDS_PER_QUERY: usize = 500;
const ROWS_PER_INSERT: usize = 200;

/// An event's row when its id is in the log: (tenant, stream, position, version).
type FoundRow = (String, String, i64, u64);

/// `?, ?, …` for `n` parameters.
fn placeholders(n: usize) -> String {
    let mut list = "?, ".repeat(n);
    list.truncate(list.len().saturating_sub(2));
    list
}

/// The appends of one call, inside the caller's transaction: the
/// idempotency and version checks, then the inserts. Statements are
/// batched, not run per event (a statement is a round trip to the
/// connection's thread, and this runs under the write lock every writer
/// waits for): the rows of every event id already in the log in one query,
/// the current version of every stream in one, then each stream's new
/// events in multi-row inserts. A 100-message post is 3 statements, not 201.
///
/// What an append sees is what it saw when each ran on its own: an event
/// appended earlier in the call counts as in the log (a duplicate in the
/// same stream, a taken id in another), and two appends to one stream
/// version in turn.
async fn append_all(
    tx: &mut sqlx::SqliteConnection,
    tenant: &TenantId,
    appends: &[StreamAppend],
    now: i64,
) -> Result<Vec<AppendResult>, EventStoreError> {
    let ids: Vec<String> = appends
        .iter()
        .flat_map(|append| &append.events)
        .map(|event| event.event_id.to_string())
        .collect();
    let mut found: std::collections::HashMap<String, FoundRow> =
        std::collections::HashMap::with_capacity(ids.len());
    for chunk in ids.chunks(IDS_PER_QUERY) {
        let sql = format!(
            "SELECT event_id, tenant_id, stream_id, global_position, stream_version FROM events \
             WHERE event_id IN ({})",
            placeholders(chunk.len())
        );
        let mut query = sqlx::query(&sql);
        for id in chunk {
            query = query.bind(id);
        }
        for row in query.fetch_all(&mut *tx).await.map_err(backend)? {
            let version: i64 = row.get("stream_version");
            found.insert(
                row.get("event_id"),
                (
                    row.get("tenant_id"),
                    row.get("stream_id"),
                    row.get("global_position"),
                    version as u64,
                ),
            );
        }
    }

    let mut streams: Vec<&str> = appends.iter().map(|a| a.stream_id.as_str()).collect();
    streams.sort_unstable();
    streams.dedup();
    let mut versions: std::collections::HashMap<String, u64> =
        std::collections::HashMap::with_capacity(streams.len());
    for chunk in streams.chunks(IDS_PER_QUERY) {
        let sql = format!(
            "SELECT stream_id, MAX(stream_version) AS version FROM events \
             WHERE tenant_id = ? AND stream_id IN ({}) GROUP BY stream_id",
            placeholders(chunk.len())
        );
        let mut query = sqlx::query(&sql).bind(tenant.as_str());
        for stream in chunk {
            query = query.bind(*stream);
        }
        for row in query.fetch_all(&mut *tx).await.map_err(backend)? {
            let version: i64 = row.get("version");
            versions.insert(row.get("stream_id"), version as u64);
        }
    }

    // Every stream's new events in the same multi-row inserts, unless an
    // event id comes twice in the call: then a later stream must see the
    // position an earlier one's insert gave it, so each stream is inserted
    // in turn.
    let mut seen = std::collections::HashSet::with_capacity(ids.len());
    let repeats = !ids.iter().all(|id| seen.insert(id.as_str()));
    let mut results = Vec::with_capacity(appends.len());
    if repeats {
        for append in appends {
            let plan = plan_stream(tenant, append, &found, &mut versions)?;
            let positions = insert_events(tx, tenant, &plan.rows(), now).await?;
            results.push(plan.finish(tenant, &positions, &mut found)?);
        }
        return Ok(results);
    }
    let mut plans = Vec::with_capacity(appends.len());
    for append in appends {
        plans.push(plan_stream(tenant, append, &found, &mut versions)?);
    }
    let rows: Vec<NewRow<'_>> = plans.iter().flat_map(StreamPlan::rows).collect();
    let positions = insert_events(tx, tenant, &rows, now).await?;
    for plan in plans {
        results.push(plan.finish(tenant, &positions, &mut found)?);
    }
    Ok(results)
}

/// An event to insert, with the version it gets.
struct NewRow<'a> {
    stream_id: &'a str,
    event: &'a NewEvent,
    version: u64,
    /// What the append expected and the stream's version before it: the
    /// conflict reported if the insert finds the version taken.
    expected: ExpectedVersion,
    current: u64,
}

/// One stream's part of [`append_all`] before its insert: what the log
/// already holds of its events, and the versions the others get.
struct StreamPlan<'a> {
    append: &'a StreamAppend,
    /// Per event: its (position, version) when the log holds it already.
    existing: Vec<Option<(i64, u64)>>,
    /// The events to insert, with their versions, in order.
    new: Vec<(&'a NewEvent, u64)>,
    /// A replay the log holds whole: the result, with nothing to insert.
    replayed: Option<AppendResult>,
    /// The stream's version before the append, and once its events are in.
    current: u64,
    version: u64,
}

/// Checks one stream's append against `found` and `versions` (what the log
/// holds so far in the transaction) and gives its new events their
/// versions; `versions` then counts them, so a later append to the same
/// stream in the call follows them.
fn plan_stream<'a>(
    tenant: &TenantId,
    append: &'a StreamAppend,
    found: &std::collections::HashMap<String, FoundRow>,
    versions: &mut std::collections::HashMap<String, u64>,
) -> Result<StreamPlan<'a>, EventStoreError> {
    let stream_id = append.stream_id.as_str();
    let events = &append.events;
    let mut existing = Vec::with_capacity(events.len());
    for event in events {
        existing.push(match found.get(&event.event_id.to_string()) {
            Some((row_tenant, row_stream, position, version)) => {
                if row_tenant != tenant.as_str() || row_stream != stream_id {
                    return Err(EventStoreError::EventIdTaken(event.event_id));
                }
                Some((*position, *version))
            }
            None => None,
        });
    }
    let current = versions.get(stream_id).copied().unwrap_or(0);
    let replayed = crate::check_stream(stream_id, append.expected, events, &existing, current)?;
    // Versions in the order of the events; duplicates keep theirs.
    let mut version = current;
    let mut new = Vec::with_capacity(events.len());
    if replayed.is_none() {
        for (event, found) in events.iter().zip(&existing) {
            if found.is_none() {
                version += 1;
                new.push((event, version));
            }
        }
        versions.insert(stream_id.to_owned(), version);
    }
    Ok(StreamPlan {
        append,
        existing,
        new,
        replayed,
        current,
        version,
    })
}

impl<'a> StreamPlan<'a> {
    fn rows(&self) -> Vec<NewRow<'a>> {
        self.new
            .iter()
            .map(|(event, version)| NewRow {
                stream_id: self.append.stream_id.as_str(),
                event,
                version: *version,
                expected: self.append.expected,
                current: self.current,
            })
            .collect()
    }

    /// The stream's result, its new events at the `positions` their
    /// insert returned; `found` learns them.
    fn finish(
        self,
        tenant: &TenantId,
        positions: &std::collections::HashMap<String, i64>,
        found: &mut std::collections::HashMap<String, FoundRow>,
    ) -> Result<AppendResult, EventStoreError> {
        if let Some(result) = self.replayed {
            return Ok(result);
        }
        let stream_id = self.append.stream_id.as_str();
        let mut appended = Vec::with_capacity(self.existing.len());
        let mut new = self.new.into_iter();
        for (event, was) in self.append.events.iter().zip(&self.existing) {
            let id = event.event_id.to_string();
            let (global_position, stream_version, duplicate) = match was {
                Some((position, version)) => (*position, *version, true),
                None => {
                    let (_, version) = new.next().expect("one new version per new event");
                    let position = *positions.get(&id).ok_or_else(|| {
                        EventStoreError::Corrupt("an inserted event returned no position".into())
                    })?;
                    found.insert(
                        id,
                        (
                            tenant.as_str().to_owned(),
                            stream_id.to_owned(),
                            position,
                            version,
                        ),
                    );
                    (position, version, false)
                }
            };
            appended.push(AppendedEvent {
                event_id: event.event_id,
                global_position,
                stream_version,
                duplicate,
            });
        }
        Ok(AppendResult {
            events: appended,
            stream_version: self.version,
        })
    }
}

/// Inserts `rows` in order, [`ROWS_PER_INSERT`] a statement, and returns
/// each one's position by event id. A unique violation (a version another
/// writer took, which the write lock rules out) is reported as the
/// conflict of the statement's first stream.
async fn insert_events(
    tx: &mut sqlx::SqliteConnection,
    tenant: &TenantId,
    rows: &[NewRow<'_>],
    now: i64,
) -> Result<std::collections::HashMap<String, i64>, EventStoreError> {
    let mut positions = std::collections::HashMap::with_capacity(rows.len());
    for chunk in rows.chunks(ROWS_PER_INSERT) {
        let values = vec!["(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"; chunk.len()].join(", ");
        let sql = format!(
            "INSERT INTO events (event_id, tenant_id, stream_id, stream_version, subject_id, \
             event_type, schema_version, actor, payload, metadata, recorded_at) \
             VALUES {values} RETURNING event_id, global_position"
        );
        let mut query = sqlx::query(&sql);
        for row in chunk {
            let event = row.event;
            let metadata = serde_json::to_string(&event.metadata)
                .map_err(|e| EventStoreError::Corrupt(e.to_string()))?;
            query = query
                .bind(event.event_id.to_string())
                .bind(tenant.as_str())
                .bind(row.stream_id)
                .bind(row.version as i64)
                .bind(event.subject.as_ref().map(SubjectId::as_str))
                .bind(&event.event_type)
                .bind(i64::from(event.schema_version))
                .bind(&event.metadata.actor)
                .bind(event.payload.to_string())
                .bind(metadata)
                .bind(now);
        }
        let inserted = query
            .fetch_all(&mut *tx)
            .await
            .map_err(|error| match &error {
                sqlx::Error::Database(db) if db.is_unique_violation() => {
                    EventStoreError::Conflict {
                        stream_id: chunk[0].stream_id.to_owned(),
                        expected: chunk[0].expected,
                        actual: chunk[0].current,
                    }
                }
                _ => backend(error),
            })?;
        for row in inserted {
            positions.insert(row.get("event_id"), row.get("global_position"));
        }
    }
    Ok(positions)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connection is handed out as it was returned, with no ping on the
    /// way, and a connection used before still answers.
    #[tokio::test]
    async fn the_pool_hands_out_connections_without_a_ping() {
        let dir = tempfile::tempdir().unwrap();
        let pool = connect(&dir.path().join("events.db")).await.unwrap();
        assert!(!pool.options().get_test_before_acquire());
        for _ in 0..3 {
            let one: i64 = sqlx::query_scalar("SELECT 1")
                .fetch_one(&pool)
                .await
                .unwrap();
            assert_eq!(one, 1);
        }
    }

    #[tokio::test]
    async fn every_connection_keeps_its_temporary_pages_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let pool = connect(&dir.path().join("events.db")).await.unwrap();
        // Held at once, so each is a connection of its own.
        let mut held = Vec::new();
        for _ in 0..3 {
            let mut connection = pool.acquire().await.unwrap();
            let store: i64 = sqlx::query_scalar("PRAGMA temp_store")
                .fetch_one(&mut *connection)
                .await
                .unwrap();
            assert_eq!(store, 2, "temp_store is not MEMORY");
            held.push(connection);
        }
    }

    /// A burst that a long read kept from being checkpointed grows the WAL
    /// file past the limit; once a checkpoint has taken it all in, the next
    /// commit cuts the file back.
    #[tokio::test]
    async fn the_wal_file_shrinks_back_to_its_limit_after_a_burst() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.db");
        let wal = dir.path().join("events.db-wal");
        let pool = connect(&path).await.unwrap();
        sqlx::query("CREATE TABLE burst (x BLOB)")
            .execute(&pool)
            .await
            .unwrap();
        // A reader's snapshot: no checkpoint may pass it.
        let mut reader = pool.acquire().await.unwrap();
        sqlx::query("BEGIN").execute(&mut *reader).await.unwrap();
        sqlx::query("SELECT COUNT(*) FROM burst")
            .execute(&mut *reader)
            .await
            .unwrap();
        const BLOB: i64 = 64 * 1024;
        for _ in 0..(WAL_SIZE_LIMIT + WAL_SIZE_LIMIT / 2) / BLOB {
            sqlx::query("INSERT INTO burst VALUES (randomblob(?))")
                .bind(BLOB)
                .execute(&pool)
                .await
                .unwrap();
        }
        let grown = std::fs::metadata(&wal).unwrap().len();
        assert!(grown > WAL_SIZE_LIMIT as u64, "the WAL grew to {grown}");

        sqlx::query("COMMIT").execute(&mut *reader).await.unwrap();
        drop(reader);
        let (busy, _, _): (i64, i64, i64) = sqlx::query_as("PRAGMA wal_checkpoint(PASSIVE)")
            .fetch_one(&pool)
            .await
            .unwrap();
        assert_eq!(busy, 0);
        // The next commit starts the WAL again from its beginning.
        sqlx::query("INSERT INTO burst VALUES (x'00')")
            .execute(&pool)
            .await
            .unwrap();
        let after = std::fs::metadata(&wal).unwrap().len();
        assert!(
            after <= WAL_SIZE_LIMIT as u64,
            "the WAL file kept {after} bytes (it had grown to {grown})"
        );
    }

    /// The `detail` column of an `EXPLAIN QUERY PLAN`'s rows.
    fn details(plan: Vec<sqlx::sqlite::SqliteRow>) -> Vec<String> {
        plan.iter()
            .map(|row| row.get::<String, _>("detail"))
            .collect()
    }

    /// The count of a tenant's events of a type since a time reads two
    /// indexes and no row: a day of a busy tenant's messages is counted
    /// without reading them.
    #[tokio::test]
    async fn a_count_since_a_time_reads_only_indexes() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir.path().join("events.db")).await.unwrap();
        let plan = details(
            sqlx::query(&format!("EXPLAIN QUERY PLAN {COUNT_SINCE}"))
                .bind("t")
                .bind("MessageReceived")
                .bind(0_i64)
                .fetch_all(&store.pool)
                .await
                .unwrap(),
        );
        let on_events: Vec<&String> = plan.iter().filter(|d| d.contains("events")).collect();
        assert_eq!(on_events.len(), 2, "{plan:?}");
        for index in ["events_tenant_type", "events_tenant_time"] {
            assert!(
                on_events
                    .iter()
                    .any(|d| d.starts_with(&format!("SEARCH events USING COVERING INDEX {index}"))),
                "{plan:?}"
            );
        }
    }

    /// The plan of a read-ahead over many streams: one index range per
    /// stream, never a scan of the tenant's events.
    #[tokio::test]
    async fn a_read_of_many_streams_after_versions_searches_one_range_per_stream() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir.path().join("events.db")).await.unwrap();
        let tenant = TenantId::parse("t").unwrap();
        let streams: Vec<(String, u64)> = (0..60).map(|i| (format!("memory-{i}"), 3)).collect();
        let plan = details(
            streams_after_query("EXPLAIN QUERY PLAN ", &tenant, &streams)
                .build()
                .fetch_all(&store.pool)
                .await
                .unwrap(),
        );
        let on_events: Vec<&String> = plan.iter().filter(|d| d.contains("events")).collect();
        assert_eq!(on_events.len(), 1, "{plan:?}");
        assert!(
            on_events[0].starts_with("SEARCH events USING")
                && on_events[0].contains("(tenant_id=? AND stream_id=? AND stream_version>?)"),
            "{plan:?}"
        );
    }
}
