//! What mnemo's PostgreSQL adapters share: the roles, the migrations, a pool
//! per role, and the tenant-scoped transaction.
//!
//! Tenant isolation is enforced twice: every adapter call takes a tenant and
//! filters by it, and the database's row-level security (forced, so even
//! the tables' owner is subject to it) shows a session only the rows of the
//! tenant named in its transaction's `app.tenant_id` setting. The only way
//! repository code reaches tenant tables is [`TenantPool::begin`], which sets
//! that first; a connection without it sees nothing and can insert nothing.
//!
//! Three roles (created by [`migrate`] when missing, see `docs/postgres.md`):
//!
//! - [`OWNER_ROLE`] owns the schema and runs migrations. It is not a
//!   superuser, so forced row-level security means something for it too.
//! - [`APP_ROLE`] is what the services log in as: `SELECT`/`INSERT`/... only
//!   on what they use, never the owner, never `BYPASSRLS`.
//! - [`SYSTEM_ROLE`] is what the relay and the cross-tenant passes log in
//!   as: it may read every tenant's rows of a few tables (policies
//!   `FOR SELECT TO mnemo_system`), and write nothing of a tenant. The app
//!   role is not a member of it, so no tenant session can switch it on.

use std::str::FromStr;

use mnemo_domain::TenantId;
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection, PgConnection, PgPool, Postgres, Transaction};

#[cfg(feature = "testsupport")]
pub mod testsupport;

/// Owns the tables; migrations run as this role.
pub const OWNER_ROLE: &str = "mnemo_owner";
/// The services' login: tenant-scoped access only.
pub const APP_ROLE: &str = "mnemo_app";
/// The relay's and the cross-tenant passes' login: narrow system reads.
pub const SYSTEM_ROLE: &str = "mnemo_system";

/// The transaction-local setting the row-level security policies read.
pub const TENANT_SETTING: &str = "app.tenant_id";

#[derive(Debug, thiserror::Error)]
pub enum PgError {
    #[error("postgres: {0}")]
    Database(#[from] sqlx::Error),
    #[error("postgres migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// A superuser or BYPASSRLS role would ignore row-level security
    /// silently: refused rather than trusted.
    #[error(
        "role {role} bypasses row-level security (superuser or BYPASSRLS): refused for {purpose}"
    )]
    UnsafeRole { role: String, purpose: &'static str },
    #[error("cannot act as {role}: connect as {role} or as a member of it ({source})")]
    CannotSetRole { role: String, source: sqlx::Error },
}

impl PgError {
    /// A stable code for logs.
    pub fn code(&self) -> &'static str {
        match self {
            PgError::Database(_) => "postgres_failed",
            PgError::Migrate(_) => "postgres_migration_failed",
            PgError::UnsafeRole { .. } => "postgres_unsafe_role",
            PgError::CannotSetRole { .. } => "postgres_cannot_set_role",
        }
    }
}

/// Parses a `postgres://` URL into connection options.
pub fn options(url: &str) -> Result<PgConnectOptions, PgError> {
    Ok(PgConnectOptions::from_str(url)?)
}

/// A pool logged in as the application role. Its only way to a connection
/// is [`TenantPool::begin`], so every statement runs under a tenant.
#[derive(Clone, Debug)]
pub struct TenantPool {
    pool: PgPool,
}

impl TenantPool {
    /// Connects as the role in `app_url` (normally `mnemo_app`) and refuses
    /// a role that would bypass row-level security.
    pub async fn connect(app_url: &str, max_connections: u32) -> Result<Self, PgError> {
        Self::connect_with(options(app_url)?, max_connections).await
    }

    pub async fn connect_with(
        options: PgConnectOptions,
        max_connections: u32,
    ) -> Result<Self, PgError> {
        let pool = PgPoolOptions::new()
            .max_connections(max_connections)
            .connect_with(options)
            .await?;
        refuse_rls_bypass(&pool, "tenant-scoped access").await?;
        Ok(TenantPool { pool })
    }

    /// Begins a transaction scoped to `tenant`: `app.tenant_id` is set for
    /// this transaction only (`set_config(..., true)`), so it cannot leak to
    /// the next user of the pooled connection, commit or rollback.
    pub async fn begin(
        &self,
        tenant: &TenantId,
    ) -> Result<Transaction<'static, Postgres>, PgError> {
        let mut tx = self.pool.begin().await?;
        set_tenant(&mut tx, tenant).await?;
        Ok(tx)
    }

    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// The same tenant-scoped transaction on a connection of one's own (tests
/// that probe the database, tools).
pub async fn begin_tenant<'c>(
    conn: &'c mut PgConnection,
    tenant: &TenantId,
) -> Result<Transaction<'c, Postgres>, PgError> {
    let mut tx = conn.begin().await?;
    set_tenant(&mut tx, tenant).await?;
    Ok(tx)
}

/// Always the first statement of a tenant transaction.
async fn set_tenant(tx: &mut PgConnection, tenant: &TenantId) -> Result<(), PgError> {
    sqlx::query("SELECT set_config($1, $2, true)")
        .bind(TENANT_SETTING)
        .bind(tenant.as_str())
        .execute(tx)
        .await?;
    Ok(())
}

/// A pool logged in as the system role, for the few reads across tenants
/// (the relay's `read_all`, the forgetter's subject scan, the
/// consolidator's idle scan) and the relay's checkpoints.
#[derive(Clone, Debug)]
pub struct SystemPool {
    pool: PgPool,
}

impl SystemPool {
    pub async fn connect(system_url: &str, max_connections: u32) -> Result<Self, PgError> {
        Self::connect_with(options(system_url)?, max_connections).await
    }

    pub async fn connect_with(
        options: PgConnectOptions,
        max_connections: u32,
    ) -> Result<Self, PgError> {
        let pool = PgPoolOptions::new()
            .max_connections(max_connections)
            .connect_with(options)
            .await?;
        refuse_rls_bypass(&pool, "system access").await?;
        Ok(SystemPool { pool })
    }

    /// The pool itself: the system role's grants and policies are what
    /// keep it narrow, not the Rust type.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    pub async fn acquire(&self) -> Result<PoolConnection<Postgres>, PgError> {
        Ok(self.pool.acquire().await?)
    }

    pub async fn close(&self) {
        self.pool.close().await;
    }
}

async fn refuse_rls_bypass(pool: &PgPool, purpose: &'static str) -> Result<(), PgError> {
    let (role, bypasses): (String, bool) = sqlx::query_as(
        "SELECT rolname::text, rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user",
    )
    .fetch_one(pool)
    .await?;
    if bypasses {
        return Err(PgError::UnsafeRole { role, purpose });
    }
    Ok(())
}

/// The migrations under `migrations/postgres/`.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations/postgres");

/// Creates the roles when missing, then applies the migrations as
/// [`OWNER_ROLE`]. `owner_url` logs in as `mnemo_owner` or as a role that
/// may `SET ROLE mnemo_owner` (and, if the roles do not exist yet, has
/// `CREATEROLE`). The database should be owned by `mnemo_owner` (it creates
/// tables in the `public` schema).
pub async fn migrate(owner_url: &str) -> Result<(), PgError> {
    migrate_with(options(owner_url)?).await
}

pub async fn migrate_with(options: PgConnectOptions) -> Result<(), PgError> {
    let mut conn = PgConnection::connect_with(&options).await?;
    ensure_roles(&mut conn).await?;
    let current: String = sqlx::query_scalar("SELECT current_user::text")
        .fetch_one(&mut conn)
        .await?;
    if current != OWNER_ROLE {
        // Objects are owned by whoever creates them: the tables must belong
        // to the owner role, not to an administrator's login.
        sqlx::query(&format!("SET ROLE {OWNER_ROLE}"))
            .execute(&mut conn)
            .await
            .map_err(|source| PgError::CannotSetRole {
                role: OWNER_ROLE.to_owned(),
                source,
            })?;
    }
    MIGRATOR.run(&mut conn).await?;
    conn.close().await?;
    Ok(())
}

/// Creates the three roles if they do not exist, and refuses to go on if an
/// existing one bypasses row-level security. Roles are global to the
/// cluster, so several databases (and parallel tests) may race here: a
/// concurrent creation is taken as success.
pub async fn ensure_roles(conn: &mut PgConnection) -> Result<(), PgError> {
    for (role, attributes) in [
        (OWNER_ROLE, "NOLOGIN"),
        (APP_ROLE, "LOGIN"),
        (SYSTEM_ROLE, "LOGIN"),
    ] {
        ensure_role(conn, role, attributes).await?;
    }
    Ok(())
}

/// Creates one role unless it exists (racing creators are fine), then
/// refuses it if it bypasses row-level security. `role` must be a plain
/// identifier; it is not quoted.
pub async fn ensure_role(
    conn: &mut PgConnection,
    role: &str,
    attributes: &str,
) -> Result<(), PgError> {
    let exists: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)")
            .bind(role)
            .fetch_one(&mut *conn)
            .await?;
    if !exists {
        // Two sessions creating the same role: the second waits on the
        // unique index and fails with unique_violation, or sees it and
        // fails with duplicate_object; both mean "it exists now".
        sqlx::raw_sql(&format!(
            "DO $$ BEGIN \
               CREATE ROLE {role} {attributes} NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE; \
             EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; \
             END $$"
        ))
        .execute(&mut *conn)
        .await?;
    }
    let bypasses: bool =
        sqlx::query_scalar("SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = $1")
            .bind(role)
            .fetch_one(&mut *conn)
            .await?;
    if bypasses {
        return Err(PgError::UnsafeRole {
            role: role.to_owned(),
            purpose: "a mnemo role",
        });
    }
    Ok(())
}
