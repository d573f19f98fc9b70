use std::fmt;
use std::sync::Arc;

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Key, Nonce};
use mnemo_domain::{SubjectId, TenantId};
use rand::rngs::OsRng;
use rand::RngCore;
use zeroize::Zeroizing;

/// AES-GCM nonce length. Nonces are random: a data key seals one subject's
/// content only, far below the 2^32 messages where random 96-bit nonces
/// start to risk a collision.
pub(crate) const NONCE_LEN: usize = 12;
/// AES-GCM tag length, appended to every ciphertext.
pub(crate) const TAG_LEN: usize = 16;

/// A subject's 256-bit data key. Wiped on drop; `Debug` prints no bytes; not
/// `Clone` so copies cannot silently multiply (share it through `Arc`).
pub struct DataKey {
    bytes: Zeroizing<[u8; 32]>,
}

impl DataKey {
    /// A fresh random key from the OS generator.
    pub fn generate() -> Self {
        let mut bytes = Zeroizing::new([0u8; 32]);
        OsRng.fill_bytes(&mut bytes[..]);
        Self { bytes }
    }

    /// Wraps existing key bytes (for key stores in other crates that unwrap
    /// keys themselves). The caller should wipe its own copy.
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self {
            bytes: Zeroizing::new(bytes),
        }
    }

    pub(crate) fn expose(&self) -> &[u8; 32] {
        &self.bytes
    }

    /// A cipher instance for this key. Built per operation rather than kept:
    /// key expansion is cheap next to JSON handling, and one fewer long-lived
    /// copy of the key schedule exists (it is wiped on drop either way).
    pub(crate) fn aead(&self) -> Aes256Gcm {
        Aes256Gcm::new(Key::<Aes256Gcm>::from_slice(&self.bytes[..]))
    }

    /// A keyed token of `value` for `purpose` (see [`TokenPurpose`]):
    /// HMAC-SHA256 under a key HKDF-derived from this data key, so the
    /// token key is destroyed with the data key and never equals it (the
    /// AES key is not reused as a MAC key). 128 bits of the MAC, base64url,
    /// prefixed `tk1_` so a scan can tell tokens from text.
    pub(crate) fn token(&self, purpose: TokenPurpose, value: &str) -> String {
        use hmac::{Hmac, Mac};
        let hk = hkdf::Hkdf::<sha2::Sha256>::new(None, &self.bytes[..]);
        let mut mac_key = Zeroizing::new([0u8; 32]);
        hk.expand(b"mnemo token key v1", &mut mac_key[..])
            .expect("32 bytes is a valid HKDF-SHA256 output length");
        let mut mac = <Hmac<sha2::Sha256> as Mac>::new_from_slice(&mac_key[..])
            .expect("HMAC takes a key of any length");
        mac.update(purpose.label().as_bytes());
        mac.update(&[0]);
        mac.update(value.as_bytes());
        let out = mac.finalize().into_bytes();
        use base64::Engine as _;
        format!(
            "{TOKEN_PREFIX}{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&out[..16])
        )
    }
}

/// What every keyed token starts with.
pub const TOKEN_PREFIX: &str = "tk1_";

/// What a keyed token stands for. Part of the MAC input, so a tag and a
/// session with the same text get different tokens and one cannot be
/// matched against the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TokenPurpose {
    /// A client's message id (deduplication of posted messages).
    MessageId,
    /// A memory tag (tag filters in the read model and the vector index).
    Tag,
    /// A conversation's session id (session filters, the consolidation
    /// buffer's conversations).
    Session,
}

impl TokenPurpose {
    fn label(self) -> &'static str {
        match self {
            TokenPurpose::MessageId => "message_id",
            TokenPurpose::Tag => "tag",
            TokenPurpose::Session => "session",
        }
    }
}

impl PartialEq for DataKey {
    /// Constant-time comparison: no early exit on the first differing byte.
    fn eq(&self, other: &Self) -> bool {
        self.bytes
            .iter()
            .zip(other.bytes.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
    }
}

impl Eq for DataKey {}

impl fmt::Debug for DataKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DataKey(<redacted>)")
    }
}

/// A data key together with its public id (the `kid` in sealed markers)
/// and its generation.
#[derive(Clone, Debug)]
pub struct KeyRef {
    pub key_id: String,
    pub key: Arc<DataKey>,
    /// Which of the subject's keys this is: 1 for its first key, one more
    /// than the last destroyed one after an erasure, and
    /// [`LEGACY_GENERATION`] for a key created before generations were
    /// counted. Not secret. Ids derived per generation (a client's message
    /// ids) therefore start afresh after an erasure.
    pub generation: u32,
}

/// The generation of a key created before keys had generations (the rows
/// a migration found). Its subject's derived ids keep the derivation they
/// had then, so a retry across the upgrade is still recognised.
pub const LEGACY_GENERATION: u32 = 0;

/// The generation of a subject's next key, given the highest generation
/// destroyed so far (`None`: none was).
pub(crate) fn next_generation(last_destroyed: Option<u32>) -> u32 {
    last_destroyed.map_or(1, |g| g.saturating_add(1))
}

/// A new, random, non-secret key id. Random (not derived from tenant and
/// subject) so that a subject's key after an erasure has a different id and
/// old ciphertexts can never be matched to the new key.
pub fn new_key_id() -> String {
    let mut raw = [0u8; 16];
    OsRng.fill_bytes(&mut raw);
    format!("dk_{}", hex::encode(raw))
}

/// Associated data binding a ciphertext to its place: `tenant \0 subject \0
/// kid`. Tenant and subject ids cannot contain NUL (they are validated), so
/// the encoding is unambiguous even when `kid` comes from an untrusted
/// payload.
pub(crate) fn aad(tenant: &TenantId, subject: &SubjectId, key_id: &str) -> Vec<u8> {
    let mut aad =
        Vec::with_capacity(tenant.as_str().len() + subject.as_str().len() + key_id.len() + 2);
    aad.extend_from_slice(tenant.as_str().as_bytes());
    aad.push(0);
    aad.extend_from_slice(subject.as_str().as_bytes());
    aad.push(0);
    aad.extend_from_slice(key_id.as_bytes());
    aad
}

/// The associated data of a sealed marker: [`aad`], plus `\0json` for a
/// sealed JSON value, so a value's marker cannot be passed off as text (or
/// the other way round) by editing its `enc` field.
pub(crate) fn aad_for(tenant: &TenantId, subject: &SubjectId, key_id: &str, json: bool) -> Vec<u8> {
    let mut aad = aad(tenant, subject, key_id);
    if json {
        aad.extend_from_slice(b"\0json");
    }
    aad
}

/// Encrypts with a fresh random nonce. Returns (nonce, ciphertext || tag).
pub(crate) fn seal_bytes(
    cipher: &Aes256Gcm,
    aad: &[u8],
    plaintext: &[u8],
) -> Result<([u8; NONCE_LEN], Vec<u8>), crate::CryptoError> {
    let mut nonce = [0u8; NONCE_LEN];
    OsRng.fill_bytes(&mut nonce);
    let ct = cipher
        .encrypt(
            Nonce::from_slice(&nonce),
            Payload {
                msg: plaintext,
                aad,
            },
        )
        .map_err(|_| crate::CryptoError::Encrypt)?;
    Ok((nonce, ct))
}

/// Decrypts and authenticates; `None` when authentication fails (the caller
/// knows which error that is in its context).
pub(crate) fn open_bytes(
    cipher: &Aes256Gcm,
    aad: &[u8],
    nonce: &[u8; NONCE_LEN],
    ciphertext: &[u8],
) -> Option<Vec<u8>> {
    cipher
        .decrypt(
            Nonce::from_slice(nonce),
            Payload {
                msg: ciphertext,
                aad,
            },
        )
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(t: &str, s: &str) -> (TenantId, SubjectId) {
        (TenantId::parse(t).unwrap(), SubjectId::parse(s).unwrap())
    }

    #[test]
    fn aad_binds_ciphertext_to_tenant_subject_and_key_id() {
        // Same key everywhere: only the associated data differs, so each
        // failure below is the AAD's doing.
        let key = DataKey::generate();
        let cipher = key.aead();
        let (t, a) = ids("t1", "alice");
        let (t2, b) = ids("t2", "bob");
        let (nonce, ct) = seal_bytes(&cipher, &aad(&t, &a, "k1"), b"secret").unwrap();

        assert_eq!(
            open_bytes(&cipher, &aad(&t, &a, "k1"), &nonce, &ct).as_deref(),
            Some(&b"secret"[..])
        );
        assert!(open_bytes(&cipher, &aad(&t, &b, "k1"), &nonce, &ct).is_none());
        assert!(open_bytes(&cipher, &aad(&t2, &a, "k1"), &nonce, &ct).is_none());
        assert!(open_bytes(&cipher, &aad(&t, &a, "k2"), &nonce, &ct).is_none());
    }

    #[test]
    fn tokens_are_keyed_per_key_and_purpose_and_hide_the_value() {
        let key = DataKey::generate();
        let a = key.token(TokenPurpose::Tag, "penicillin");
        assert_eq!(a, key.token(TokenPurpose::Tag, "penicillin"), "stable");
        assert!(a.starts_with(TOKEN_PREFIX) && a.len() == TOKEN_PREFIX.len() + 22);
        assert!(!a.to_lowercase().contains("penicillin"));
        assert_ne!(a, key.token(TokenPurpose::Session, "penicillin"));
        assert_ne!(a, key.token(TokenPurpose::Tag, "penicillin "));
        // Another key (the subject's next generation, or another subject):
        // another token, so nothing links the two.
        assert_ne!(
            a,
            DataKey::generate().token(TokenPurpose::Tag, "penicillin")
        );
    }

    #[test]
    fn data_key_debug_is_redacted_and_ids_are_unique() {
        let key = DataKey::generate();
        let shown = format!("{key:?}");
        assert_eq!(shown, "DataKey(<redacted>)");
        assert!(!shown.contains(&hex::encode(key.expose())));
        assert_ne!(new_key_id(), new_key_id());
        assert_ne!(DataKey::generate(), key);
        assert_eq!(DataKey::from_bytes(*key.expose()), key);
    }
}
