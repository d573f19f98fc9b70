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
