//! A fresh, migrated database per test on the real server.
//!
//! `TEST_DATABASE_URL` names a superuser on the server (default
//! `postgres://postgres@127.0.0.1:5432/postgres`). Each [`TestDatabase`]
//! creates a uniquely named database owned by `mnemo_owner`, migrates it the
//! way `mnemo migrate` does (as the owner role), and drops it when dropped.
//! Databases left behind by killed runs are dropped by later runs once they
//! are two hours old (their name carries the creation time).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection, PgConnection, PgPool};

use crate::{SystemPool, TenantPool, APP_ROLE, OWNER_ROLE, SYSTEM_ROLE};

pub const DEFAULT_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";
const PREFIX: &str = "mnemo_test_";
const LEFTOVER_AGE: Duration = Duration::from_secs(2 * 60 * 60);

pub struct TestDatabase {
    name: String,
    /// The superuser on the server's maintenance database.
    maintenance: PgConnectOptions,
    /// The superuser on this test database.
    admin: PgConnectOptions,
    tenant: TenantPool,
    system: SystemPool,
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs()
}

impl TestDatabase {
    /// Creates and migrates a new database. Panics when the server cannot be
    /// reached: these tests need a real PostgreSQL.
    pub async fn new() -> TestDatabase {
        let db = Self::create(Some(OWNER_ROLE)).await;
        crate::migrate_with(db.admin.clone())
            .await
            .expect("migrate");
        db
    }

    /// A new database as `createdb` makes it for the superuser login: owned
    /// by that login, not by `mnemo_owner`, so on PostgreSQL 15+ the owner
    /// role may not create in its `public` schema. Not migrated: the test
    /// migrates it (the roles exist).
    pub async fn owned_by_the_login() -> TestDatabase {
        Self::create(None).await
    }

    async fn create(owner: Option<&str>) -> TestDatabase {
        let url = std::env::var("TEST_DATABASE_URL").unwrap_or_else(|_| DEFAULT_URL.to_owned());
        let maintenance = crate::options(&url).expect("TEST_DATABASE_URL is a postgres URL");
        let mut conn = PgConnection::connect_with(&maintenance)
            .await
            .unwrap_or_else(|e| panic!("cannot reach PostgreSQL at TEST_DATABASE_URL: {e}"));
        drop_leftovers(&mut conn).await;
        crate::ensure_roles(&mut conn).await.expect("roles");
        let suffix = uuid::Uuid::new_v4().simple().to_string();
        let name = format!("{PREFIX}{}_{}", now_secs(), &suffix[..12]);
        let owner = owner
            .map(|owner| format!(" OWNER {owner}"))
            .unwrap_or_default();
        sqlx::query(&format!("CREATE DATABASE {name}{owner}"))
            .execute(&mut conn)
            .await
            .expect("create test database");
        conn.close().await.ok();

        let admin = maintenance.clone().database(&name);
        let tenant = TenantPool::connect_with(as_role(&admin, APP_ROLE), 4)
            .await
            .expect("app pool");
        let system = SystemPool::connect_with(as_role(&admin, SYSTEM_ROLE), 2)
            .await
            .expect("system pool");
        TestDatabase {
            name,
            maintenance,
            admin,
            tenant,
            system,
        }
    }

    /// A URL logging in as `role` (no password: the test server trusts
    /// local logins), for processes and settings that take a URL.
    pub fn url_as(&self, role: &str) -> String {
        format!(
            "postgres://{role}@{}:{}/{}",
            self.admin.get_host(),
            self.admin.get_port(),
            self.name
        )
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// A pool of the application role.
    pub fn tenant_pool(&self) -> TenantPool {
        self.tenant.clone()
    }

    /// A pool of the system role.
    pub fn system_pool(&self) -> SystemPool {
        self.system.clone()
    }

    /// Connection options for this database as `role` (trust or the
    /// superuser's password, as the server is configured).
    pub fn options_as(&self, role: &str) -> PgConnectOptions {
        as_role(&self.admin, role)
    }

    /// The superuser's options for this database.
    pub fn admin_options(&self) -> PgConnectOptions {
        self.admin.clone()
    }

    /// A raw pool logged in as `role`, with no tenant set: for tests that
    /// probe what the database itself allows.
    pub async fn raw_pool(&self, role: &str) -> PgPool {
        PgPoolOptions::new()
            .max_connections(2)
            .connect_with(self.options_as(role))
            .await
            .expect("raw pool")
    }

    /// A raw connection as the superuser, `SET ROLE` to the owner, so a test
    /// can try what the tables' owner may do.
    pub async fn owner_connection(&self) -> PgConnection {
        let mut conn = PgConnection::connect_with(&self.admin)
            .await
            .expect("admin connection");
        sqlx::query(&format!("SET ROLE {OWNER_ROLE}"))
            .execute(&mut conn)
            .await
            .expect("set role owner");
        conn
    }
}

fn as_role(options: &PgConnectOptions, role: &str) -> PgConnectOptions {
    options.clone().username(role)
}

async fn drop_leftovers(conn: &mut PgConnection) {
    let names: Vec<String> = sqlx::query_scalar(
        "SELECT datname::text FROM pg_database WHERE datname LIKE 'mnemo\\_test\\_%'",
    )
    .fetch_all(&mut *conn)
    .await
    .unwrap_or_default();
    let cutoff = now_secs().saturating_sub(LEFTOVER_AGE.as_secs());
    for name in names {
        let created = name[PREFIX.len()..]
            .split('_')
            .next()
            .and_then(|secs| secs.parse::<u64>().ok());
        if created.is_some_and(|created| created < cutoff) {
            // Another run may drop it at the same moment: best effort.
            if let Err(error) = sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                .execute(&mut *conn)
                .await
            {
                tracing::warn!(database = %name, %error, "could not drop a leftover test database");
            }
        }
    }
}

impl Drop for TestDatabase {
    /// Drops the database from a thread of its own: `Drop` cannot await,
    /// and the test's runtime may be shutting down. `WITH (FORCE)` ends the
    /// pools' connections first. Best effort: a failure leaves a database
    /// that a later run removes.
    fn drop(&mut self) {
        let name = self.name.clone();
        let admin = self.maintenance.clone();
        let handle = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async move {
                let mut conn = PgConnection::connect_with(&admin).await?;
                sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                    .execute(&mut conn)
                    .await?;
                conn.close().await
            })
        });
        if let Ok(Err(error)) = handle.join() {
            tracing::warn!(database = %self.name, %error, "could not drop the test database");
        }
    }
}
