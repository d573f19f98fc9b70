use std::fmt;
use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use aes_gcm::aead::KeyInit;
use aes_gcm::{Aes256Gcm, Key};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use hkdf::Hkdf;
use mnemo_domain::{SubjectId, TenantId};
use rand::rngs::OsRng;
use rand::RngCore;
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use crate::data_key::{self, DataKey, NONCE_LEN, TAG_LEN};
use crate::CryptoError;

/// Domain separation for the fingerprint, so `id()` is not a hash that
/// happens to be computed over the key anywhere else.
const ID_DOMAIN: &[u8] = b"mnemo/master-key-id/v1\0";
/// HKDF salt for everything derived from the master key.
const HKDF_SALT: &[u8] = b"mnemo/master-key/hkdf/v1";
/// Prefix of the HKDF info of public `derive()` calls. Internal keys use
/// infos that do not start with it, so no `derive(purpose, context)` call can
/// reproduce the key-wrapping key.
const DERIVE_INFO_PREFIX: &[u8] = b"mnemo/derive/v1\0";
/// HKDF info of the key that wraps subject data keys.
const WRAP_INFO: &[u8] = b"mnemo/internal/subject-key-wrap/v1";
/// Version byte in front of wrapped keys, for a future format change.
const WRAP_VERSION: u8 = 1;
const WRAPPED_LEN: usize = 1 + NONCE_LEN + 32 + TAG_LEN;

/// The platform's root key (32 bytes, from config or a key file). It never
/// encrypts content itself: it wraps subject data keys (through an HKDF-derived
/// wrapping key) and derives keys for other purposes.
///
/// Wiped on drop; `Debug` shows only the fingerprint; not `Clone` (share it
/// through `Arc`).
pub struct MasterKey {
    bytes: Zeroizing<[u8; 32]>,
    /// AES-256-GCM under HKDF(master, WRAP_INFO). The `aes`/`ghash`/`polyval`
    /// `zeroize` features make its key schedule wipe itself on drop.
    wrapper: Aes256Gcm,
    id: String,
}

impl MasterKey {
    fn from_bytes(bytes: Zeroizing<[u8; 32]>) -> Result<Self, CryptoError> {
        if bytes.iter().all(|b| *b == 0) {
            // An all-zero key is a placeholder in a config file, not a key.
            return Err(CryptoError::InvalidMasterKey("the key is all zero bytes"));
        }
        let id = {
            let mut h = Sha256::new();
            h.update(ID_DOMAIN);
            h.update(&bytes[..]);
            hex::encode(&h.finalize()[..8])
        };
        let wrap_key = hkdf_expand(&bytes, WRAP_INFO);
        let wrapper = Aes256Gcm::new(Key::<Aes256Gcm>::from_slice(&wrap_key[..]));
        Ok(Self { bytes, wrapper, id })
    }

    /// Parses a key given as standard base64 (surrounding whitespace ignored).
    pub fn from_base64(s: &str) -> Result<Self, CryptoError> {
        let decoded = Zeroizing::new(
            B64.decode(s.trim())
                .map_err(|_| CryptoError::InvalidMasterKey("not standard base64"))?,
        );
        if decoded.len() != 32 {
            return Err(CryptoError::InvalidMasterKey(
                "must decode to exactly 32 bytes",
            ));
        }
        let mut bytes = Zeroizing::new([0u8; 32]);
        bytes.copy_from_slice(&decoded);
        Self::from_bytes(bytes)
    }

    /// A fresh random key from the OS generator.
    pub fn generate() -> Self {
        loop {
            let mut bytes = Zeroizing::new([0u8; 32]);
            OsRng.fill_bytes(&mut bytes[..]);
            // Only fails for all-zero bytes, which the OS generator will not
            // produce in practice; looping keeps this infallible anyway.
            if let Ok(key) = Self::from_bytes(bytes) {
                return key;
            }
        }
    }

    /// The key as standard base64, for writing a key file or printing a
    /// freshly generated key once. Wiped on drop.
    pub fn to_base64(&self) -> Zeroizing<String> {
        Zeroizing::new(B64.encode(&self.bytes[..]))
    }

    /// Loads the key file, or creates it (base64, mode 0600, missing parent
    /// directories created with mode 0700) when absent. Returns
    /// `(key, created)`.
    ///
    /// On Unix an existing file that group or others can access in any way is
    /// refused with [`CryptoError::KeyFileInsecure`] rather than loaded with a
    /// warning. A new file is written to a temporary name and hard-linked into
    /// place, so concurrent first starts agree on one key and no reader ever
    /// sees a half-written file.
    pub fn load_or_generate(path: &Path) -> Result<(Self, bool), CryptoError> {
        match Self::load(path) {
            Ok(key) => return Ok((key, false)),
            Err(CryptoError::KeyFile { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }

        let io_err = |source| CryptoError::KeyFile {
            path: path.to_path_buf(),
            source,
        };
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        create_private_dirs(&parent).map_err(io_err)?;

        let key = Self::generate();
        let file_name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "master.key".to_owned());
        let mut rnd = [0u8; 8];
        OsRng.fill_bytes(&mut rnd);
        let tmp = parent.join(format!(".{file_name}.{}.tmp", hex::encode(rnd)));

        let written = write_private_file(&tmp, &key.to_base64());
        let linked = written.and_then(|()| fs::hard_link(&tmp, path));
        // The temporary name is only a staging area; it goes in every case.
        let _ = fs::remove_file(&tmp);
        match linked {
            Ok(()) => {
                sync_dir(&parent);
                Ok((key, true))
            }
            // Another process created the file first: use its key.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                Ok((Self::load(path)?, false))
            }
            Err(e) => Err(io_err(e)),
        }
    }

    fn load(path: &Path) -> Result<Self, CryptoError> {
        let io_err = |source| CryptoError::KeyFile {
            path: path.to_path_buf(),
            source,
        };
        let mut file = fs::File::open(path).map_err(io_err)?;
        // Checked on the open handle, not the path, so the file that was
        // checked is the file that is read.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = file.metadata().map_err(io_err)?.permissions().mode();
            if mode & 0o077 != 0 {
                return Err(CryptoError::KeyFileInsecure {
                    path: path.to_path_buf(),
                    mode: mode & 0o7777,
                });
            }
        }
        let mut text = Zeroizing::new(String::new());
        file.read_to_string(&mut text).map_err(io_err)?;
        Self::from_base64(&text)
    }

    /// Short non-secret fingerprint: the first 8 bytes (16 hex digits) of
    /// SHA-256 over a domain-separated input. Stored beside wrapped keys so a
    /// key wrapped by another master key is recognised without decrypting.
    pub fn id(&self) -> String {
        self.id.clone()
    }

    /// An HKDF-SHA256 key for another purpose, e.g.
    /// `derive(b"pii-pseudonym", tenant.as_str().as_bytes())`. Deterministic;
    /// distinct purposes or contexts give independent keys (the purpose is
    /// length-prefixed, so `("ab", "c")` and `("a", "bc")` differ). The caller
    /// should wipe the result when done with it.
    pub fn derive(&self, purpose: &[u8], context: &[u8]) -> [u8; 32] {
        let mut info = Zeroizing::new(Vec::with_capacity(
            DERIVE_INFO_PREFIX.len() + 8 + purpose.len() + context.len(),
        ));
        info.extend_from_slice(DERIVE_INFO_PREFIX);
        info.extend_from_slice(&(purpose.len() as u64).to_be_bytes());
        info.extend_from_slice(purpose);
        info.extend_from_slice(context);
        *hkdf_expand(&self.bytes, &info)
    }

    /// Wraps a subject's data key: `version || nonce || AES-256-GCM(ct||tag)`
    /// with AAD `tenant \0 subject \0 key_id`, so a wrapped key copied to
    /// another row fails to unwrap.
    pub fn wrap_data_key(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
        key_id: &str,
        key: &DataKey,
    ) -> Result<Vec<u8>, CryptoError> {
        let aad = data_key::aad(tenant, subject, key_id);
        let (nonce, ct) = data_key::seal_bytes(&self.wrapper, &aad, key.expose())?;
        let mut out = Vec::with_capacity(WRAPPED_LEN);
        out.push(WRAP_VERSION);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&ct);
        Ok(out)
    }

    /// Unwraps a stored key row: what every key store does with what it
    /// read. The recorded master key id is compared first, so a wrong master
    /// key gets its own clear error ([`CryptoError::WrongMasterKey`]) instead
    /// of looking like corruption.
    pub fn unwrap_stored(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
        key_id: &str,
        wrapped: &[u8],
        master_key_id: &str,
    ) -> Result<DataKey, CryptoError> {
        let current = self.id();
        if master_key_id != current {
            return Err(CryptoError::WrongMasterKey {
                key_id: key_id.to_owned(),
                stored: master_key_id.to_owned(),
                current,
            });
        }
        self.unwrap_data_key(tenant, subject, key_id, wrapped)
    }

    /// Reverses [`MasterKey::wrap_data_key`]; [`CryptoError::Unwrap`] when the
    /// blob is corrupt, wrapped for another place, or by another master key.
    pub fn unwrap_data_key(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
        key_id: &str,
        wrapped: &[u8],
    ) -> Result<DataKey, CryptoError> {
        let fail = || CryptoError::Unwrap {
            key_id: key_id.to_owned(),
        };
        if wrapped.len() != WRAPPED_LEN || wrapped[0] != WRAP_VERSION {
            return Err(fail());
        }
        let mut nonce = [0u8; NONCE_LEN];
        nonce.copy_from_slice(&wrapped[1..1 + NONCE_LEN]);
        let aad = data_key::aad(tenant, subject, key_id);
        let plain = Zeroizing::new(
            data_key::open_bytes(&self.wrapper, &aad, &nonce, &wrapped[1 + NONCE_LEN..])
                .ok_or_else(fail)?,
        );
        let mut bytes = [0u8; 32];
        bytes.copy_from_slice(&plain);
        let key = DataKey::from_bytes(bytes);
        zeroize::Zeroize::zeroize(&mut bytes);
        Ok(key)
    }
}

impl fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MasterKey")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

fn hkdf_expand(ikm: &[u8; 32], info: &[u8]) -> Zeroizing<[u8; 32]> {
    let hk = Hkdf::<Sha256>::new(Some(HKDF_SALT), &ikm[..]);
    let mut out = Zeroizing::new([0u8; 32]);
    hk.expand(info, &mut out[..])
        .expect("32 bytes is a valid HKDF-SHA256 output length");
    out
}

fn create_private_dirs(dir: &Path) -> std::io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        // Applies to the directories created here only; existing ones keep
        // their mode.
        builder.mode(0o700);
    }
    builder.create(dir)
}

fn write_private_file(path: &Path, contents: &str) -> std::io::Result<()> {
    let mut opts = fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Set at creation so the key is never on disk with wider permissions.
        opts.mode(0o600);
    }
    let mut file = opts.open(path)?;
    file.write_all(contents.as_bytes())?;
    file.write_all(b"\n")?;
    file.sync_all()
}

/// Makes the new directory entry durable. Best effort: a failure here does
/// not lose the key that is already returned and in the file.
fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trip_and_rejections() {
        let key = MasterKey::generate();
        let again = MasterKey::from_base64(&format!("  {}\n", &*key.to_base64())).unwrap();
        assert_eq!(again.id(), key.id());
        assert_eq!(again.derive(b"p", b"c"), key.derive(b"p", b"c"));

        for (bad, why) in [
            ("not base64!!", "invalid_master_key"),
            (&B64.encode([7u8; 31]), "invalid_master_key"),
            (&B64.encode([7u8; 33]), "invalid_master_key"),
            (&B64.encode([0u8; 32]), "invalid_master_key"),
        ] {
            let err = MasterKey::from_base64(bad).unwrap_err();
            assert_eq!(err.code(), why, "{bad}");
        }
    }

    #[test]
    fn id_is_a_short_stable_fingerprint() {
        let key = MasterKey::from_base64(&B64.encode([1u8; 32])).unwrap();
        let id = key.id();
        assert_eq!(id.len(), 16);
        assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(
            MasterKey::from_base64(&B64.encode([1u8; 32])).unwrap().id(),
            id
        );
        assert_ne!(MasterKey::generate().id(), id);
        // Domain-separated: not simply a prefix of SHA-256(key).
        assert_ne!(id, hex::encode(&Sha256::digest([1u8; 32])[..8]));
    }

    #[test]
    fn derive_is_deterministic_and_separated() {
        let key = MasterKey::generate();
        let base = key.derive(b"pii-pseudonym", b"tenant-1");
        assert_eq!(base, key.derive(b"pii-pseudonym", b"tenant-1"));
        assert_ne!(base, key.derive(b"pii-pseudonym", b"tenant-2"));
        assert_ne!(base, key.derive(b"other-purpose", b"tenant-1"));
        assert_ne!(key.derive(b"ab", b"c"), key.derive(b"a", b"bc"));
        assert_ne!(
            base,
            MasterKey::generate().derive(b"pii-pseudonym", b"tenant-1")
        );
        assert_ne!(&base, &*key.bytes);
    }

    #[test]
    fn debug_shows_only_the_fingerprint() {
        let key = MasterKey::generate();
        let shown = format!("{key:?}");
        assert!(shown.contains(&key.id()));
        assert!(!shown.contains(&*key.to_base64()));
        assert!(!shown.contains(&hex::encode(&key.bytes[..])));
    }

    #[test]
    fn wrapped_key_is_bound_to_its_place_and_master() {
        let master = MasterKey::generate();
        let t = TenantId::parse("t1").unwrap();
        let a = SubjectId::parse("alice").unwrap();
        let b = SubjectId::parse("bob").unwrap();
        let dk = DataKey::generate();
        let wrapped = master.wrap_data_key(&t, &a, "k1", &dk).unwrap();
        assert_eq!(wrapped.len(), WRAPPED_LEN);
        assert_eq!(master.unwrap_data_key(&t, &a, "k1", &wrapped).unwrap(), dk);

        let code = |r: Result<DataKey, CryptoError>| r.unwrap_err().code();
        assert_eq!(
            code(master.unwrap_data_key(&t, &b, "k1", &wrapped)),
            "key_unwrap_failed"
        );
        assert_eq!(
            code(master.unwrap_data_key(&t, &a, "k2", &wrapped)),
            "key_unwrap_failed"
        );
        assert_eq!(
            code(MasterKey::generate().unwrap_data_key(&t, &a, "k1", &wrapped)),
            "key_unwrap_failed"
        );
        let mut flipped = wrapped.clone();
        flipped[20] ^= 1;
        assert_eq!(
            code(master.unwrap_data_key(&t, &a, "k1", &flipped)),
            "key_unwrap_failed"
        );
        assert_eq!(
            code(master.unwrap_data_key(&t, &a, "k1", &wrapped[..40])),
            "key_unwrap_failed"
        );
    }

    #[cfg(unix)]
    #[test]
    fn key_file_is_created_private_and_reloaded_equal() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/deeper/master.key");

        let (created_key, created) = MasterKey::load_or_generate(&path).unwrap();
        assert!(created);
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let dir_mode = fs::metadata(path.parent().unwrap())
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(dir_mode, 0o700);
        // Nothing left behind from the staging file.
        assert_eq!(fs::read_dir(path.parent().unwrap()).unwrap().count(), 1);

        let (loaded, created) = MasterKey::load_or_generate(&path).unwrap();
        assert!(!created);
        assert_eq!(loaded.id(), created_key.id());
        assert_eq!(loaded.derive(b"x", b"y"), created_key.derive(b"x", b"y"));
        assert_eq!(
            fs::read_to_string(&path).unwrap().trim(),
            &*created_key.to_base64()
        );
    }

    #[cfg(unix)]
    #[test]
    fn key_file_readable_by_others_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("master.key");
        MasterKey::load_or_generate(&path).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
        let err = MasterKey::load_or_generate(&path).unwrap_err();
        assert_eq!(err.code(), "master_key_file_insecure");
        assert!(matches!(
            err,
            CryptoError::KeyFileInsecure { mode: 0o640, .. }
        ));
    }

    #[test]
    fn key_file_with_garbage_is_an_error_not_a_new_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("master.key");
        write_private_file(&path, "garbage").unwrap();
        let err = MasterKey::load_or_generate(&path).unwrap_err();
        assert_eq!(err.code(), "invalid_master_key");
        assert_eq!(fs::read_to_string(&path).unwrap(), "garbage\n");
    }
}
