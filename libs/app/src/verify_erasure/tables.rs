//! The tables an erasure empties of the subject (the memory read model,
//! the consolidator's buffer, the usage counts), the tenants a subject is
//! found in, and the PostgreSQL canary queries, on whichever database the
//! stores live in. Read-only queries over the pools the stores opened.

use mnemo_domain::{SubjectId, TenantId};
use mnemo_pg::{SystemPool, TenantPool};
use sqlx::SqlitePool;

use super::report::{canary, Check};
use crate::stores::Stores;

/// The database the stores live in.
pub(super) enum Tables<'a> {
    Sqlite(SqlitePool),
    Postgres {
        tenant: &'a TenantPool,
        system: &'a SystemPool,
    },
}

impl<'a> Tables<'a> {
    pub(super) fn of(stores: &'a Stores) -> Self {
        match (stores.sqlite_pool(), stores.postgres_pools()) {
            (Some(pool), _) => Tables::Sqlite(pool),
            (None, Some((tenant, system))) => Tables::Postgres { tenant, system },
            (None, None) => unreachable!("the stores live in SQLite or in PostgreSQL"),
        }
    }
}

/// Ids of the subject's memories, from their streams in the log: rows keyed
/// by memory id alone are found by them even when the subject column is
/// gone. `?1`/`$1` is the tenant, `?2`/`$2` the subject.
const SQLITE_MEMORY_IDS: &str = "SELECT substr(stream_id, 8) FROM events \
     WHERE tenant_id = ?1 AND subject_id = ?2 AND stream_id LIKE 'memory-%'";
// Explicitly "C": the read model's id columns are, the log's are not.
const POSTGRES_MEMORY_IDS: &str = "SELECT substr(stream_id, 8) COLLATE \"C\" FROM events \
     WHERE tenant_id = $1 AND subject_id = $2 AND stream_id LIKE 'memory-%'";

/// (store, check, SQLite count, PostgreSQL count or None where the table
/// does not exist there).
const PROJECTIONS: [(&str, &str, &str, Option<&str>); 4] = [
    (
        "memory_read_model",
        "rows of the subject",
        "SELECT COUNT(*) FROM memories WHERE tenant_id = ?1 \
         AND (subject_id = ?2 OR memory_id IN (MEMORY_IDS))",
        Some(
            "SELECT COUNT(*) FROM memories WHERE tenant_id = $1 \
             AND (subject_id = $2 OR memory_id IN (MEMORY_IDS))",
        ),
    ),
    (
        "memory_read_model",
        "tag rows of the subject's memories",
        "SELECT COUNT(*) FROM memory_tags WHERE tenant_id = ?1 AND memory_id IN (MEMORY_IDS)",
        // PostgreSQL keeps tags in the memory's row.
        None,
    ),
    (
        "consolidation_buffer",
        "rows of the subject",
        "SELECT COUNT(*) FROM consolidation_buffer WHERE tenant_id = ?1 AND subject_id = ?2",
        Some("SELECT COUNT(*) FROM consolidation_buffer WHERE tenant_id = $1 AND subject_id = $2"),
    ),
    (
        "memory_usage",
        "rows of the subject",
        "SELECT COUNT(*) FROM memory_usage WHERE tenant_id = ?1 \
         AND (subject_id = ?2 OR memory_id IN (MEMORY_IDS))",
        Some(
            "SELECT COUNT(*) FROM memory_usage WHERE tenant_id = $1 \
             AND (subject_id = $2 OR memory_id IN (MEMORY_IDS))",
        ),
    ),
];

/// The projection rows of the subject in one tenant: each table an erasure
/// empties, one check each.
pub(super) async fn projection_checks(
    tables: &Tables<'_>,
    tenant: &TenantId,
    subject: &SubjectId,
) -> Vec<Check> {
    let mut checks = Vec::new();
    for (store, check, sqlite, postgres) in PROJECTIONS {
        let counted = match tables {
            Tables::Sqlite(pool) => {
                let sql = sqlite.replace("MEMORY_IDS", SQLITE_MEMORY_IDS);
                sqlx::query_scalar::<_, i64>(&sql)
                    .bind(tenant.as_str())
                    .bind(subject.as_str())
                    .fetch_one(pool)
                    .await
                    .map_err(anyhow::Error::from)
            }
            Tables::Postgres { tenant: pool, .. } => match postgres {
                None => continue,
                Some(sql) => {
                    let sql = sql.replace("MEMORY_IDS", POSTGRES_MEMORY_IDS);
                    postgres_count(pool, tenant, &sql, subject.as_str()).await
                }
            },
        };
        checks.push(match counted {
            Ok(n) => Check::count(store, check, n as u64),
            Err(e) => Check::failed(store, check, format!("{e:#}")),
        });
    }
    checks
        .into_iter()
        .map(|c| c.tenant(tenant.as_str()))
        .collect()
}

/// One count in a tenant transaction: `$1` is the tenant, `$2` the value.
async fn postgres_count(
    pool: &TenantPool,
    tenant: &TenantId,
    sql: &str,
    value: &str,
) -> anyhow::Result<i64> {
    let mut tx = pool.begin(tenant).await?;
    let n = sqlx::query_scalar::<_, i64>(sql)
        .bind(tenant.as_str())
        .bind(value)
        .fetch_one(&mut *tx)
        .await?;
    tx.rollback().await?;
    Ok(n)
}

/// The tenants whose log, keys or projections hold the subject. On
/// PostgreSQL the keys table is the application role's alone: the log and
/// the projections name the tenants (a key is only made for content that
/// is appended).
pub(super) async fn tenants_of(
    tables: &Tables<'_>,
    subject: &SubjectId,
) -> anyhow::Result<Vec<TenantId>> {
    let names: Vec<String> = match tables {
        Tables::Sqlite(pool) => {
            sqlx::query_scalar(
                "SELECT tenant_id FROM events WHERE subject_id = ?1 \
                 UNION SELECT tenant_id FROM subject_keys WHERE subject_id = ?1 \
                 UNION SELECT tenant_id FROM subject_key_tombstones WHERE subject_id = ?1 \
                 UNION SELECT tenant_id FROM memories WHERE subject_id = ?1 \
                 UNION SELECT tenant_id FROM consolidation_buffer WHERE subject_id = ?1 \
                 UNION SELECT tenant_id FROM memory_usage WHERE subject_id = ?1 \
                 ORDER BY 1",
            )
            .bind(subject.as_str())
            .fetch_all(pool)
            .await?
        }
        Tables::Postgres { system, .. } => {
            sqlx::query_scalar(
                "SELECT tenant_id COLLATE \"C\" FROM events WHERE subject_id = $1 \
                 UNION SELECT tenant_id COLLATE \"C\" FROM memories WHERE subject_id = $1 \
                 UNION SELECT tenant_id COLLATE \"C\" FROM consolidation_buffer WHERE subject_id = $1 \
                 ORDER BY 1",
            )
            .bind(subject.as_str())
            .fetch_all(system.pool())
            .await?
        }
    };
    // A name that is not a valid tenant id was never written by mnemo.
    Ok(names
        .into_iter()
        .filter_map(|name| TenantId::parse(name).ok())
        .collect())
}

/// The PostgreSQL tables that can hold subject content, and the row text
/// each canary query searches.
const CANARY_TABLES: [(&str, &str); 4] = [
    (
        "events",
        "SELECT COUNT(*) FROM events t WHERE tenant_id = $1 \
         AND (t.payload::text ILIKE $2 ESCAPE '\\' OR t.metadata::text ILIKE $2 ESCAPE '\\')",
    ),
    (
        "memories",
        "SELECT COUNT(*) FROM memories t WHERE tenant_id = $1 AND t::text ILIKE $2 ESCAPE '\\'",
    ),
    (
        "consolidation_buffer",
        "SELECT COUNT(*) FROM consolidation_buffer t WHERE tenant_id = $1 \
         AND t::text ILIKE $2 ESCAPE '\\'",
    ),
    (
        "memory_usage",
        "SELECT COUNT(*) FROM memory_usage t WHERE tenant_id = $1 AND t::text ILIKE $2 ESCAPE '\\'",
    ),
];

/// Rows of the tenant's tables whose text holds a canary (in any case):
/// the whole tenant, not only the subject's rows, since plaintext that
/// leaked may sit anywhere.
pub(super) async fn postgres_canary_check(
    pool: &TenantPool,
    tenant: &TenantId,
    canaries: &[String],
) -> Check {
    const STORE: &str = "postgres";
    const CHECK: &str = "canary in table rows";
    let mut found = 0;
    let mut locations = Vec::new();
    for (table, sql) in CANARY_TABLES {
        for (index, text) in canaries.iter().enumerate() {
            match postgres_count(pool, tenant, sql, &like_pattern(text)).await {
                Ok(0) => {}
                Ok(n) => {
                    found += n as u64;
                    locations.push(format!("{table}: {} in {n} row(s)", canary(index)));
                }
                Err(e) => {
                    return Check::failed(STORE, CHECK, format!("{table}: {e:#}")).tenant(tenant)
                }
            }
        }
    }
    Check::count(STORE, CHECK, found)
        .tenant(tenant)
        .at_all(locations)
}

/// `%text%` for ILIKE with `\` as the escape, the wildcards in `text`
/// matched as themselves.
pub(super) fn like_pattern(text: &str) -> String {
    let mut pattern = String::with_capacity(text.len() + 2);
    pattern.push('%');
    for c in text.chars() {
        if matches!(c, '\\' | '%' | '_') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
}

/// Asks PostgreSQL to write every changed page to its data files before
/// they are scanned: as the schema owner when its login is configured, else
/// as the system role. Only superusers and members of `pg_checkpoint` may;
/// says who did, or why nobody could.
pub(super) async fn checkpoint(
    settings: &mnemo_config::Settings,
    system: &SystemPool,
) -> Result<&'static str, String> {
    use secrecy::ExposeSecret;
    use sqlx::Connection;
    let mut refused = Vec::new();
    if let Some(owner) = settings
        .database
        .as_ref()
        .and_then(|d| d.owner_url.as_ref())
    {
        match sqlx::PgConnection::connect(owner.expose_secret()).await {
            Ok(mut connection) => {
                let done = sqlx::query("CHECKPOINT").execute(&mut connection).await;
                let _ = connection.close().await;
                match done {
                    Ok(_) => return Ok("the schema owner's login"),
                    Err(e) => refused.push(format!("owner: {e}")),
                }
            }
            Err(e) => refused.push(format!("owner: {e}")),
        }
    }
    match sqlx::query("CHECKPOINT").execute(system.pool()).await {
        Ok(_) => Ok("the system role"),
        Err(e) => {
            refused.push(format!("system role: {e}"));
            Err(refused.join("; "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_patterns_match_wildcards_as_themselves() {
        assert_eq!(like_pattern("canary"), "%canary%");
        assert_eq!(like_pattern("50%_off\\"), "%50\\%\\_off\\\\%");
    }

    #[test]
    fn every_sqlite_projection_query_names_the_subject_or_its_memories() {
        for (_, _, sqlite, postgres) in PROJECTIONS {
            assert!(sqlite.contains("?2") || sqlite.contains("MEMORY_IDS"));
            if let Some(postgres) = postgres {
                assert!(postgres.contains("$2") || postgres.contains("MEMORY_IDS"));
            }
        }
    }
}
