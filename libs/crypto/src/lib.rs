//! Crypto-shredding for mnemo. This crate owns the per-(tenant, subject) data
//! keys, the master key that wraps them, and the payload marker protocol that
//! keeps subject content (message text, memory text) encrypted inside
//! otherwise readable events. Erasing a subject destroys its key: every event
//! stays readable, and its content reads as `{"$erased": true}`.
//!
//! Key decisions:
//!
//! - **Markers.** Content sits anywhere in a `serde_json::Value` as
//!   `{"$text": s}` (clear, in memory only), `{"$sealed": {"alg": "A256GCM",
//!   "kid", "nonce", "ct"}}` (stored) or `{"$erased": true}` (read back after
//!   erasure). Only an object with exactly that one key is a marker.
//!   [`contains_clear_text`] lets the event store refuse unsealed payloads.
//! - **AES-256-GCM, one data key per subject, random 96-bit nonces.** A key
//!   seals one subject's content only, far below the random-nonce limit. The
//!   AAD `tenant \0 subject \0 kid` binds each ciphertext to its place: moved
//!   to another subject, tenant or key id, it fails authentication.
//! - **Missing key = erased, failed authentication = error.** A key that is
//!   not found (destroyed, or not this subject's) yields `$erased`; a
//!   ciphertext that does not verify under an existing key is
//!   [`CryptoError::Tampered`], so tampering never passes for an erasure.
//! - **Wrapping.** Data keys are stored wrapped by AES-256-GCM under a key
//!   HKDF-derived from the master key (not the master key bytes themselves,
//!   so [`MasterKey::derive`] outputs and the wrapping key are independent),
//!   AAD `tenant \0 subject \0 key_id`, with the master key's fingerprint
//!   ([`MasterKey::id`]) beside them for later rotation. A new key after an
//!   erasure gets a new random id, so old ciphertexts never match it.
//! - **Generations.** Each key of a subject has a generation number
//!   ([`KeyRef::generation`]): 1 for the first, one more after each
//!   erasure. Destroying a key leaves a tombstone (tenant, subject, key id,
//!   generation, when; no key material) so the count survives the key.
//!   Ids that must start afresh after an erasure (a client's message ids)
//!   are derived with the generation.
//! - **Keyed tokens.** What must be compared but not read (a client's
//!   message ids for deduplication, tags and sessions for filters) is stored
//!   as [`SubjectCipher::token`]: an HMAC under a key derived from the
//!   subject's data key. Destroying the key makes every token of the
//!   subject unlinkable to its value, and the next generation's tokens
//!   differ, so nothing connects a subject's data across an erasure.
//! - **Key hygiene.** [`MasterKey`] and [`DataKey`] wipe themselves on drop
//!   (the AES/GHASH key schedules too, through the `zeroize` features), print
//!   no bytes in `Debug`, are not `Clone`, and errors carry ids only. A
//!   master key file that group or others can access is refused.
//! - **Cache.** [`SubjectCipher`] caches unwrapped keys (bounded, 10k subjects
//!   and 60 s by default) and evicts a subject's keys on its own
//!   [`SubjectCipher::destroy`]. A destroy done by *another* process is seen
//!   once the TTL lapses: use one cipher per process and route erasures
//!   through it, or lower the TTL.
//!
//! Operating the SQLite store ([`SqliteSubjectKeyStore`], feature `sqlite`,
//! on by default), which the caller must do for erasure to be real:
//!
//! - Open the pool with `PRAGMA secure_delete = ON` on every connection
//!   (`SqliteConnectOptions::pragma("secure_delete", "ON")`), so a destroyed
//!   key's bytes are overwritten with zeros in the database file instead of
//!   lingering in free page space. `destroy` also turns it on for its own
//!   connection, but page reorganisations on other connections need it too.
//! - After an erasure, checkpoint the WAL (`PRAGMA wal_checkpoint(TRUNCATE)`)
//!   so the old page images holding the wrapped key leave the `-wal` file.
//! - Backups taken before an erasure still hold the key: their retention
//!   bounds how long erased content stays recoverable.
//!
//! The PostgreSQL store ([`PostgresSubjectKeyStore`], feature `postgres`)
//! keeps keys under forced row-level security per tenant; `destroy` deletes
//! the row, and vacuum and WAL/backup retention bound how long its bytes
//! stay on disk (see `docs/postgres.md`).

mod cipher;
mod data_key;
mod error;
mod marker;
mod master;
mod store;

pub use cipher::{SubjectCipher, DEFAULT_CACHE_SUBJECTS, DEFAULT_CACHE_TTL};
pub use data_key::{new_key_id, DataKey, KeyRef, TokenPurpose, LEGACY_GENERATION, TOKEN_PREFIX};
pub use error::CryptoError;
pub use marker::contains_clear_text;
pub use master::MasterKey;
pub use store::MemorySubjectKeyStore;
#[cfg(feature = "postgres")]
pub use store::PostgresSubjectKeyStore;
#[cfg(feature = "sqlite")]
pub use store::SqliteSubjectKeyStore;
pub use store::SubjectKeyStore;
