//! The stores behind the ports, the sealed log over them, and the master
//! key that seals it.

use std::sync::Arc;

use anyhow::Context;
use async_trait::async_trait;
use mnemo_bus::in_process::InProcessBus;
use mnemo_bus::relay::SqliteCheckpointStore;
use mnemo_bus::CheckpointStore;
use mnemo_config::Settings;
use mnemo_consolidator::buffer::{MessageBuffer, SqliteMessageBuffer};
use mnemo_crypto::{MasterKey, SqliteSubjectKeyStore, SubjectCipher, SubjectKeyStore};
use mnemo_event_store::sealed::SealedLog;
use mnemo_event_store::sqlite::{self, SqliteEventStore};
use mnemo_event_store::EventStore;
use mnemo_forgetter::usage::{SqliteUsageStore, UsageStore};
use mnemo_http::health::Readiness;
use mnemo_read_model::sqlite::SqliteMemoryReadModel;
use mnemo_read_model::MemoryReadModel;
use secrecy::ExposeSecret;
use sqlx::SqlitePool;

/// The stores behind the ports: SQLite in the data dir (embedded) or
/// PostgreSQL (`MNEMO_DATABASE_URL`, scale-out).
pub struct Stores {
    pub store: Arc<dyn EventStore>,
    pub keys: Arc<dyn SubjectKeyStore>,
    /// The process's one cipher over `keys`: the sealed log and the read
    /// model share it, so an erasure through the log evicts the keys the
    /// read model opens rows with, and its cache serves both.
    pub cipher: Arc<SubjectCipher>,
    pub checkpoints: Arc<dyn CheckpointStore>,
    pub read_model: Arc<dyn MemoryReadModel>,
    pub buffer: Arc<dyn MessageBuffer>,
    pub usage: Arc<dyn UsageStore>,
    /// The log and the read model for the HTTP API's handlers (ingest,
    /// search, reads): in the embedded mode on connections of their own,
    /// whose threads have the request threads' priority, while `store`'s
    /// and every other store's run at the background runtime's
    /// (`crate::runtime`); the same stores as above on PostgreSQL, whose
    /// connections have no threads.
    pub requests: RequestStores,
    backend: Backend,
}

/// See [`Stores::requests`].
pub struct RequestStores {
    pub store: Arc<dyn EventStore>,
    pub read_model: Arc<dyn MemoryReadModel>,
}

/// Connections of the embedded database kept for the HTTP API's handlers:
/// enough for both of actix-web's worker threads to have statements under
/// way, and for a search's and a post's at once.
pub const REQUEST_CONNECTIONS: u32 = 4;

enum Backend {
    Sqlite {
        /// The pipeline's (and the sweeps', the relay's, the bus's).
        pool: SqlitePool,
        /// The HTTP API's ([`Stores::requests`]).
        requests: SqlitePool,
    },
    Postgres {
        tenant: mnemo_pg::TenantPool,
        system: mnemo_pg::SystemPool,
    },
}

impl Stores {
    pub async fn open(settings: &Settings, master: Arc<MasterKey>) -> anyhow::Result<Self> {
        match &settings.database {
            None => {
                let path = settings.database_file();
                // Opened by a task of the runtime this is called on: in a
                // server, on one of its lowered background threads, which
                // the connections' threads take their priority from. What
                // calls this (on the thread that builds the server) opens
                // the request connections, at the request threads'.
                let pool = tokio::spawn({
                    let path = path.clone();
                    async move { sqlite::connect(&path).await }
                })
                .await
                .context("the task opening the database failed")?
                .context("cannot open the database")?;
                let requests = sqlite::open_pool(&path, REQUEST_CONNECTIONS)
                    .await
                    .context("cannot open the database for requests")?;
                let keys: Arc<dyn SubjectKeyStore> =
                    Arc::new(SqliteSubjectKeyStore::new(pool.clone(), master));
                let cipher = Arc::new(SubjectCipher::new(keys.clone()));
                let store = SqliteEventStore::new(pool.clone()).await?;
                Ok(Stores {
                    requests: RequestStores {
                        store: Arc::new(store.on_pool(requests.clone())),
                        read_model: Arc::new(SqliteMemoryReadModel::new(
                            requests.clone(),
                            cipher.clone(),
                        )),
                    },
                    store: Arc::new(store),
                    keys,
                    cipher: cipher.clone(),
                    checkpoints: Arc::new(SqliteCheckpointStore::new(pool.clone())),
                    read_model: Arc::new(SqliteMemoryReadModel::new(pool.clone(), cipher)),
                    buffer: Arc::new(SqliteMessageBuffer::new(pool.clone())),
                    usage: Arc::new(SqliteUsageStore::new(pool.clone())),
                    backend: Backend::Sqlite { pool, requests },
                })
            }
            Some(database) => {
                let app_url = database.url.expose_secret();
                let system_url = match &database.system_url {
                    Some(url) => url.expose_secret().to_owned(),
                    None => with_user(app_url, mnemo_pg::SYSTEM_ROLE)?,
                };
                let tenant = mnemo_pg::TenantPool::connect(app_url, database.max_connections)
                    .await
                    .context("cannot connect to PostgreSQL as the application role")?;
                // The relay's notification listener holds one connection.
                let system = mnemo_pg::SystemPool::connect(&system_url, 4)
                    .await
                    .context("cannot connect to PostgreSQL as the system role")?;
                let keys: Arc<dyn SubjectKeyStore> = Arc::new(
                    mnemo_crypto::PostgresSubjectKeyStore::new(tenant.clone(), master),
                );
                let cipher = Arc::new(SubjectCipher::new(keys.clone()));
                let store: Arc<dyn EventStore> =
                    Arc::new(mnemo_event_store::postgres::PostgresEventStore::new(
                        tenant.clone(),
                        system.clone(),
                    ));
                let read_model: Arc<dyn MemoryReadModel> =
                    Arc::new(mnemo_read_model::postgres::PostgresMemoryReadModel::new(
                        tenant.clone(),
                        system.clone(),
                        cipher.clone(),
                    ));
                Ok(Stores {
                    requests: RequestStores {
                        store: store.clone(),
                        read_model: read_model.clone(),
                    },
                    store,
                    keys,
                    cipher,
                    checkpoints: Arc::new(mnemo_bus::postgres::PostgresCheckpointStore::new(
                        system.clone(),
                    )),
                    read_model,
                    buffer: Arc::new(mnemo_consolidator::buffer::PostgresMessageBuffer::new(
                        tenant.clone(),
                        system.clone(),
                    )),
                    usage: Arc::new(mnemo_forgetter::usage::PostgresUsageStore::new(
                        tenant.clone(),
                    )),
                    backend: Backend::Postgres { tenant, system },
                })
            }
        }
    }

    /// The SQLite database the stores live in (embedded mode), for the
    /// erasure step that truncates its write-ahead log.
    pub fn sqlite_pool(&self) -> Option<SqlitePool> {
        match &self.backend {
            Backend::Sqlite { pool, .. } => Some(pool.clone()),
            Backend::Postgres { .. } => None,
        }
    }

    /// The PostgreSQL pools the stores use (scale-out), for tools that
    /// query the tables themselves (`mnemo verify-erasure`).
    pub fn postgres_pools(&self) -> Option<(&mnemo_pg::TenantPool, &mnemo_pg::SystemPool)> {
        match &self.backend {
            Backend::Sqlite { .. } => None,
            Backend::Postgres { tenant, system } => Some((tenant, system)),
        }
    }

    /// The in-process bus keeps its topics in SQLite: the data dir's
    /// database, also when the log is in PostgreSQL (one process only).
    /// With the log in that database, the relay's checkpoint is too
    /// (`checkpoints`), and the bus moves it with each batch it publishes.
    pub async fn in_process_bus(&self, settings: &Settings) -> anyhow::Result<InProcessBus> {
        Ok(match &self.backend {
            Backend::Sqlite { pool, .. } => {
                InProcessBus::keeping_relay_checkpoints(pool.clone(), settings.bus_partitions)
            }
            Backend::Postgres { .. } => {
                std::fs::create_dir_all(&settings.data_dir)?;
                let pool = sqlite::connect(&settings.database_file()).await?;
                InProcessBus::new(pool, settings.bus_partitions)
            }
        })
    }

    pub async fn close(&self) {
        match &self.backend {
            Backend::Sqlite { pool, requests } => {
                requests.close().await;
                pool.close().await;
            }
            Backend::Postgres { tenant, system } => {
                tenant.close().await;
                system.close().await;
            }
        }
    }
}

#[async_trait]
impl Readiness for Stores {
    async fn check(&self) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        match &self.backend {
            Backend::Sqlite { pool, requests } => {
                sqlx::query("SELECT 1").execute(pool).await?;
                sqlx::query("SELECT 1").execute(requests).await?;
            }
            Backend::Postgres { system, .. } => {
                sqlx::query("SELECT 1").execute(system.pool()).await?;
            }
        }
        Ok(())
    }
}

/// `postgres://app@host/db` → `postgres://mnemo_system@host/db` (same host,
/// database and options; no password: give `MNEMO_DATABASE_SYSTEM_URL`
/// when the system role needs one).
fn with_user(url: &str, user: &str) -> anyhow::Result<String> {
    let (scheme, rest) = url
        .split_once("://")
        .context("the database URL has no scheme")?;
    let host_and_rest = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    Ok(format!("{scheme}://{user}@{host_and_rest}"))
}

/// The event log, opened for a tool running beside (or instead of) the
/// server, with the stores it lives in (close them when done).
pub async fn open_log(settings: &Settings) -> anyhow::Result<(SealedLog, Stores)> {
    let master = Arc::new(load_master_key(settings)?);
    let stores = Stores::open(settings, master).await?;
    let log = SealedLog::new(stores.store.clone(), stores.cipher.clone());
    Ok((log, stores))
}

/// Loads the configured master key, or the data dir's (created on first start).
pub fn load_master_key(settings: &Settings) -> anyhow::Result<MasterKey> {
    if let Some(encoded) = &settings.master_key {
        return MasterKey::from_base64(encoded.expose_secret()).context("invalid master key");
    }
    // Processes sharing PostgreSQL must share one key; a key generated per
    // host would make every other host's subject content unreadable.
    anyhow::ensure!(
        settings.database.is_none(),
        "set MNEMO_MASTER_KEY (base64, 32 bytes): services sharing PostgreSQL need one master key"
    );
    let path = settings.master_key_file();
    let (key, created) = MasterKey::load_or_generate(&path)
        .with_context(|| format!("cannot load master key {}", path.display()))?;
    if created {
        tracing::warn!(path = %path.display(), "generated a new master key (mode 0600); back it up: without it no subject content can be read");
    } else {
        tracing::info!(path = %path.display(), key_id = %key.id(), "loaded master key");
    }
    Ok(key)
}
