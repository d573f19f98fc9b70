//! `mnemo verify-erasure --subject S [--tenant T] [--canary TEXT]...`:
//! what of a data subject can still be found at rest, store by store.
//!
//! An erasure destroys the subject's data key, purges the projections and
//! appends a receipt; this command checks the result from the outside,
//! with what an operator holding the master key could read:
//!
//! 1. through the keys: a live data key, events of the log (and bus
//!    records) whose sealed content still opens, canaries in what opens;
//! 2. the projections an erasure empties: read model, consolidation
//!    buffer, usage counts, vector points;
//! 3. with canaries, plaintext at rest: every file under the data dir
//!    byte by byte, the PostgreSQL tables that hold subject content, and
//!    PostgreSQL's own files with `--pg-data-dir`.
//!
//! It works the same before an erasure (it then finds the subject), which
//! is how its tests prove it looks in the right places. Content posted
//! after the subject's last completed erasure is counted apart, as
//! information: it is not part of that erasure. Canaries are named by
//! their index (`canary #1`), never printed.
//!
//! Everything is read-only except opening the qdrant-edge collections,
//! which the engine flushes on close: that is why the data dir's bytes are
//! scanned first, and why the collections are opened only when no server
//! runs on the data dir.

mod bus;
pub mod bytes;
pub mod report;
mod tables;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use mnemo_config::Settings;
use mnemo_crypto::{SubjectCipher, TokenPurpose};
use mnemo_domain::{DomainEvent, ErasureId, EventType, RecordedEvent, SubjectId, TenantId};
use mnemo_event_store::sealed::SealedLog;
use mnemo_vector_index::collections::base_of;
use mnemo_vector_index::{EdgeVectorIndex, VectorIndex};
use serde_json::Value;

use crate::stores::{load_master_key, Stores};
use bytes::{scan_tree, Needles, TreeScan};
use report::{canary, canary_counts, Check, Report};
use tables::Tables;

/// A shorter canary matches too much to mean anything.
pub const MIN_CANARY_BYTES: usize = 4;

#[derive(Debug, Clone)]
pub struct VerifyOptions {
    pub subject: SubjectId,
    /// None: every tenant the subject is found in.
    pub tenant: Option<TenantId>,
    /// Texts known to be in the subject's content.
    pub canaries: Vec<String>,
    /// PostgreSQL's data directory, when the server is local.
    pub pg_data_dir: Option<PathBuf>,
}

/// Runs the checks and prints the report (a table, or JSON); returns the
/// exit code: 0 nothing found, 1 something found, 2 a check could not run.
/// An error is a configuration the checks could not start with.
pub async fn run(settings: &Settings, options: &VerifyOptions, json: bool) -> anyhow::Result<u8> {
    let report = verify(settings, options).await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&report.to_json())?);
    } else {
        print!("{}", report.to_text());
    }
    Ok(report.exit_code())
}

/// Every check, in order: bytes of the data dir first (before anything
/// here opens its files), then keys, log, projections, vectors, bus and
/// PostgreSQL.
pub async fn verify(settings: &Settings, options: &VerifyOptions) -> anyhow::Result<Report> {
    check_setup(settings, options)?;
    let needles = Needles::new(&options.canaries);
    let mut checks = Vec::new();
    if !needles.is_empty() {
        checks.push(scan_data_dir(settings, &needles).await);
    }
    let master = Arc::new(load_master_key(settings)?);
    let stores = Stores::open(settings, master).await?;
    let tenants = verify_stores(settings, options, &needles, &stores, &mut checks).await;
    stores.close().await;
    let tenants = tenants?;
    Ok(Report {
        subject: options.subject.to_string(),
        tenants: tenants.iter().map(ToString::to_string).collect(),
        canaries: options.canaries.len(),
        checks,
    })
}

fn check_setup(settings: &Settings, options: &VerifyOptions) -> anyhow::Result<()> {
    for (index, text) in options.canaries.iter().enumerate() {
        anyhow::ensure!(
            text.len() >= MIN_CANARY_BYTES,
            "{} is shorter than {MIN_CANARY_BYTES} bytes: it would match everywhere",
            canary(index)
        );
    }
    if settings.database.is_none() {
        let database = settings.database_file();
        anyhow::ensure!(
            database.exists(),
            "no database at {}: give the data dir the server runs on",
            database.display()
        );
    }
    if settings.master_key.is_none() {
        let key = settings.master_key_file();
        anyhow::ensure!(
            key.exists(),
            "no master key at {} and none configured (MNEMO_MASTER_KEY): \
             without it no content can be opened",
            key.display()
        );
    }
    if let Some(dir) = &options.pg_data_dir {
        anyhow::ensure!(
            dir.is_dir(),
            "--pg-data-dir {} is not a directory",
            dir.display()
        );
    }
    Ok(())
}

/// The checks that need the stores; returns the tenants checked.
async fn verify_stores(
    settings: &Settings,
    options: &VerifyOptions,
    needles: &Needles,
    stores: &Stores,
    checks: &mut Vec<Check>,
) -> anyhow::Result<Vec<TenantId>> {
    let subject = &options.subject;
    // No cache: every lookup asks the key store as it is now.
    let cipher = Arc::new(SubjectCipher::with_cache_limits(
        stores.keys.clone(),
        0,
        Duration::ZERO,
    ));
    let log = SealedLog::new(stores.store.clone(), cipher.clone());
    let tables = Tables::of(stores);
    let tenants = match &options.tenant {
        Some(tenant) => vec![tenant.clone()],
        None => {
            let tenants = tables::tenants_of(&tables, subject)
                .await
                .context("cannot list the tenants that hold the subject")?;
            checks.push(
                Check::info(
                    "event_log",
                    "tenants holding the subject",
                    tenants.len() as u64,
                )
                .at_all(tenants.iter().map(ToString::to_string))
                .note("no --tenant: every tenant whose log or projections name the subject"),
            );
            tenants
        }
    };
    let lowered: Vec<String> = options.canaries.iter().map(|c| c.to_lowercase()).collect();
    let mut logs = Vec::new();
    for tenant in &tenants {
        match SubjectLog::read(&log, tenant, subject).await {
            Ok(subject_log) => {
                checks.push(key_check(&cipher, &subject_log).await);
                checks.extend(log_checks(&cipher, &subject_log, &lowered).await);
                logs.push(subject_log);
            }
            Err(e) => checks.push(
                Check::failed("event_log", "events of the subject", format!("{e:#}"))
                    .tenant(tenant),
            ),
        }
        checks.extend(tables::projection_checks(&tables, tenant, subject).await);
    }
    if !tenants.is_empty() {
        checks.extend(vector_checks(settings, &tenants, subject).await);
        checks.extend(bus_checks(settings, stores, &cipher, &logs, &options.canaries).await);
    }
    match &tables {
        Tables::Postgres {
            tenant: pool,
            system,
        } => {
            if !options.canaries.is_empty() {
                for tenant in &tenants {
                    checks
                        .push(tables::postgres_canary_check(pool, tenant, &options.canaries).await);
                }
            }
            if let Some(dir) = &options.pg_data_dir {
                checks.push(postgres_files(settings, system, dir, needles).await);
            }
        }
        Tables::Sqlite(_) => {
            if options.pg_data_dir.is_some() {
                checks.push(Check::skipped(
                    "postgres_files",
                    "canary bytes in PostgreSQL's files",
                    "no PostgreSQL is configured (MNEMO_DATABASE_URL)",
                ));
            }
        }
    }
    Ok(tenants)
}

/// The subject's events in one tenant, and where its last completed
/// erasure cuts them.
struct SubjectLog {
    tenant: TenantId,
    subject: SubjectId,
    events: Vec<RecordedEvent>,
    /// The position of the request of the subject's last completed
    /// erasure: every event before it must no longer open.
    erased_before: Option<i64>,
    last_erasure: Option<ErasureId>,
}

impl SubjectLog {
    async fn read(log: &SealedLog, tenant: &TenantId, subject: &SubjectId) -> anyhow::Result<Self> {
        let events = log.store().read_subject(tenant, subject).await?;
        let mut requested: HashMap<ErasureId, i64> = HashMap::new();
        let mut erased_before = None;
        let mut last_erasure = None;
        for event in &events {
            if !(event.is(EventType::ErasureRequested) || event.is(EventType::SubjectErased)) {
                continue;
            }
            match log.decode(event.clone()).await?.event {
                DomainEvent::ErasureRequested(request) => {
                    requested.insert(request.erasure_id, event.global_position);
                }
                DomainEvent::SubjectErased(erased) => {
                    let id = erased.receipt.erasure_id;
                    if let Some(position) = requested.get(&id) {
                        if erased_before.is_none_or(|p| p < *position) {
                            erased_before = Some(*position);
                            last_erasure = Some(id);
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(SubjectLog {
            tenant: tenant.clone(),
            subject: subject.clone(),
            events,
            erased_before,
            last_erasure,
        })
    }

    /// Whether a record at `position` came after the last completed
    /// erasure was requested (content posted since is not part of it).
    fn after_erasure(&self, position: Option<i64>) -> bool {
        matches!((self.erased_before, position), (Some(cut), Some(p)) if p >= cut)
    }
}

/// What opening one payload under the subject's keys gave.
enum Opened {
    /// No sealed content in it.
    NotSealed,
    /// Sealed content whose keys are gone.
    Erased,
    /// Readable text: the `SubjectText` markers that opened.
    Readable(Vec<String>),
}

async fn open(
    cipher: &SubjectCipher,
    tenant: &TenantId,
    subject: &SubjectId,
    payload: &Value,
) -> Result<Opened, mnemo_crypto::CryptoError> {
    let mut payload = payload.clone();
    if cipher.open(tenant, subject, &mut payload).await? == 0 {
        return Ok(Opened::NotSealed);
    }
    let texts = clear_texts(&payload);
    Ok(match texts.is_empty() {
        true => Opened::Erased,
        false => Opened::Readable(texts),
    })
}

/// The strings of every `{"$text": s}` marker in the tree, and every
/// string inside an opened `{"$value": v}` marker (tags, session and
/// message ids).
fn clear_texts(payload: &Value) -> Vec<String> {
    let mut texts = Vec::new();
    let mut stack = vec![payload];
    while let Some(value) = stack.pop() {
        match value {
            Value::Object(map) if map.len() == 1 && map.contains_key("$text") => {
                if let Some(Value::String(text)) = map.get("$text") {
                    texts.push(text.clone());
                }
            }
            Value::Object(map) if map.len() == 1 && map.contains_key("$value") => {
                let mut inside = vec![&map["$value"]];
                while let Some(value) = inside.pop() {
                    match value {
                        Value::String(text) => texts.push(text.clone()),
                        Value::Object(map) => inside.extend(map.values()),
                        Value::Array(items) => inside.extend(items.iter()),
                        _ => {}
                    }
                }
            }
            Value::Object(map) => stack.extend(map.values()),
            Value::Array(items) => stack.extend(items.iter()),
            _ => {}
        }
    }
    texts
}

/// Counts over a set of payloads (events or bus records), split by where
/// they come from (event type or topic).
#[derive(Default)]
struct Tally {
    total: u64,
    erased: u64,
    readable: BTreeMap<String, u64>,
    /// Per canary: payloads whose opened text holds it.
    canaries: Vec<u64>,
    /// Per error code: payloads that could not be opened.
    errors: BTreeMap<&'static str, u64>,
}

impl Tally {
    fn new(canaries: usize) -> Self {
        Tally {
            canaries: vec![0; canaries],
            ..Tally::default()
        }
    }

    async fn add(
        &mut self,
        cipher: &SubjectCipher,
        log: &SubjectLog,
        source: &str,
        payload: &Value,
        lowered: &[String],
    ) {
        self.total += 1;
        match open(cipher, &log.tenant, &log.subject, payload).await {
            Ok(Opened::NotSealed) => {}
            Ok(Opened::Erased) => self.erased += 1,
            Ok(Opened::Readable(texts)) => {
                *self.readable.entry(source.to_owned()).or_default() += 1;
                let texts: Vec<String> = texts.iter().map(|t| t.to_lowercase()).collect();
                for (count, canary) in self.canaries.iter_mut().zip(lowered) {
                    if texts.iter().any(|t| t.contains(canary.as_str())) {
                        *count += 1;
                    }
                }
            }
            Err(e) => *self.errors.entry(e.code()).or_default() += 1,
        }
    }

    fn readable(&self) -> u64 {
        self.readable.values().sum()
    }

    fn counts(map: &BTreeMap<impl ToString, u64>) -> Vec<String> {
        map.iter()
            .map(|(name, n)| format!("{} ×{n}", name.to_string()))
            .collect()
    }

    /// The checks of one tally: readable payloads, canaries in them, and
    /// what could not be opened.
    fn checks(
        &self,
        store: &'static str,
        readable: &'static str,
        canaries: &'static str,
        tenant: &TenantId,
    ) -> Vec<Check> {
        let mut checks = vec![Check::count(store, readable, self.readable())
            .tenant(tenant)
            .at_all(Self::counts(&self.readable))];
        if !self.canaries.is_empty() {
            checks.push(
                Check::count(store, canaries, self.canaries.iter().sum())
                    .tenant(tenant)
                    .at_all(
                        self.canaries
                            .iter()
                            .enumerate()
                            .filter(|(_, n)| **n > 0)
                            .map(|(i, n)| format!("{} in {n}", canary(i))),
                    ),
            );
        }
        if !self.errors.is_empty() {
            let mut failed = Check::failed(
                store,
                "content that could not be opened",
                "sealed content that fails to open under an existing key is tampered or \
                 malformed, never erased",
            )
            .tenant(tenant)
            .at_all(Self::counts(&self.errors));
            failed.found = self.errors.values().sum();
            checks.push(failed);
        }
        checks
    }
}

async fn key_check(cipher: &SubjectCipher, log: &SubjectLog) -> Check {
    const STORE: &str = "subject_keys";
    const CHECK: &str = "live data key";
    match cipher.live_generation(&log.tenant, &log.subject).await {
        Ok(None) => Check::count(STORE, CHECK, 0).tenant(&log.tenant),
        // Destroying keys is the erasure's first step: a key alive after
        // its receipt was made for content posted since.
        Ok(Some(generation)) if log.last_erasure.is_some() => Check::info(STORE, CHECK, 1)
            .tenant(&log.tenant)
            .at(format!("generation {generation}"))
            .note("made after the last erasure destroyed the keys: it seals only what was posted since"),
        Ok(Some(generation)) => Check::count(STORE, CHECK, 1)
            .tenant(&log.tenant)
            .at(format!("generation {generation}")),
        Err(e) => Check::failed(STORE, CHECK, e).tenant(&log.tenant),
    }
}

async fn log_checks(cipher: &SubjectCipher, log: &SubjectLog, lowered: &[String]) -> Vec<Check> {
    const STORE: &str = "event_log";
    let mut erased_scope = Tally::new(lowered.len());
    let mut since = Tally::new(lowered.len());
    for event in &log.events {
        let tally = match log.after_erasure(Some(event.global_position)) {
            true => &mut since,
            false => &mut erased_scope,
        };
        tally
            .add(cipher, log, &event.event_type, &event.payload, lowered)
            .await;
    }
    let mut summary = Check::info(
        STORE,
        "events of the subject",
        erased_scope.total + since.total,
    )
    .tenant(&log.tenant)
    .at(format!(
        "{} with sealed content that no longer opens",
        erased_scope.erased + since.erased
    ));
    if let Some(erasure) = &log.last_erasure {
        summary = summary.at(format!(
            "{} from the last completed erasure on ({erasure}: its request and receipt included)",
            since.total
        ));
    }
    let mut checks = vec![summary];
    checks.extend(erased_scope.checks(
        STORE,
        "events that open to readable text",
        "canary in opened event text",
        &log.tenant,
    ));
    if since.readable() > 0 {
        checks.push(
            Check::info(
                STORE,
                "events posted after the last erasure that open",
                since.readable(),
            )
            .tenant(&log.tenant)
            .at_all(Tally::counts(&since.readable))
            .note("not part of the last erasure: erase the subject again to remove them"),
        );
    }
    checks
}

/// The raw scan of every bus record: store and check names.
const RAW_STORE: &str = "bus";
const RAW_CHECK: &str = "canary bytes in every record";

/// How a canary would be stored if it was a tag, a session id or a
/// client's message id: its keyed token (as given and lowercased) under
/// each tenant's live key of the subject. After an erasure there is no key
/// to make them with, and no stored token can be linked to its value.
const TOKEN_FORMS: [(TokenPurpose, &str); 3] = [
    (TokenPurpose::Tag, "tag"),
    (TokenPurpose::Session, "session id"),
    (TokenPurpose::MessageId, "message id"),
];

/// The canaries and their token forms ([`TOKEN_FORMS`]), named for the
/// report; and what the token forms came to, for the check's note.
async fn raw_needles(
    cipher: &SubjectCipher,
    logs: &[SubjectLog],
    canaries: &[String],
) -> (bus::RawNeedles, String) {
    let mut texts: Vec<String> = canaries.to_vec();
    let mut names: Vec<String> = (0..canaries.len()).map(canary).collect();
    let mut said = Vec::new();
    if !canaries.is_empty() {
        for log in logs {
            let mut forms = 0;
            for (index, text) in canaries.iter().enumerate() {
                let mut values = vec![text.clone()];
                if text.to_lowercase() != *text {
                    values.push(text.to_lowercase());
                }
                for value in values {
                    for (purpose, what) in TOKEN_FORMS {
                        match cipher
                            .live_token(&log.tenant, &log.subject, purpose, &value)
                            .await
                        {
                            Ok(Some(token)) => {
                                forms += 1;
                                texts.push(token);
                                names.push(format!(
                                    "{}'s token as a {what} (tenant {})",
                                    canary(index),
                                    log.tenant
                                ));
                            }
                            Ok(None) => {}
                            Err(e) => said.push(format!(
                                "tenant {}: no token forms ({})",
                                log.tenant,
                                e.code()
                            )),
                        }
                    }
                }
            }
            said.push(match forms {
                0 => format!(
                    "tenant {}: no live key of the subject, no token forms to look for",
                    log.tenant
                ),
                n => format!(
                    "tenant {}: {n} token form(s) under the live key",
                    log.tenant
                ),
            });
        }
    }
    said.dedup();
    (
        bus::RawNeedles {
            needles: Needles::new(&texts),
            names,
            canaries: canaries.len(),
        },
        said.join("; "),
    )
}

/// The raw scan as a check: each record with a needle, by topic,
/// partition and offset.
fn raw_check(scan: &bus::RawScan, raw: &bus::RawNeedles, tokens: &str) -> Check {
    let found = scan
        .hits
        .iter()
        .flat_map(|h| h.found.iter().map(|(_, _, n)| n))
        .sum();
    let canaries = raw.canaries;
    Check::count(RAW_STORE, RAW_CHECK, found)
        .at_all(scan.hits.iter().map(|h| h.describe(&raw.names)))
        .note(format!(
            "{} record(s), {} byte(s): key, payload and headers of every record read, ASCII \
             letters in any case, for {canaries} canar{} and {} token form(s) ({tokens})",
            scan.records,
            scan.bytes,
            if canaries == 1 { "y" } else { "ies" },
            raw.names.len() - canaries,
        ))
}

async fn bus_checks(
    settings: &Settings,
    stores: &Stores,
    cipher: &SubjectCipher,
    logs: &[SubjectLog],
    canaries: &[String],
) -> Vec<Check> {
    const STORE: &str = "bus";
    let lowered: Vec<String> = canaries.iter().map(|c| c.to_lowercase()).collect();
    let lowered = lowered.as_slice();
    let (raw, tokens) = raw_needles(cipher, logs, canaries).await;
    let keys: HashSet<String> = logs
        .iter()
        .map(|l| format!("{}/{}", l.tenant, l.subject))
        .collect();
    // The in-process bus lives in the data dir's SQLite file, also beside
    // PostgreSQL; an absent file is a bus that never ran.
    let pool = match (settings.kafka.is_some(), stores.sqlite_pool()) {
        (true, _) => None,
        (false, Some(pool)) => Some(pool),
        (false, None) if settings.database_file().exists() => {
            match mnemo_event_store::sqlite::connect(&settings.database_file()).await {
                Ok(pool) => Some(pool),
                Err(e) => {
                    return vec![Check::failed(STORE, "records of the subject", e)];
                }
            }
        }
        (false, None) => None,
    };
    let read = bus::records(settings, pool.as_ref(), &keys, &raw).await;
    if stores.sqlite_pool().is_none() {
        if let Some(pool) = &pool {
            pool.close().await;
        }
    }
    let (source, records, scan) = match read {
        Ok(read) => read,
        Err(e) => {
            let mut failed = vec![Check::failed(
                STORE,
                "records of the subject",
                format!("{e:#}"),
            )];
            if !canaries.is_empty() && settings.kafka.is_some() {
                failed.push(Check::failed(RAW_STORE, RAW_CHECK, format!("{e:#}")));
            }
            return failed;
        }
    };
    let mut checks = Vec::new();
    for log in logs {
        let key = format!("{}/{}", log.tenant, log.subject);
        let mut erased_scope = Tally::new(lowered.len());
        let mut since = Tally::new(lowered.len());
        let mut topics: BTreeMap<&str, u64> = BTreeMap::new();
        for record in records.iter().filter(|r| r.key == key) {
            *topics.entry(record.topic.as_str()).or_default() += 1;
            // Access signals and other non-JSON-or-unsealed records count
            // as records and open to nothing.
            let payload: Value = serde_json::from_slice(&record.payload).unwrap_or(Value::Null);
            let position = payload.get("global_position").and_then(Value::as_i64);
            let tally = match log.after_erasure(position) {
                true => &mut since,
                false => &mut erased_scope,
            };
            tally
                .add(cipher, log, &record.topic, &payload, lowered)
                .await;
        }
        let mut summary = Check::info(
            STORE,
            "records of the subject",
            erased_scope.total + since.total,
        )
        .tenant(&log.tenant)
        .at(source.name)
        .at_all(Tally::counts(&topics));
        if let Some(note) = &source.note {
            summary = summary.note(note.clone());
        }
        checks.push(summary);
        checks.extend(erased_scope.checks(
            STORE,
            "records that open to readable text",
            "canary in opened record text",
            &log.tenant,
        ));
        if since.readable() > 0 {
            checks.push(
                Check::info(
                    STORE,
                    "records posted after the last erasure that open",
                    since.readable(),
                )
                .tenant(&log.tenant)
                .at_all(Tally::counts(&since.readable)),
            );
        }
    }
    if !canaries.is_empty() {
        checks.push(match &scan {
            Some(scan) => raw_check(scan, &raw, &tokens),
            None => Check::skipped(
                RAW_STORE,
                RAW_CHECK,
                "the in-process bus's records are rows of the data dir's SQLite file: \
                 the files check scans their bytes",
            ),
        });
    }
    checks
}

/// The subject's points in every collection: the data dir's qdrant-edge
/// collections, or every embedding space's collection on the Qdrant server.
async fn vector_checks(
    settings: &Settings,
    tenants: &[TenantId],
    subject: &SubjectId,
) -> Vec<Check> {
    const STORE: &str = "vector_index";
    const CHECK: &str = "points of the subject";
    let counted = match &settings.qdrant {
        Some(qdrant) => qdrant_points(qdrant, tenants, subject).await,
        None => edge_points(settings, tenants, subject).await,
    };
    let per_collection = match counted {
        Ok(per_collection) => per_collection,
        Err(e) => {
            return tenants
                .iter()
                .map(|t| Check::failed(STORE, CHECK, format!("{e:#}")).tenant(t))
                .collect()
        }
    };
    tenants
        .iter()
        .enumerate()
        .map(|(i, tenant)| {
            let total = per_collection.iter().map(|(_, counts)| counts[i]).sum();
            let mut check = Check::count(STORE, CHECK, total).tenant(tenant).at_all(
                per_collection
                    .iter()
                    .map(|(name, counts)| format!("{name}: {}", counts[i])),
            );
            if per_collection.is_empty() {
                check = check.at("no collection");
            }
            check
        })
        .collect()
}

/// The dimension a collection's name carries (`<model>__<dimension>`, see
/// `EmbeddingSpace::collection_name`).
fn dimension_of(name: &str) -> Option<usize> {
    base_of(name)
        .rsplit_once("__")
        .and_then(|(_, dimension)| dimension.parse().ok())
        .filter(|d| *d > 0)
}

/// Per collection, the subject's points per tenant. The collections are
/// one process's files: none is opened while a server or a reindex runs on
/// the data dir (and none can start meanwhile: their locks are held until
/// the collections are closed).
async fn edge_points(
    settings: &Settings,
    tenants: &[TenantId],
    subject: &SubjectId,
) -> anyhow::Result<Vec<(String, Vec<u64>)>> {
    let collections = crate::vectors::collections(settings);
    if !collections.path("").is_dir() {
        return Ok(Vec::new());
    }
    let lock = crate::data_dir_lock::try_take(&settings.data_dir, "mnemo verify-erasure")?
        .map_err(|holder| {
            anyhow::anyhow!(
                "{holder} is running on this data dir: stop it to count the points \
                 (qdrant-edge collections are one process's files)"
            )
        })?;
    let reindex = std::fs::File::create(collections.path("reindex.lock"))?;
    reindex.try_lock().map_err(|_| {
        anyhow::anyhow!("a mnemo reindex is writing a collection: count the points after it")
    })?;
    let mut counted = Vec::new();
    for name in collections.list()? {
        let dimension = dimension_of(&name)
            .with_context(|| format!("collection {name} does not name its dimension"))?;
        let dir = collections.path(&name);
        let index = tokio::task::spawn_blocking(move || EdgeVectorIndex::open(&dir, dimension))
            .await?
            .with_context(|| format!("cannot open the collection {name}"))?;
        let mut counts = Vec::new();
        for tenant in tenants {
            counts.push(index.count(tenant, Some(subject)).await?);
        }
        // Closing flushes: off the runtime.
        tokio::task::spawn_blocking(move || drop(index)).await?;
        counted.push((name, counts));
    }
    drop(reindex);
    drop(lock);
    Ok(counted)
}

async fn qdrant_points(
    qdrant: &mnemo_vector_index::QdrantSettings,
    tenants: &[TenantId],
    subject: &SubjectId,
) -> anyhow::Result<Vec<(String, Vec<u64>)>> {
    let mut counted = Vec::new();
    for space in mnemo_vector_index::QdrantVectorIndex::spaces(qdrant).await? {
        let Some(dimension) = dimension_of(&space) else {
            // Not a collection mnemo made.
            continue;
        };
        let index = mnemo_vector_index::QdrantVectorIndex::connect(qdrant, &space, dimension)
            .await
            .with_context(|| format!("cannot open the Qdrant collection {space}"))?;
        let mut counts = Vec::new();
        for tenant in tenants {
            counts.push(index.count(tenant, Some(subject)).await?);
        }
        counted.push((index.collection().to_owned(), counts));
    }
    Ok(counted)
}

async fn scan_data_dir(settings: &Settings, needles: &Needles) -> Check {
    let dir = &settings.data_dir;
    // The server's model cache, when it is in the data dir, holds public
    // files only, and a tokenizer's vocabulary holds most words a canary
    // could be: scanning it would only find false positives.
    let models = settings
        .clone()
        .keep_models_in_data_dir()
        .embedding
        .cache_dir;
    let skip: Vec<PathBuf> = Some(models)
        .filter(|models| models.starts_with(dir) && models != dir)
        .into_iter()
        .collect();
    let scan = scan_blocking(dir, needles, skip).await;
    tree_check("files", "canary bytes in the data dir", dir, scan)
}

async fn postgres_files(
    settings: &Settings,
    system: &mnemo_pg::SystemPool,
    dir: &Path,
    needles: &Needles,
) -> Check {
    const STORE: &str = "postgres_files";
    const CHECK: &str = "canary bytes in PostgreSQL's files";
    if needles.is_empty() {
        return Check::skipped(STORE, CHECK, "no --canary given");
    }
    let checkpoint = tables::checkpoint(settings, system).await;
    let scan = scan_blocking(dir, needles, Vec::new()).await;
    let check = tree_check(STORE, CHECK, dir, scan);
    let done = match checkpoint {
        Ok(by) => format!("CHECKPOINT run as {by} first"),
        Err(why) => format!(
            "CHECKPOINT refused ({why}): pages changed since the last checkpoint may be only \
             in pg_wal (scanned too); deleted rows stay in the table files until VACUUM"
        ),
    };
    let note = match &check.note {
        Some(note) => format!("{done}; {note}"),
        None => done,
    };
    check.note(note)
}

async fn scan_blocking(
    dir: &Path,
    needles: &Needles,
    skip: Vec<PathBuf>,
) -> Result<TreeScan, String> {
    let dir = dir.to_path_buf();
    let needles = needles.clone();
    tokio::task::spawn_blocking(move || scan_tree(&dir, &needles, &skip))
        .await
        .map_err(|e| e.to_string())
}

/// A byte scan as a check: each file with its hits; files that could not
/// be read make a clean scan incomplete.
fn tree_check(
    store: &'static str,
    check: &'static str,
    root: &Path,
    scan: Result<TreeScan, String>,
) -> Check {
    let scan = match scan {
        Ok(scan) => scan,
        Err(e) => return Check::failed(store, check, e),
    };
    let found = scan.hits.iter().flat_map(|h| h.counts.iter()).sum();
    let mut result = Check::count(store, check, found).at_all(
        scan.hits
            .iter()
            .map(|h| format!("{}: {}", h.path.display(), canary_counts(&h.counts))),
    );
    let mut note = format!(
        "{} file(s), {} byte(s) scanned under {}",
        scan.files,
        scan.bytes,
        root.display()
    );
    for skipped in &scan.skipped {
        note.push_str(&format!(
            "; {} not scanned (the embedding model's public files)",
            skipped.display()
        ));
    }
    if scan.vanished > 0 {
        note.push_str(&format!(
            "; {} vanished while the scan ran (removed, nothing left to read)",
            scan.vanished
        ));
    }
    if let Some((path, why)) = scan.unreadable.first() {
        note.push_str(&format!(
            "; {} could not be read (first: {}: {why})",
            scan.unreadable.len(),
            path.display()
        ));
        if found == 0 {
            result.outcome = report::Outcome::Failed;
        }
    }
    result.note(note)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn clear_texts_are_the_text_markers_anywhere() {
        let payload = json!({
            "content": {"$text": "one"},
            "tags": [{"$text": "two"}, "plain"],
            "other": {"$text": "not a marker", "x": 1},
            "gone": {"$erased": true},
            "sealed_tags": {"$value": ["three", {"deep": "four"}, 5]},
            "session": {"$value": "five"},
            "not_value": {"$value": "six", "x": 1},
        });
        let mut texts = clear_texts(&payload);
        texts.sort();
        assert_eq!(texts, ["five", "four", "one", "three", "two"]);
    }

    fn subject_log(tenant: &str, subject: &str) -> SubjectLog {
        SubjectLog {
            tenant: TenantId::parse(tenant).unwrap(),
            subject: SubjectId::parse(subject).unwrap(),
            events: Vec::new(),
            erased_before: None,
            last_erasure: None,
        }
    }

    #[tokio::test]
    async fn token_forms_are_the_canaries_tokens_under_the_live_key_only() {
        let cipher = SubjectCipher::new(Arc::new(mnemo_crypto::MemorySubjectKeyStore::new()));
        let log = subject_log("acme", "s1");
        let canaries = vec!["Zq-Tag-Canary".to_owned(), "zq-session-canary".to_owned()];

        // No key yet: the canaries alone, and making none.
        let (raw, note) = raw_needles(&cipher, std::slice::from_ref(&log), &canaries).await;
        assert_eq!(raw.names, ["canary #1", "canary #2"]);
        assert!(note.contains("no live key"), "{note}");
        assert_eq!(
            cipher
                .live_generation(&log.tenant, &log.subject)
                .await
                .unwrap(),
            None
        );

        let tag = cipher
            .token(
                &log.tenant,
                &log.subject,
                TokenPurpose::Tag,
                "zq-tag-canary",
            )
            .await
            .unwrap();
        let (raw, note) = raw_needles(&cipher, std::slice::from_ref(&log), &canaries).await;
        // Three purposes for each form: the first canary as given and
        // lowercased, the second as given.
        assert_eq!(raw.canaries, 2);
        assert_eq!(raw.names.len(), 2 + 3 * 3, "{:?}", raw.names);
        assert!(note.contains("9 token form(s)"), "{note}");
        let payload = format!("{{\"tags\": [\"{}\"]}}", tag.to_uppercase());
        let counts = raw.needles.count(payload.as_bytes());
        let found: Vec<&str> = counts
            .iter()
            .zip(&raw.names)
            .filter(|(n, _)| **n > 0)
            .map(|(_, name)| name.as_str())
            .collect();
        assert_eq!(found, ["canary #1's token as a tag (tenant acme)"]);

        cipher.destroy(&log.tenant, &log.subject).await.unwrap();
        let (raw, _) = raw_needles(&cipher, std::slice::from_ref(&log), &canaries).await;
        assert_eq!(raw.names.len(), 2);
    }

    #[tokio::test]
    async fn no_canary_no_needles() {
        let cipher = SubjectCipher::new(Arc::new(mnemo_crypto::MemorySubjectKeyStore::new()));
        let (raw, note) = raw_needles(&cipher, &[subject_log("acme", "s1")], &[]).await;
        assert!(raw.is_empty());
        assert!(note.is_empty());
    }

    #[test]
    fn the_dimension_comes_from_the_collection_name() {
        assert_eq!(
            dimension_of("sentence-transformers_all-MiniLM-L6-v2__384"),
            Some(384)
        );
        assert_eq!(
            dimension_of("lexical-hash-v1__256.g1700000000000"),
            Some(256)
        );
        assert_eq!(dimension_of("reindex.lock"), None);
        assert_eq!(dimension_of("odd__0"), None);
    }
}
