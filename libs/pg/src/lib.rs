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
    /// The owner role may not create the tables, and the login cannot
    /// grant it: the operator has to (the message says how).
    #[error(
        "{role} may not create tables in schema {schema} of this database (since PostgreSQL 15 \
         only the database owner may, unless granted), and this login cannot grant it{cause}: \
         as the database owner or a superuser run `GRANT USAGE, CREATE ON SCHEMA {schema} TO {role}`, \
         or make {role} the owner (`ALTER DATABASE <name> OWNER TO {role}`), then migrate again"
    )]
    CannotCreateTables {
        role: String,
        schema: String,
        /// Why the grant failed, as ` (...)`; empty when none was tried.
        cause: String,
    },
}

impl PgError {
    /// A stable code for logs.
    pub fn code(&self) -> &'static str {
        match self {
            PgError::Database(_) => "postgres_failed",
            PgError::Migrate(_) => "postgres_migration_failed",
            PgError::UnsafeRole { .. } => "postgres_unsafe_role",
            PgError::CannotSetRole { .. } => "postgres_cannot_set_role",
            PgError::CannotCreateTables { .. } => "postgres_cannot_create_tables",
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
/// `CREATEROLE`). The tables go into the first schema of the search path,
/// `public` by default; when `mnemo_owner` may not create there (a database
/// that another login owns, on PostgreSQL 15 or newer), the login grants it
/// that (see [`allow_the_owner_to_create`]).
pub async fn migrate(owner_url: &str) -> Result<(), PgError> {
    migrate_with(options(owner_url)?).await
}

pub async fn migrate_with(options: PgConnectOptions) -> Result<(), PgError> {
    let mut conn = PgConnection::connect_with(&options).await?;
    ensure_roles(&mut conn).await?;
    let current: String = sqlx::query_scalar("SELECT current_user::text")
        .fetch_one(&mut conn)
        .await?;
    let switches = current != OWNER_ROLE;
    if switches {
        // Objects are owned by whoever creates them: the tables must belong
        // to the owner role, not to an administrator's login.
        set_owner_role(&mut conn).await?;
    }
    allow_the_owner_to_create(&mut conn, switches).await?;
    MIGRATOR.run(&mut conn).await?;
    conn.close().await?;
    Ok(())
}

async fn set_owner_role(conn: &mut PgConnection) -> Result<(), PgError> {
    sqlx::query(&format!("SET ROLE {OWNER_ROLE}"))
        .execute(&mut *conn)
        .await
        .map_err(|source| PgError::CannotSetRole {
            role: OWNER_ROLE.to_owned(),
            source,
        })?;
    Ok(())
}

/// Makes sure `mnemo_owner` (the current role) may create the tables in the
/// schema they go into.
///
/// PostgreSQL 15 revoked `CREATE` on `public` from every role: only the
/// database owner (and superusers) may create there. A database made by
/// `createdb` as an administrator belongs to that administrator, so the
/// owner role could not create its first table. The login that migrates
/// then grants `mnemo_owner` `USAGE, CREATE` on that one schema, which it
/// may do as a superuser or as the database owner (PostgreSQL 15's `public`
/// belongs to `pg_database_owner`). A grant rather than handing over the
/// schema or the database: the narrowest privilege that lets the migrations
/// run; nothing else changes hands, and the app and system roles still may
/// create nothing. A database that `mnemo_owner` owns, or a schema it owns
/// (the compose deployment's), needs no grant, and none is made.
///
/// `switched`: the connection logged in as another role and `SET ROLE` to
/// the owner; the grant is made as that login. Logged in as `mnemo_owner`
/// itself there is nobody to grant it: the error says what to run.
async fn allow_the_owner_to_create(conn: &mut PgConnection, switched: bool) -> Result<(), PgError> {
    // current_schema() skips the search path's schemas that do not exist or
    // that the role may not use: NULL when none is left.
    let (schema, may_create): (Option<String>, Option<bool>) = sqlx::query_as(
        "SELECT current_schema()::text, has_schema_privilege(current_schema(), 'CREATE')",
    )
    .fetch_one(&mut *conn)
    .await?;
    if may_create == Some(true) {
        return Ok(());
    }
    let cannot = |schema: &str, cause: String| PgError::CannotCreateTables {
        role: OWNER_ROLE.to_owned(),
        schema: schema.to_owned(),
        cause,
    };
    // With no usable schema, the default one is what to grant.
    let schema = schema.unwrap_or_else(|| "public".to_owned());
    if !switched {
        return Err(cannot(&schema, String::new()));
    }
    sqlx::query("RESET ROLE").execute(&mut *conn).await?;
    let grant: String = sqlx::query_scalar(
        "SELECT format('GRANT USAGE, CREATE ON SCHEMA %I TO %I', $1::text, $2::text)",
    )
    .bind(&schema)
    .bind(OWNER_ROLE)
    .fetch_one(&mut *conn)
    .await?;
    if let Err(error) = sqlx::query(&grant).execute(&mut *conn).await {
        return Err(cannot(&schema, format!(" ({error})")));
    }
    set_owner_role(conn).await?;
    // A login with some privilege on the schema but no grant option gets
    // a warning, not an error, and grants nothing: look again.
    let granted: Option<bool> =
        sqlx::query_scalar("SELECT has_schema_privilege(current_schema(), 'CREATE')")
            .fetch_one(&mut *conn)
            .await?;
    match granted {
        Some(true) => Ok(()),
        _ => Err(cannot(
            &schema,
            " (the grant changed nothing: this login holds no grant option on it)".to_owned(),
        )),
    }
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
