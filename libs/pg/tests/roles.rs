//! The roles and the tenant-scoped transaction on a real server.

use mnemo_domain::TenantId;
use mnemo_pg::testsupport::TestDatabase;
use mnemo_pg::{PgError, SystemPool, TenantPool, APP_ROLE, OWNER_ROLE, SYSTEM_ROLE};
use sqlx::{Connection, PgConnection};

#[tokio::test]
async fn roles_are_neither_superusers_nor_bypass_rls_and_the_app_owns_nothing() {
    let db = TestDatabase::new().await;
    let admin = db.raw_pool("postgres").await;
    for role in [OWNER_ROLE, APP_ROLE, SYSTEM_ROLE] {
        let (superuser, bypass): (bool, bool) =
            sqlx::query_as("SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = $1")
                .bind(role)
                .fetch_one(&admin)
                .await
                .unwrap();
        assert!(!superuser && !bypass, "{role}");
    }
    let owners: Vec<String> = sqlx::query_scalar(
        "SELECT DISTINCT tableowner::text FROM pg_tables WHERE schemaname = 'public'",
    )
    .fetch_all(&admin)
    .await
    .unwrap();
    assert_eq!(owners, vec![OWNER_ROLE.to_owned()]);
    // Every table with a tenant_id column has forced row-level security.
    let unprotected: Vec<String> = sqlx::query_scalar(
        "SELECT c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
         WHERE n.nspname = 'public' AND c.relkind = 'r' \
         AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'tenant_id') \
         AND NOT (c.relrowsecurity AND c.relforcerowsecurity)",
    )
    .fetch_all(&admin)
    .await
    .unwrap();
    assert!(unprotected.is_empty(), "{unprotected:?}");
}

#[tokio::test]
async fn the_tenant_setting_lives_for_one_transaction_only() {
    let db = TestDatabase::new().await;
    let mut conn = PgConnection::connect_with(&db.options_as(APP_ROLE))
        .await
        .unwrap();
    let setting = "SELECT current_setting('app.tenant_id', true)";
    let mut tx = mnemo_pg::begin_tenant(&mut conn, &TenantId::parse("t1").unwrap())
        .await
        .unwrap();
    let inside: Option<String> = sqlx::query_scalar(setting)
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    assert_eq!(inside.as_deref(), Some("t1"));
    tx.commit().await.unwrap();
    // The same connection afterwards, as the next user of a pool gets it.
    let after: Option<String> = sqlx::query_scalar(setting)
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert!(after.as_deref().unwrap_or("").is_empty(), "{after:?}");
}

#[tokio::test]
async fn pools_refuse_a_role_that_bypasses_row_level_security() {
    let db = TestDatabase::new().await;
    let superuser = db.admin_options();
    let tenant = TenantPool::connect_with(superuser.clone(), 1).await;
    assert!(
        matches!(tenant, Err(PgError::UnsafeRole { .. })),
        "{tenant:?}"
    );
    let system = SystemPool::connect_with(superuser, 1).await;
    assert!(
        matches!(system, Err(PgError::UnsafeRole { .. })),
        "{system:?}"
    );
}

#[tokio::test]
async fn migrating_again_is_a_no_op() {
    let db = TestDatabase::new().await;
    mnemo_pg::migrate_with(db.admin_options()).await.unwrap();
}

/// The grant matrix, whole: a new grant is a decision, made here too.
#[tokio::test]
async fn the_app_and_system_roles_hold_exactly_the_privileges_they_need() {
    let db = TestDatabase::new().await;
    let admin = db.raw_pool("postgres").await;
    let tables: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT grantee::text, table_name::text, string_agg(privilege_type::text, ',' ORDER BY privilege_type) \
         FROM information_schema.table_privileges \
         WHERE grantee IN ('mnemo_app', 'mnemo_system') AND table_schema = 'public' \
         GROUP BY grantee, table_name ORDER BY grantee, table_name",
    )
    .fetch_all(&admin)
    .await
    .unwrap();
    let tables: Vec<String> = tables
        .into_iter()
        .map(|(role, table, privileges)| format!("{role} {table} {privileges}"))
        .collect();
    assert_eq!(
        tables,
        vec![
            "mnemo_app consolidation_buffer DELETE,INSERT,SELECT,UPDATE",
            "mnemo_app events INSERT,SELECT",
            "mnemo_app memories DELETE,INSERT,SELECT,UPDATE",
            "mnemo_app memory_usage DELETE,INSERT,SELECT,UPDATE",
            // Append-only: a tombstone keeps a destroyed key's generation.
            "mnemo_app subject_key_tombstones INSERT,SELECT",
            "mnemo_app subject_keys DELETE,INSERT,SELECT",
            "mnemo_system events SELECT",
            "mnemo_system relay_checkpoints INSERT,SELECT,UPDATE",
        ]
    );
    // Column grants of the system role on tables it may only scan.
    let columns: Vec<String> = sqlx::query_scalar(
        "SELECT table_name || '.' || column_name FROM information_schema.column_privileges \
         WHERE grantee = 'mnemo_system' AND table_name IN ('memories', 'consolidation_buffer') \
         ORDER BY 1",
    )
    .fetch_all(&admin)
    .await
    .unwrap();
    assert_eq!(
        columns,
        vec![
            "consolidation_buffer.buffered_at",
            "consolidation_buffer.done",
            "consolidation_buffer.session_id",
            "consolidation_buffer.subject_id",
            "consolidation_buffer.tenant_id",
            "memories.subject_id",
            "memories.tenant_id",
        ]
    );
    for role in [APP_ROLE, SYSTEM_ROLE] {
        let create: bool =
            sqlx::query_scalar("SELECT has_schema_privilege($1, 'public', 'CREATE')")
                .bind(role)
                .fetch_one(&admin)
                .await
                .unwrap();
        assert!(!create, "{role} may create objects");
    }
}

/// Roles are global to the server, and test binaries (or two `mnemo
/// migrate`s) create them at the same moment: every racer must succeed.
#[tokio::test]
async fn racing_creators_of_a_role_all_succeed() {
    let db = TestDatabase::new().await;
    let role = format!("mnemo_race_{}", db.name().rsplit('_').next().unwrap_or("x"));
    // Local tasks (sqlx's connection futures are not provably Send here);
    // they still race on the server, one connection each.
    let local = tokio::task::LocalSet::new();
    let results = local
        .run_until(async {
            let racers: Vec<_> = (0..8)
                .map(|_| {
                    let options = db.admin_options();
                    let role = role.clone();
                    tokio::task::spawn_local(async move {
                        let mut conn = PgConnection::connect_with(&options).await.unwrap();
                        mnemo_pg::ensure_role(&mut conn, &role, "NOLOGIN").await
                    })
                })
                .collect();
            let mut results = Vec::new();
            for racer in racers {
                results.push(racer.await.unwrap());
            }
            results
        })
        .await;
    let mut admin = PgConnection::connect_with(&db.admin_options())
        .await
        .unwrap();
    sqlx::query(&format!("DROP ROLE {role}"))
        .execute(&mut admin)
        .await
        .unwrap();
    for result in results {
        result.unwrap();
    }
}

/// An existing role that bypasses row-level security is refused, not used.
#[tokio::test]
async fn an_existing_role_that_bypasses_rls_is_refused() {
    let db = TestDatabase::new().await;
    let role = format!(
        "mnemo_bypass_{}",
        db.name().rsplit('_').next().unwrap_or("x")
    );
    let mut admin = PgConnection::connect_with(&db.admin_options())
        .await
        .unwrap();
    sqlx::query(&format!("CREATE ROLE {role} NOLOGIN BYPASSRLS"))
        .execute(&mut admin)
        .await
        .unwrap();
    let refused = mnemo_pg::ensure_role(&mut admin, &role, "NOLOGIN").await;
    sqlx::query(&format!("DROP ROLE {role}"))
        .execute(&mut admin)
        .await
        .unwrap();
    assert!(
        matches!(refused, Err(PgError::UnsafeRole { .. })),
        "{refused:?}"
    );
}

/// The server's major version: PostgreSQL 15 revoked `CREATE` on `public`
/// from every role, which is what the next two tests are about.
async fn server_major(conn: &mut PgConnection) -> i32 {
    let number: String = sqlx::query_scalar("SHOW server_version_num")
        .fetch_one(conn)
        .await
        .unwrap();
    number.parse::<i32>().unwrap() / 10_000
}

/// A database made as docs/scale-out.md makes it (`createdb -O postgres`):
/// owned by the superuser login, not by `mnemo_owner`. On PostgreSQL 15+
/// the owner role may not create in its `public` schema, and migrating
/// failed with "permission denied for schema public". The migration grants
/// the owner role what it needs, and nothing more.
#[tokio::test]
async fn a_database_the_login_owns_is_migrated_with_the_tables_owned_by_mnemo_owner() {
    let db = TestDatabase::owned_by_the_login().await;
    mnemo_pg::migrate_with(db.admin_options()).await.unwrap();
    // Again: nothing to grant or apply.
    mnemo_pg::migrate_with(db.admin_options()).await.unwrap();
    let admin = db.raw_pool("postgres").await;
    let owners: Vec<String> = sqlx::query_scalar(
        "SELECT DISTINCT tableowner::text FROM pg_tables WHERE schemaname = 'public'",
    )
    .fetch_all(&admin)
    .await
    .unwrap();
    assert_eq!(owners, vec![OWNER_ROLE.to_owned()]);
    let tables: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM pg_tables WHERE schemaname = 'public'")
            .fetch_one(&admin)
            .await
            .unwrap();
    assert!(tables >= 8, "{tables} tables");
    let unprotected: Vec<String> = sqlx::query_scalar(
        "SELECT c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
         WHERE n.nspname = 'public' AND c.relkind = 'r' \
         AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'tenant_id') \
         AND NOT (c.relrowsecurity AND c.relforcerowsecurity)",
    )
    .fetch_all(&admin)
    .await
    .unwrap();
    assert!(unprotected.is_empty(), "{unprotected:?}");
    // The database stays the login's: only the schema privilege was granted.
    let database_owner: String = sqlx::query_scalar(
        "SELECT pg_get_userbyid(datdba)::text FROM pg_database WHERE datname = current_database()",
    )
    .fetch_one(&admin)
    .await
    .unwrap();
    assert_ne!(database_owner, OWNER_ROLE);
    for (role, may) in [(OWNER_ROLE, true), (APP_ROLE, false), (SYSTEM_ROLE, false)] {
        let create: bool =
            sqlx::query_scalar("SELECT has_schema_privilege($1, 'public', 'CREATE')")
                .bind(role)
                .fetch_one(&admin)
                .await
                .unwrap();
        assert_eq!(create, may, "{role} may create in public");
    }
    // And the services' roles work on it.
    let mut tx = db
        .tenant_pool()
        .begin(&TenantId::parse("t1").unwrap())
        .await
        .unwrap();
    let rows: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM memories")
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    assert_eq!(rows, 0);
}

/// A login that may act as `mnemo_owner` but may not grant on the schema
/// (neither superuser nor the database's owner) gets an error that says
/// what to run, instead of "permission denied for schema public".
#[tokio::test]
async fn a_login_that_cannot_grant_the_schema_is_told_what_to_run() {
    let db = TestDatabase::owned_by_the_login().await;
    let mut admin = PgConnection::connect_with(&db.admin_options())
        .await
        .unwrap();
    if server_major(&mut admin).await < 15 {
        eprintln!("skipped: before PostgreSQL 15 every role may create in public");
        return;
    }
    let login = format!(
        "mnemo_migrator_{}",
        db.name().rsplit('_').next().unwrap_or("x")
    );
    sqlx::query(&format!(
        "CREATE ROLE {login} LOGIN NOSUPERUSER NOBYPASSRLS IN ROLE {OWNER_ROLE}"
    ))
    .execute(&mut admin)
    .await
    .unwrap();
    let refused = mnemo_pg::migrate_with(db.options_as(&login)).await;
    sqlx::query(&format!("DROP ROLE {login}"))
        .execute(&mut admin)
        .await
        .unwrap();
    let error = match refused {
        Err(error @ PgError::CannotCreateTables { .. }) => error.to_string(),
        other => panic!("{other:?}"),
    };
    assert!(
        error.contains("GRANT USAGE, CREATE ON SCHEMA public TO mnemo_owner"),
        "{error}"
    );
}
