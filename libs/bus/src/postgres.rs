//! The relay's checkpoints in PostgreSQL (table `relay_checkpoints`,
//! `migrations/postgres/0004_consumer_state.sql`), written by the system
//! role: the relay already logs in as it for `read_all`, and the table
//! holds no tenant data, so the application role has no access to it.

use async_trait::async_trait;
use mnemo_pg::SystemPool;

use std::time::Duration;

use sqlx::pool::PoolConnection;
use sqlx::Postgres;

use crate::relay::{CheckpointStore, Leadership};
use crate::BusError;

/// A session-level advisory lock, held by the connection it was taken on:
/// the connection leaves the pool with it and closing it (drop, or the
/// process dying) releases the lock, so a crashed relay never blocks the
/// others for long.
struct AdvisoryLock {
    _connection: sqlx::PgConnection,
}

impl Leadership for AdvisoryLock {}

/// How often a waiting relay asks for the lock again.
const LEAD_RETRY: Duration = Duration::from_secs(1);

#[derive(Clone)]
pub struct PostgresCheckpointStore {
    pool: SystemPool,
}

impl PostgresCheckpointStore {
    pub fn new(pool: SystemPool) -> Self {
        PostgresCheckpointStore { pool }
    }
}

fn backend(error: sqlx::Error) -> BusError {
    BusError::Backend(error.to_string())
}

#[async_trait]
impl CheckpointStore for PostgresCheckpointStore {
    async fn load(&self, name: &str) -> Result<i64, BusError> {
        let position: Option<i64> =
            sqlx::query_scalar("SELECT position FROM relay_checkpoints WHERE name = $1")
                .bind(name)
                .fetch_optional(self.pool.pool())
                .await
                .map_err(backend)?;
        Ok(position.unwrap_or(0))
    }

    /// Never moves a checkpoint back: a slow relay instance that saves an
    /// older position after a newer one cannot cause a republish storm.
    async fn save(&self, name: &str, position: i64) -> Result<(), BusError> {
        sqlx::query(
            "INSERT INTO relay_checkpoints (name, position) VALUES ($1, $2) \
             ON CONFLICT (name) DO UPDATE \
             SET position = GREATEST(relay_checkpoints.position, excluded.position)",
        )
        .bind(name)
        .bind(position)
        .execute(self.pool.pool())
        .await
        .map_err(backend)?;
        Ok(())
    }

    /// One relay per name across every process on this database (e.g.
    /// several ingest replicas): a `pg_try_advisory_lock` on a connection
    /// taken out of the pool for as long as the leadership lasts.
    async fn lead(&self, name: &str) -> Result<Box<dyn Leadership>, BusError> {
        let mut waiting_logged = false;
        loop {
            let mut connection: PoolConnection<Postgres> =
                self.pool.pool().acquire().await.map_err(backend)?;
            let granted: bool = sqlx::query_scalar(
                "SELECT pg_try_advisory_lock(hashtextextended('mnemo.relay.' || $1, 0))",
            )
            .bind(name)
            .fetch_one(&mut *connection)
            .await
            .map_err(backend)?;
            if granted {
                return Ok(Box::new(AdvisoryLock {
                    _connection: connection.detach(),
                }));
            }
            drop(connection);
            if !waiting_logged {
                tracing::info!(relay = name, "another process runs this relay; standing by");
                waiting_logged = true;
            }
            tokio::time::sleep(LEAD_RETRY).await;
        }
    }
}
