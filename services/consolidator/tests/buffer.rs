//! The message buffer cases, run on the SQLite and PostgreSQL buffers.

use std::sync::Arc;

use chrono::{Duration, Utc};
use mnemo_consolidator::buffer::{Arrival, Conversation, MessageBuffer};
use mnemo_domain::{EventId, SubjectId, TenantId};

/// (conversation, waiting, began) of each arrival, for comparing.
fn arrivals(arrivals: Vec<Arrival>) -> Vec<(Conversation, usize, bool)> {
    arrivals
        .into_iter()
        .map(|a| (a.conversation, a.waiting, a.began))
        .collect()
}

fn conversation(tenant: &str, subject: &str, session: &str) -> Conversation {
    Conversation {
        tenant: TenantId::parse(tenant).unwrap(),
        subject: SubjectId::parse(subject).unwrap(),
        session: session.to_owned(),
    }
}

async fn adds_once_and_batches_in_log_order(buffer: &dyn MessageBuffer) {
    let c = conversation("t1", "s1", "chat");
    let (a, b, later) = (EventId::new(), EventId::new(), EventId::new());
    assert_eq!(buffer.add(&c, later, 30).await.unwrap(), 1);
    assert_eq!(buffer.add(&c, a, 10).await.unwrap(), 2);
    // A redelivered message is not buffered twice.
    assert_eq!(buffer.add(&c, a, 10).await.unwrap(), 2);
    assert_eq!(buffer.add(&c, b, 20).await.unwrap(), 3);
    assert_eq!(buffer.batch(&c, 10).await.unwrap(), vec![a, b, later]);
    assert_eq!(buffer.batch(&c, 2).await.unwrap(), vec![a, b]);
    // Another session of the same subject is another conversation.
    let other = conversation("t1", "s1", "");
    assert!(buffer.batch(&other, 10).await.unwrap().is_empty());
}

async fn removed_messages_leave_the_batch_and_are_not_buffered_again(buffer: &dyn MessageBuffer) {
    let c = conversation("t1", "s1", "chat");
    let (a, b) = (EventId::new(), EventId::new());
    buffer.add(&c, a, 1).await.unwrap();
    buffer.add(&c, b, 2).await.unwrap();
    buffer.remove(&c.tenant, &[a]).await.unwrap();
    assert_eq!(buffer.batch(&c, 10).await.unwrap(), vec![b]);
    // A replay of a consolidated message does nothing.
    assert_eq!(buffer.add(&c, a, 1).await.unwrap(), 1);
    assert_eq!(buffer.batch(&c, 10).await.unwrap(), vec![b]);
    // Removing under another tenant touches nothing.
    buffer
        .remove(&TenantId::parse("t2").unwrap(), &[b])
        .await
        .unwrap();
    assert_eq!(buffer.batch(&c, 10).await.unwrap(), vec![b]);
}

async fn idle_conversations_span_tenants_and_skip_finished_ones(buffer: &dyn MessageBuffer) {
    let waiting_1 = conversation("t1", "s1", "chat");
    let waiting_2 = conversation("t2", "s1", "chat");
    let finished = conversation("t1", "s2", "chat");
    buffer.add(&waiting_1, EventId::new(), 1).await.unwrap();
    buffer.add(&waiting_2, EventId::new(), 2).await.unwrap();
    let done = EventId::new();
    buffer.add(&finished, done, 3).await.unwrap();
    buffer.remove(&finished.tenant, &[done]).await.unwrap();

    assert!(buffer
        .idle(Utc::now() - Duration::hours(1))
        .await
        .unwrap()
        .is_empty());
    let mut idle = buffer
        .idle(Utc::now() + Duration::seconds(1))
        .await
        .unwrap();
    idle.sort();
    let conversations: Vec<_> = idle.iter().map(|(c, _)| c.clone()).collect();
    assert_eq!(conversations, vec![waiting_1, waiting_2]);
    let (_, last) = &idle[0];
    assert!((Utc::now() - *last) < Duration::minutes(1));
}

async fn conversations_and_deletion_stay_within_tenant_and_subject(buffer: &dyn MessageBuffer) {
    let t1 = TenantId::parse("t1").unwrap();
    let s1 = SubjectId::parse("s1").unwrap();
    let chat = conversation("t1", "s1", "chat");
    let mail = conversation("t1", "s1", "mail");
    let neighbour = conversation("t1", "s2", "chat");
    let foreign = conversation("t2", "s1", "chat");
    for (i, c) in [&chat, &chat, &mail, &neighbour, &foreign]
        .iter()
        .enumerate()
    {
        buffer.add(c, EventId::new(), i as i64).await.unwrap();
    }
    let mut listed = buffer.conversations(&t1, &s1).await.unwrap();
    listed.sort();
    assert_eq!(listed, vec![chat.clone(), mail]);

    assert_eq!(buffer.delete_subject(&t1, &s1).await.unwrap(), 3);
    assert!(buffer.conversations(&t1, &s1).await.unwrap().is_empty());
    assert_eq!(buffer.batch(&neighbour, 10).await.unwrap().len(), 1);
    assert_eq!(buffer.batch(&foreign, 10).await.unwrap().len(), 1);
}

async fn a_run_of_messages_is_added_at_once_with_each_conversation_counted(
    buffer: &dyn MessageBuffer,
) {
    let (c1, c2) = (
        conversation("t1", "s1", "chat"),
        conversation("t1", "s2", ""),
    );
    let (a, b, c, d) = (
        EventId::new(),
        EventId::new(),
        EventId::new(),
        EventId::new(),
    );
    assert!(buffer.add_many(&[]).await.unwrap().is_empty());
    buffer.add(&c1, a, 1).await.unwrap();
    let waiting = buffer
        .add_many(&[
            (c1.clone(), b, 2),
            (c2.clone(), c, 3),
            // Redelivered, inside the run and from before it: counted once.
            (c1.clone(), b, 2),
            (c1.clone(), a, 1),
            (c1.clone(), d, 4),
        ])
        .await
        .unwrap();
    // Both read as begun by the run: c2's first message is in it, and so
    // is c1's, redelivered (see
    // `a_conversation_begins_with_its_first_buffered_message`).
    assert_eq!(
        arrivals(waiting),
        vec![(c1.clone(), 3, true), (c2.clone(), 1, true)]
    );
    assert_eq!(buffer.batch(&c1, 10).await.unwrap(), vec![a, b, d]);
    assert_eq!(buffer.batch(&c2, 10).await.unwrap(), vec![c]);
    assert_eq!(buffer.stats().await.unwrap().messages, 4);
}

/// More rows than one statement writes (the SQLite buffer writes 500 a
/// statement), from two tenants in one run: every row is added under its
/// own tenant, counted in order of first appearance, and removed whole.
async fn runs_longer_than_a_statement_are_added_and_removed_whole(buffer: &dyn MessageBuffer) {
    let conversations = [
        conversation("t1", "s1", "chat"),
        conversation("t2", "s2", ""),
        conversation("t1", "s3", "chat"),
    ];
    let run: Vec<(Conversation, EventId, i64)> = (0..1201)
        .map(|n| (conversations[n % 3].clone(), EventId::new(), n as i64))
        .collect();
    let ids = |range: std::ops::Range<usize>, of: &Conversation| -> Vec<EventId> {
        run[range]
            .iter()
            .filter(|(c, _, _)| c == of)
            .map(|(_, id, _)| *id)
            .collect()
    };
    let waiting = buffer.add_many(&run).await.unwrap();
    assert_eq!(
        arrivals(waiting),
        vec![
            (conversations[0].clone(), 401, true),
            (conversations[1].clone(), 400, true),
            (conversations[2].clone(), 400, true),
        ]
    );
    assert_eq!(
        buffer.batch(&conversations[0], 1000).await.unwrap(),
        ids(0..1201, &conversations[0])
    );
    // Removing under one tenant leaves the other's rows waiting.
    let first: Vec<EventId> = run[..1100].iter().map(|(_, id, _)| *id).collect();
    buffer
        .remove(&conversations[0].tenant, &first)
        .await
        .unwrap();
    let of_first_tenant = run[..1100]
        .iter()
        .filter(|(c, _, _)| c.tenant == conversations[0].tenant)
        .count();
    assert_eq!(
        buffer.stats().await.unwrap().messages,
        (1201 - of_first_tenant) as u64
    );
    buffer
        .remove(&conversations[1].tenant, &first)
        .await
        .unwrap();
    assert_eq!(buffer.stats().await.unwrap().messages, 101);
    assert_eq!(
        buffer.batch(&conversations[1], 1000).await.unwrap(),
        ids(1100..1201, &conversations[1])
    );
}

/// A run begins a conversation when nothing of it was buffered before the
/// run's earliest message of it, waiting or consolidated: what the
/// consolidator ends a subject's earlier sessions on.
async fn a_conversation_begins_with_its_first_buffered_message(buffer: &dyn MessageBuffer) {
    let chat = conversation("t1", "s1", "chat");
    let (a, b, c) = (EventId::new(), EventId::new(), EventId::new());
    let first = buffer.add_many(&[(chat.clone(), a, 10)]).await.unwrap();
    assert_eq!(arrivals(first), vec![(chat.clone(), 1, true)]);
    let second = buffer.add_many(&[(chat.clone(), b, 11)]).await.unwrap();
    assert_eq!(arrivals(second), vec![(chat.clone(), 2, false)]);
    // Consolidated messages still say the conversation had begun.
    buffer.remove(&chat.tenant, &[a, b]).await.unwrap();
    let later = buffer.add_many(&[(chat.clone(), c, 12)]).await.unwrap();
    assert_eq!(arrivals(later), vec![(chat.clone(), 1, false)]);
    // A redelivered first message begins it again; it added nothing.
    let replay = buffer.add_many(&[(chat.clone(), a, 10)]).await.unwrap();
    assert_eq!(arrivals(replay), vec![(chat.clone(), 1, true)]);
    // The same session id of another subject or tenant is another
    // conversation, begun by its own first message.
    let neighbour = conversation("t1", "s2", "chat");
    let foreign = conversation("t2", "s1", "chat");
    let others = buffer
        .add_many(&[
            (neighbour.clone(), EventId::new(), 20),
            (foreign.clone(), EventId::new(), 5),
        ])
        .await
        .unwrap();
    assert_eq!(
        arrivals(others),
        vec![(neighbour, 1, true), (foreign, 1, true)]
    );
}

/// Rows consolidated long enough ago are deleted, except each
/// conversation's newest: a later message still finds its conversation
/// begun, and what is waiting stays waiting.
async fn consolidated_rows_past_the_cutoff_are_pruned_but_each_conversations_newest(
    buffer: &dyn MessageBuffer,
) {
    let waiting = conversation("t1", "s1", "chat");
    let finished = conversation("t1", "s1", "other");
    let foreign = conversation("t2", "s1", "chat");
    let w: Vec<EventId> = (0..5).map(|_| EventId::new()).collect();
    let f: Vec<EventId> = (0..3).map(|_| EventId::new()).collect();
    let g: Vec<EventId> = (0..2).map(|_| EventId::new()).collect();
    let mut run = Vec::new();
    run.extend(
        w.iter()
            .enumerate()
            .map(|(i, id)| (waiting.clone(), *id, 1 + i as i64)),
    );
    run.extend(
        f.iter()
            .enumerate()
            .map(|(i, id)| (finished.clone(), *id, 10 + i as i64)),
    );
    run.extend(
        g.iter()
            .enumerate()
            .map(|(i, id)| (foreign.clone(), *id, 1 + i as i64)),
    );
    buffer.add_many(&run).await.unwrap();
    buffer.remove(&waiting.tenant, &w[..4]).await.unwrap();
    buffer.remove(&finished.tenant, &f).await.unwrap();
    buffer.remove(&foreign.tenant, &g).await.unwrap();

    // Nothing was consolidated before an hour ago.
    let hour_ago = Utc::now() - Duration::hours(1);
    assert_eq!(buffer.prune_consolidated(hour_ago, 100).await.unwrap(), 0);
    // Past the cutoff, at most the limit a call.
    let later = Utc::now() + Duration::seconds(1);
    assert_eq!(buffer.prune_consolidated(later, 2).await.unwrap(), 2);
    // The rest: 4 + 2 + 1 prunable, 2 gone already; the newest of each
    // conversation stays (the waiting one, and a consolidated one).
    assert_eq!(buffer.prune_consolidated(later, 100).await.unwrap(), 5);
    assert_eq!(buffer.prune_consolidated(later, 100).await.unwrap(), 0);

    // The waiting message is still waiting.
    assert_eq!(buffer.batch(&waiting, 10).await.unwrap(), vec![w[4]]);
    // A redelivered newest message is still consolidated already.
    buffer.add(&finished, f[2], 12).await.unwrap();
    assert!(buffer.batch(&finished, 10).await.unwrap().is_empty());
    // A new message finds the conversation begun.
    let next = buffer
        .add_many(&[(finished.clone(), EventId::new(), 13)])
        .await
        .unwrap();
    assert_eq!(arrivals(next), vec![(finished, 1, false)]);
}

macro_rules! buffer_cases {
    ($module:ident, $fixture:path) => {
        mod $module {
            #[tokio::test]
            async fn adds_once_and_batches_in_log_order() {
                let (_guard, buffer) = $fixture().await;
                super::adds_once_and_batches_in_log_order(buffer.as_ref()).await;
            }
            #[tokio::test]
            async fn removed_messages_leave_the_batch_and_are_not_buffered_again() {
                let (_guard, buffer) = $fixture().await;
                super::removed_messages_leave_the_batch_and_are_not_buffered_again(buffer.as_ref())
                    .await;
            }
            #[tokio::test]
            async fn idle_conversations_span_tenants_and_skip_finished_ones() {
                let (_guard, buffer) = $fixture().await;
                super::idle_conversations_span_tenants_and_skip_finished_ones(buffer.as_ref())
                    .await;
            }
            #[tokio::test]
            async fn a_run_of_messages_is_added_at_once_with_each_conversation_counted() {
                let (_guard, buffer) = $fixture().await;
                super::a_run_of_messages_is_added_at_once_with_each_conversation_counted(
                    buffer.as_ref(),
                )
                .await;
            }
            #[tokio::test]
            async fn a_conversation_begins_with_its_first_buffered_message() {
                let (_guard, buffer) = $fixture().await;
                super::a_conversation_begins_with_its_first_buffered_message(buffer.as_ref()).await;
            }
            #[tokio::test]
            async fn runs_longer_than_a_statement_are_added_and_removed_whole() {
                let (_guard, buffer) = $fixture().await;
                super::runs_longer_than_a_statement_are_added_and_removed_whole(buffer.as_ref())
                    .await;
            }
            #[tokio::test]
            async fn consolidated_rows_past_the_cutoff_are_pruned_but_each_conversations_newest() {
                let (_guard, buffer) = $fixture().await;
                super::consolidated_rows_past_the_cutoff_are_pruned_but_each_conversations_newest(
                    buffer.as_ref(),
                )
                .await;
            }
            #[tokio::test]
            async fn conversations_and_deletion_stay_within_tenant_and_subject() {
                let (_guard, buffer) = $fixture().await;
                super::conversations_and_deletion_stay_within_tenant_and_subject(buffer.as_ref())
                    .await;
            }
        }
    };
}

async fn sqlite_buffer() -> (tempfile::TempDir, Arc<dyn MessageBuffer>) {
    let dir = tempfile::tempdir().unwrap();
    let pool = mnemo_event_store::sqlite::connect(&dir.path().join("mnemo.db"))
        .await
        .unwrap();
    (
        dir,
        Arc::new(mnemo_consolidator::buffer::SqliteMessageBuffer::new(pool)),
    )
}

buffer_cases!(sqlite, super::sqlite_buffer);

#[cfg(feature = "postgres")]
async fn postgres_buffer() -> (mnemo_pg::testsupport::TestDatabase, Arc<dyn MessageBuffer>) {
    let db = mnemo_pg::testsupport::TestDatabase::new().await;
    let buffer =
        mnemo_consolidator::buffer::PostgresMessageBuffer::new(db.tenant_pool(), db.system_pool());
    (db, Arc::new(buffer))
}

#[cfg(feature = "postgres")]
buffer_cases!(postgres, super::postgres_buffer);

/// The system role's idle scan sees conversations, never message ids; the
/// app role without a tenant sees nothing.
#[cfg(feature = "postgres")]
#[tokio::test]
async fn the_database_limits_what_each_role_sees_of_the_buffer() {
    use sqlx::Connection;
    let (db, buffer) = postgres_buffer().await;
    buffer
        .add(&conversation("t1", "s1", "chat"), EventId::new(), 1)
        .await
        .unwrap();
    let mut system = sqlx::PgConnection::connect_with(&db.options_as(mnemo_pg::SYSTEM_ROLE))
        .await
        .unwrap();
    let error = sqlx::query("SELECT event_id FROM consolidation_buffer")
        .fetch_all(&mut system)
        .await
        .unwrap_err();
    assert!(error.to_string().contains("permission denied"), "{error}");
    let mut app = sqlx::PgConnection::connect_with(&db.options_as(mnemo_pg::APP_ROLE))
        .await
        .unwrap();
    let visible: i64 = sqlx::query_scalar("SELECT count(*) FROM consolidation_buffer")
        .fetch_one(&mut app)
        .await
        .unwrap();
    assert_eq!(visible, 0);
}
