//! The EventStore contract on PostgreSQL (a fresh database per test, see
//! `mnemo_pg::testsupport`).
#![cfg(feature = "postgres")]

use std::sync::Arc;

use mnemo_event_store::postgres::PostgresEventStore;
use mnemo_event_store::{event_store_contract_tests, EventStore};
use mnemo_pg::testsupport::TestDatabase;
use mnemo_pg::{SystemPool, TenantPool, APP_ROLE, SYSTEM_ROLE};

/// A new store with pools of its own over the test's database: a restart.
async fn open_in(db: Arc<TestDatabase>) -> Arc<dyn EventStore> {
    let tenant = TenantPool::connect_with(db.options_as(APP_ROLE), 4)
        .await
        .unwrap();
    let system = SystemPool::connect_with(db.options_as(SYSTEM_ROLE), 2)
        .await
        .unwrap();
    Arc::new(PostgresEventStore::new(tenant, system))
}

event_store_contract_tests!(setup: TestDatabase::new(), open: open_in);
