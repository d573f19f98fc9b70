//! The relay's checkpoints in PostgreSQL (table `relay_checkpoints`,
//! `migrations/postgres/0004_consumer_state.sql`), written by the system
//! role: the relay already logs in as it for `read_all`, and the table
//! holds no tenant data, so the application role has no access to it.

use async_trait::async_trait;
use mnemo_pg::SystemPool;

use crate::relay::CheckpointStore;
use crate::BusError;

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
}
