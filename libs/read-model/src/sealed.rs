//! What both adapters store of the subject, and how: the fields that came
//! from the subject's conversation or a client's choice (content, tags,
//! session) as one blob sealed under the subject's data key, and the tags
//! again as keyed tokens for the tag filter. Everything else in a row is an
//! id, a name of ours, a number or a time.
//!
//! Sealed rather than deleted-and-hoped-for: on PostgreSQL a DELETE leaves
//! the row's bytes in the relation files until vacuum reuses the space
//! (which the application role may not even ask for), and in WAL and
//! backups. Sealed, those bytes are ciphertext that the erasure's key
//! destruction makes unreadable, wherever they linger.
//!
//! Rows written before the read model was sealed (`sealed` NULL) keep
//! their clear columns and are read from them, but only while the subject
//! has a live key: every memory's content was sealed in the log under that
//! key, so a subject without one was erased.

use std::collections::HashMap;
use std::future::Future;

use mnemo_crypto::{SubjectCipher, TokenPurpose};
use mnemo_domain::{Memory, MemoryId, SessionId, SubjectId, SubjectText, TenantId};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ReadModelError;

/// The plaintext of a row's sealed blob.
#[derive(Serialize, Deserialize)]
struct SubjectFields {
    content: String,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    session: Option<String>,
}

/// A memory to write, with the generation of its subject's key that its
/// content was read under when it has one (see [`crate::MemoryReadModel::upsert_many`]).
pub(crate) struct Row<'a> {
    pub memory: &'a Memory,
    pub generation: Option<u32>,
}

impl<'a> Row<'a> {
    /// A row sealed under its subject's live key, created on first use.
    pub(crate) fn under_live_key(memory: &'a Memory) -> Self {
        Row {
            memory,
            generation: None,
        }
    }

    /// Rows each sealed only under its subject's key of that generation.
    pub(crate) fn under_generations(memories: &'a [(Memory, u32)]) -> Vec<Self> {
        memories
            .iter()
            .map(|(memory, generation)| Row {
                memory,
                generation: Some(*generation),
            })
            .collect()
    }
}

/// What a row stores of the subject when it is written.
pub(crate) struct SealedRow {
    /// The sealed blob, as the JSON text of its `$sealed` marker.
    pub sealed: String,
    /// The memory's tags as keyed tokens, in the memory's order.
    pub tag_tokens: Vec<String>,
}

/// [`seal`] of each memory, in order: what a write of several rows seals
/// before its transaction begins.
pub(crate) async fn seal_all(
    cipher: &SubjectCipher,
    tenant: &TenantId,
    rows: &[Row<'_>],
) -> Result<Vec<SealedRow>, ReadModelError> {
    let mut sealed = Vec::with_capacity(rows.len());
    for row in rows {
        sealed.push(seal(cipher, tenant, row).await?);
    }
    Ok(sealed)
}

/// Seals the memory's subject fields and tokenises its tags under the
/// subject's live key: created on first use (as the log does) for a row
/// without a generation, and only the key of its generation for one with
/// ([`ReadModelError::SubjectErased`] when that key is gone). An erased
/// memory cannot be sealed: its content is gone.
pub(crate) async fn seal(
    cipher: &SubjectCipher,
    tenant: &TenantId,
    row: &Row<'_>,
) -> Result<SealedRow, ReadModelError> {
    let memory = row.memory;
    let Some(content) = memory.content.as_text() else {
        return Err(ReadModelError::ErasedContent);
    };
    let fields = SubjectFields {
        content: content.to_owned(),
        tags: memory.tags.clone(),
        session: memory.session.as_ref().map(|s| s.as_str().to_owned()),
    };
    let mut blob = serde_json::json!({
        "$value": serde_json::to_value(&fields).expect("subject fields serialize")
    });
    let subject = &memory.subject;
    let tag_tokens = match row.generation {
        None => {
            cipher.seal(tenant, subject, &mut blob).await?;
            cipher
                .tokens(tenant, subject, TokenPurpose::Tag, &memory.tags)
                .await?
        }
        Some(generation) => {
            let erased = ReadModelError::SubjectErased;
            cipher
                .seal_in_generation(tenant, subject, generation, &mut blob)
                .await?
                .ok_or(erased)?;
            cipher
                .tokens_in_generation(tenant, subject, generation, TokenPurpose::Tag, &memory.tags)
                .await?
                .ok_or(ReadModelError::SubjectErased)?
        }
    };
    Ok(SealedRow {
        sealed: blob.to_string(),
        tag_tokens,
    })
}

/// The tokens to look for when listing by these tags, or `None` when the
/// subject has no live key: then none of its rows can be served (sealed
/// ones open as erased, legacy ones belong to an erased subject), so the
/// caller answers with nothing. Never creates a key.
pub(crate) async fn query_tokens(
    cipher: &SubjectCipher,
    tenant: &TenantId,
    subject: &SubjectId,
    tags: &[String],
) -> Result<Option<Vec<String>>, ReadModelError> {
    let mut tokens = Vec::with_capacity(tags.len());
    for tag in tags {
        match cipher
            .live_token(tenant, subject, TokenPurpose::Tag, tag)
            .await?
        {
            Some(token) => tokens.push(token),
            None => return Ok(None),
        }
    }
    Ok(Some(tokens))
}

/// A row as decoded from its columns, before its subject fields are
/// opened: `memory` holds the clear columns (empty for a sealed row).
pub(crate) struct StoredRow {
    pub memory: Memory,
    pub sealed: Option<String>,
}

/// The memories the rows hold that may be served, in the rows' order:
/// sealed rows opened (dropped when their key is gone), legacy rows kept
/// only while their subject has a live key.
///
/// The sealed blobs of each subject are opened in one call, so a page of
/// one subject's rows costs one key lookup at most (none when the cipher
/// has the key cached), and one per distinct subject of legacy rows.
pub(crate) async fn reveal(
    cipher: &SubjectCipher,
    tenant: &TenantId,
    rows: Vec<StoredRow>,
) -> Result<Vec<Memory>, ReadModelError> {
    let mut by_subject: HashMap<&SubjectId, Vec<usize>> = HashMap::new();
    for (i, row) in rows.iter().enumerate() {
        if row.sealed.is_some() {
            by_subject.entry(&row.memory.subject).or_default().push(i);
        }
    }
    let mut opened: Vec<Option<Option<SubjectFields>>> = Vec::new();
    opened.resize_with(rows.len(), || None);
    for (subject, indexes) in by_subject {
        let blobs = indexes
            .iter()
            .map(|&i| rows[i].sealed.as_deref().unwrap_or_default());
        let fields = open_all(cipher, tenant, subject, blobs).await?;
        for (i, fields) in indexes.into_iter().zip(fields) {
            opened[i] = Some(fields);
        }
    }

    let mut legacy_live: HashMap<SubjectId, bool> = HashMap::new();
    let mut out = Vec::with_capacity(rows.len());
    for (StoredRow { mut memory, .. }, opened) in rows.into_iter().zip(opened) {
        match opened {
            // Sealed, and its key is gone.
            Some(None) => continue,
            Some(Some(fields)) => {
                memory.content = SubjectText::Text(fields.content);
                memory.tags = fields.tags;
                memory.session = fields
                    .session
                    .map(SessionId::parse)
                    .transpose()
                    .map_err(|_| ReadModelError::Corrupt("sealed session".into()))?;
            }
            // Legacy: clear columns.
            None => {
                let live = match legacy_live.get(&memory.subject) {
                    Some(live) => *live,
                    None => {
                        let live = cipher
                            .live_generation(tenant, &memory.subject)
                            .await?
                            .is_some();
                        legacy_live.insert(memory.subject.clone(), live);
                        live
                    }
                };
                if !live {
                    continue;
                }
            }
        }
        out.push(memory);
    }
    Ok(out)
}

/// A page of `list`: pages of rows from `page` (called with the cursor to
/// read before) revealed until `limit` memories can be served or the rows
/// run out. One query in the usual case; more only when rows were held
/// back (their subject's key is gone but its rows are not deleted yet), so
/// a short page still means the end.
pub(crate) async fn fill_page<F, Fut>(
    cipher: &SubjectCipher,
    tenant: &TenantId,
    limit: u32,
    mut before: Option<MemoryId>,
    mut page: F,
) -> Result<Vec<Memory>, ReadModelError>
where
    F: FnMut(Option<MemoryId>) -> Fut,
    Fut: Future<Output = Result<Vec<StoredRow>, ReadModelError>>,
{
    let limit = limit as usize;
    let mut out = Vec::new();
    loop {
        let rows = page(before).await?;
        let more = rows.len() >= limit;
        before = rows.last().map(|row| row.memory.id);
        out.extend(reveal(cipher, tenant, rows).await?);
        if out.len() >= limit || !more {
            break;
        }
    }
    out.truncate(limit);
    Ok(out)
}

/// The subject fields of one subject's sealed blobs, in order, `None` for
/// each whose key is gone: one `open` over all of them.
async fn open_all<'a>(
    cipher: &SubjectCipher,
    tenant: &TenantId,
    subject: &SubjectId,
    blobs: impl Iterator<Item = &'a str>,
) -> Result<Vec<Option<SubjectFields>>, ReadModelError> {
    let corrupt = || ReadModelError::Corrupt("sealed".into());
    let blobs = blobs
        .map(serde_json::from_str)
        .collect::<Result<Vec<Value>, _>>()
        .map_err(|_| corrupt())?;
    let count = blobs.len();
    let mut batch = Value::Array(blobs);
    // Each blob is one sealed marker, and nothing else is.
    if cipher.open(tenant, subject, &mut batch).await? != count {
        return Err(corrupt());
    }
    let Value::Array(opened) = batch else {
        return Err(corrupt());
    };
    opened
        .into_iter()
        .map(|blob| {
            let Value::Object(mut marker) = blob else {
                return Err(corrupt());
            };
            if marker.len() != 1 {
                return Err(corrupt());
            }
            if marker.get("$erased") == Some(&Value::Bool(true)) {
                return Ok(None);
            }
            let fields = marker.remove("$value").ok_or_else(corrupt)?;
            serde_json::from_value(fields)
                .map(Some)
                .map_err(|_| corrupt())
        })
        .collect()
}
