use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use mnemo_domain::{SubjectId, TenantId};
use serde_json::Value;

use crate::data_key::{self, DataKey, KeyRef, TokenPurpose};
use crate::marker::{self, CLEAR, SEALED};
use crate::store::SubjectKeyStore;
use crate::CryptoError;

/// Default number of subjects whose keys the cipher keeps unwrapped.
pub const DEFAULT_CACHE_SUBJECTS: usize = 10_000;
/// Default lifetime of a cached key. Bounds how long a process keeps using a
/// key destroyed by *another* process (its own destroys evict at once).
pub const DEFAULT_CACHE_TTL: Duration = Duration::from_secs(60);
/// Key ids remembered per subject (live key, old ids seen in payloads, ids
/// found missing). Past this, lookups simply go to the store.
const MAX_IDS_PER_SUBJECT: usize = 64;

/// Seals and opens payloads for one (tenant, subject) at a time; caches
/// unwrapped keys (bounded, with a TTL) and evicts a subject's keys when it is
/// destroyed through [`SubjectCipher::destroy`].
pub struct SubjectCipher {
    store: Arc<dyn SubjectKeyStore>,
    cache: KeyCache,
}

impl SubjectCipher {
    pub fn new(store: Arc<dyn SubjectKeyStore>) -> Self {
        Self::with_cache_limits(store, DEFAULT_CACHE_SUBJECTS, DEFAULT_CACHE_TTL)
    }

    /// Like [`SubjectCipher::new`] with explicit cache bounds. `max_subjects`
    /// of 0 or a zero `ttl` disables caching.
    pub fn with_cache_limits(
        store: Arc<dyn SubjectKeyStore>,
        max_subjects: usize,
        ttl: Duration,
    ) -> Self {
        Self {
            store,
            cache: KeyCache {
                max_subjects,
                ttl,
                inner: Mutex::new(CacheInner::default()),
            },
        }
    }

    /// The underlying key store.
    pub fn store(&self) -> &Arc<dyn SubjectKeyStore> {
        &self.store
    }

    /// Replaces every `{"$text": s}` and `{"$value": v}` in the tree with a
    /// sealed marker using the subject's live key. Returns how many were
    /// sealed.
    ///
    /// All-or-nothing: on error the payload is unchanged. A payload without
    /// clear markers does not create a key for the subject.
    pub async fn seal(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
        payload: &mut Value,
    ) -> Result<usize, CryptoError> {
        let markers = marker::find_markers_mut(payload, &CLEAR);
        if markers.is_empty() {
            return Ok(0);
        }
        // Validate every marker before creating a key or touching anything.
        for m in &markers {
            marker::clear_text(m)?;
        }
        let live = self.live_key(tenant, subject).await?;
        seal_markers(&live, tenant, subject, markers)
    }

    /// [`SubjectCipher::seal`] under the subject's live key only when it is
    /// of `generation`, never creating one: for copies of content the log
    /// sealed under that key (a projection's rows). A copy written after an
    /// erasure must neither create the subject's next key nor become
    /// readable under it, which is what sealing with a new key would do.
    /// `None` (the payload unchanged) when the live key is another or none.
    pub async fn seal_in_generation(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
        generation: u32,
        payload: &mut Value,
    ) -> Result<Option<usize>, CryptoError> {
        let markers = marker::find_markers_mut(payload, &CLEAR);
        for m in &markers {
            marker::clear_text(m)?;
        }
        let Some(live) = self.key_of_generation(tenant, subject, generation).await? else {
            return Ok(None);
        };
        seal_markers(&live, tenant, subject, markers).map(Some)
    }

    /// [`SubjectCipher::tokens`] under the subject's live key only when it
    /// is of `generation`, never creating one, as
    /// [`SubjectCipher::seal_in_generation`] seals.
    pub async fn tokens_in_generation(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
        generation: u32,
        purpose: TokenPurpose,
        values: &[String],
    ) -> Result<Option<Vec<String>>, CryptoError> {
        let Some(live) = self.key_of_generation(tenant, subject, generation).await? else {
            return Ok(None);
        };
        Ok(Some(
            values.iter().map(|v| live.key.token(purpose, v)).collect(),
        ))
    }

    /// [`SubjectCipher::token`] under the subject's live key only when it
    /// is of `generation`, never creating one.
    pub async fn token_in_generation(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
        generation: u32,
        purpose: TokenPurpose,
        value: &str,
    ) -> Result<Option<String>, CryptoError> {
        Ok(self
            .key_of_generation(tenant, subject, generation)
            .await?
            .map(|live| live.key.token(purpose, value)))
    }

    /// The live key when it exists and is of `generation`. A destroy racing
    /// the lookup may leave the next key created, but it is never returned.
    async fn key_of_generation(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
        generation: u32,
    ) -> Result<Option<KeyRef>, CryptoError> {
        Ok(self
            .existing_live_key(tenant, subject)
            .await?
            .filter(|k| k.generation == generation))
    }

    /// Replaces every sealed marker with `{"$text": s}` (or `{"$value": v}`
    /// for a sealed JSON value), or
    /// `{"$erased": true}` when its key is gone. Returns how many sealed
    /// markers were replaced (opened or erased).
    ///
    /// A ciphertext that fails authentication under an existing key is
    /// [`CryptoError::Tampered`], never "erased". All-or-nothing: on error the
    /// payload is unchanged.
    pub async fn open(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
        payload: &mut Value,
    ) -> Result<usize, CryptoError> {
        let markers = marker::find_markers_mut(payload, &[SEALED]);
        if markers.is_empty() {
            return Ok(0);
        }
        let parsed = markers
            .iter()
            .map(|m| marker::parse_sealed(m))
            .collect::<Result<Vec<_>, _>>()?;

        // One lookup per distinct key id, not per marker.
        let mut keys: HashMap<&str, Option<Arc<DataKey>>> = HashMap::new();
        for p in &parsed {
            if !keys.contains_key(p.kid.as_str()) {
                let key = self.key_by_id(tenant, subject, &p.kid).await?;
                keys.insert(&p.kid, key);
            }
        }

        let mut opened = Vec::with_capacity(parsed.len());
        for p in &parsed {
            let value = match &keys[p.kid.as_str()] {
                None => marker::erased_marker(),
                Some(key) => {
                    let aad = data_key::aad_for(tenant, subject, &p.kid, p.json);
                    let plain = data_key::open_bytes(&key.aead(), &aad, &p.nonce, &p.ct)
                        .ok_or_else(|| CryptoError::Tampered {
                            key_id: p.kid.clone(),
                        })?;
                    // Authentic bytes that are not UTF-8 were never sealed by
                    // this crate (it only seals strings).
                    let text = String::from_utf8(plain)
                        .map_err(|_| CryptoError::MalformedMarker("sealed content is not UTF-8"))?;
                    if p.json {
                        let value = serde_json::from_str(&text).map_err(|_| {
                            CryptoError::MalformedMarker("sealed value is not JSON")
                        })?;
                        marker::value_marker(value)
                    } else {
                        marker::text_marker(text)
                    }
                }
            };
            opened.push(value);
        }
        let n = markers.len();
        for (m, v) in markers.into_iter().zip(opened) {
            *m = v;
        }
        Ok(n)
    }

    /// Destroys every key of the subject in the store, and drops the cached
    /// keys of the subject. Returns how many keys the store destroyed.
    pub async fn destroy(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<u32, CryptoError> {
        let result = self.store.destroy(tenant, subject).await;
        // Evicted even when the store failed: it may have deleted before
        // failing, and a cache miss costs only a lookup.
        self.cache.evict(tenant, subject);
        result
    }

    /// The keyed token of `value` under the subject's live key, creating the
    /// key on first use as [`SubjectCipher::seal`] does: for writes, which
    /// store the token beside sealed content.
    pub async fn token(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
        purpose: TokenPurpose,
        value: &str,
    ) -> Result<String, CryptoError> {
        Ok(self
            .live_key(tenant, subject)
            .await?
            .key
            .token(purpose, value))
    }

    /// Keyed tokens of many values under the subject's live key, creating
    /// it on first use (one key lookup for all of them).
    pub async fn tokens(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
        purpose: TokenPurpose,
        values: &[String],
    ) -> Result<Vec<String>, CryptoError> {
        if values.is_empty() {
            return Ok(Vec::new());
        }
        let live = self.live_key(tenant, subject).await?;
        Ok(values.iter().map(|v| live.key.token(purpose, v)).collect())
    }

    /// The keyed token of `value` under the subject's live key without
    /// creating one: for queries. `None` when the subject has no key (never
    /// had one, or was erased and nothing was written since), in which case
    /// nothing stored can match.
    pub async fn live_token(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
        purpose: TokenPurpose,
        value: &str,
    ) -> Result<Option<String>, CryptoError> {
        Ok(self
            .existing_live_key(tenant, subject)
            .await?
            .map(|k| k.key.token(purpose, value)))
    }

    /// The generation of the key the subject's content is sealed under now,
    /// creating the subject's key on first use as [`SubjectCipher::seal`]
    /// does. After an erasure this is the next generation: what makes ids
    /// derived with it start afresh.
    pub async fn generation(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<u32, CryptoError> {
        Ok(self.live_key(tenant, subject).await?.generation)
    }

    /// The generation of the subject's live key without creating one:
    /// `None` when the subject has no key (never had one, or was erased and
    /// nothing was sealed for it since).
    pub async fn live_generation(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<Option<u32>, CryptoError> {
        if let Some(k) = self.cache.live(tenant, subject) {
            return Ok(Some(k.generation));
        }
        // Not cached: a `None` must not be remembered, the next seal creates
        // a key.
        self.store.live_generation(tenant, subject).await
    }

    /// The live key when the subject has one, without creating it.
    async fn existing_live_key(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<Option<KeyRef>, CryptoError> {
        if let Some(k) = self.cache.live(tenant, subject) {
            return Ok(Some(k));
        }
        if self.store.live_generation(tenant, subject).await?.is_none() {
            return Ok(None);
        }
        self.live_key(tenant, subject).await.map(Some)
    }

    async fn live_key(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<KeyRef, CryptoError> {
        if let Some(k) = self.cache.live(tenant, subject) {
            return Ok(k);
        }
        let epoch = self.cache.epoch();
        let k = self.store.get_or_create(tenant, subject).await?;
        self.cache.put_live(tenant, subject, &k, epoch);
        Ok(k)
    }

    async fn key_by_id(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
        key_id: &str,
    ) -> Result<Option<Arc<DataKey>>, CryptoError> {
        if let Some(k) = self.cache.by_id(tenant, subject, key_id) {
            return Ok(k);
        }
        let epoch = self.cache.epoch();
        let k = self.store.get(tenant, subject, key_id).await?;
        self.cache
            .put_by_id(tenant, subject, key_id, k.clone(), epoch);
        Ok(k)
    }
}

impl fmt::Debug for SubjectCipher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SubjectCipher")
            .field("max_subjects", &self.cache.max_subjects)
            .field("ttl", &self.cache.ttl)
            .finish_non_exhaustive()
    }
}

struct KeyCache {
    max_subjects: usize,
    ttl: Duration,
    inner: Mutex<CacheInner>,
}

#[derive(Default)]
struct CacheInner {
    /// Bumped by every destroy. A lookup that started before a destroy must
    /// not cache what it read: it may be the key that was just destroyed, and
    /// caching it would resurrect it after the eviction.
    epoch: u64,
    subjects: HashMap<(TenantId, SubjectId), CachedSubject>,
}

struct CachedSubject {
    live: Option<(KeyRef, Instant)>,
    /// `None` remembers "destroyed / not this subject's": key ids are random
    /// and never reused, so a missing key never comes back, and reading an
    /// erased subject's history does not hit the store once per event.
    by_id: HashMap<String, (Option<Arc<DataKey>>, Instant)>,
    last_used: Instant,
}

impl KeyCache {
    fn lock(&self) -> MutexGuard<'_, CacheInner> {
        // Each critical section leaves the maps consistent, so a poisoned
        // lock holds usable data.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn enabled(&self) -> bool {
        self.max_subjects > 0 && !self.ttl.is_zero()
    }

    fn epoch(&self) -> u64 {
        self.lock().epoch
    }

    fn live(&self, tenant: &TenantId, subject: &SubjectId) -> Option<KeyRef> {
        if !self.enabled() {
            return None;
        }
        let now = Instant::now();
        let mut inner = self.lock();
        let entry = inner.subjects.get_mut(&(tenant.clone(), subject.clone()))?;
        match &entry.live {
            Some((k, at)) if now.duration_since(*at) < self.ttl => {
                entry.last_used = now;
                Some(k.clone())
            }
            _ => None,
        }
    }

    fn by_id(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
        key_id: &str,
    ) -> Option<Option<Arc<DataKey>>> {
        if !self.enabled() {
            return None;
        }
        let now = Instant::now();
        let mut inner = self.lock();
        let entry = inner.subjects.get_mut(&(tenant.clone(), subject.clone()))?;
        match entry.by_id.get(key_id) {
            Some((k, at)) if now.duration_since(*at) < self.ttl => {
                let k = k.clone();
                entry.last_used = now;
                Some(k)
            }
            _ => None,
        }
    }

    fn put_live(&self, tenant: &TenantId, subject: &SubjectId, key: &KeyRef, epoch: u64) {
        self.with_entry(tenant, subject, epoch, |entry, now| {
            entry.live = Some((key.clone(), now));
            // The live key also opens what it sealed.
            insert_id(entry, &key.key_id, Some(Arc::clone(&key.key)), now);
        });
    }

    fn put_by_id(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
        key_id: &str,
        key: Option<Arc<DataKey>>,
        epoch: u64,
    ) {
        self.with_entry(tenant, subject, epoch, |entry, now| {
            insert_id(entry, key_id, key, now);
        });
    }

    fn with_entry(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
        epoch: u64,
        update: impl FnOnce(&mut CachedSubject, Instant),
    ) {
        if !self.enabled() {
            return;
        }
        let now = Instant::now();
        let mut inner = self.lock();
        if inner.epoch != epoch {
            return;
        }
        let id = (tenant.clone(), subject.clone());
        if !inner.subjects.contains_key(&id) && inner.subjects.len() >= self.max_subjects {
            self.make_room(&mut inner, now);
        }
        let entry = inner.subjects.entry(id).or_insert_with(|| CachedSubject {
            live: None,
            by_id: HashMap::new(),
            last_used: now,
        });
        entry.last_used = now;
        update(entry, now);
    }

    /// Drops idle entries past their TTL; if none were, the least recently
    /// used one. Linear, but only runs when the cache is full.
    fn make_room(&self, inner: &mut CacheInner, now: Instant) {
        let ttl = self.ttl;
        inner
            .subjects
            .retain(|_, e| now.duration_since(e.last_used) < ttl);
        if inner.subjects.len() >= self.max_subjects {
            let oldest = inner
                .subjects
                .iter()
                .min_by_key(|(_, e)| e.last_used)
                .map(|(id, _)| id.clone());
            if let Some(id) = oldest {
                inner.subjects.remove(&id);
            }
        }
    }

    fn evict(&self, tenant: &TenantId, subject: &SubjectId) {
        let mut inner = self.lock();
        inner.epoch = inner.epoch.wrapping_add(1);
        inner.subjects.remove(&(tenant.clone(), subject.clone()));
    }
}

fn insert_id(entry: &mut CachedSubject, key_id: &str, key: Option<Arc<DataKey>>, now: Instant) {
    if entry.by_id.len() >= MAX_IDS_PER_SUBJECT && !entry.by_id.contains_key(key_id) {
        return;
    }
    entry.by_id.insert(key_id.to_owned(), (key, now));
}

/// Seals each clear marker under `live`, all or nothing: the markers are
/// replaced only once every one is sealed.
fn seal_markers(
    live: &KeyRef,
    tenant: &TenantId,
    subject: &SubjectId,
    markers: Vec<&mut Value>,
) -> Result<usize, CryptoError> {
    let cipher = live.key.aead();
    let mut sealed = Vec::with_capacity(markers.len());
    for m in &markers {
        let clear = marker::clear_text(m)?;
        let aad = data_key::aad_for(tenant, subject, &live.key_id, clear.is_json());
        let (nonce, ct) = data_key::seal_bytes(&cipher, &aad, clear.bytes())?;
        sealed.push(marker::sealed_marker(
            &live.key_id,
            &nonce,
            &ct,
            clear.is_json(),
        ));
    }
    let n = markers.len();
    for (m, s) in markers.into_iter().zip(sealed) {
        *m = s;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemorySubjectKeyStore;

    fn ids(s: &str) -> (TenantId, SubjectId) {
        (TenantId::parse("t").unwrap(), SubjectId::parse(s).unwrap())
    }

    fn key() -> KeyRef {
        KeyRef {
            key_id: data_key::new_key_id(),
            key: Arc::new(DataKey::generate()),
            generation: 1,
        }
    }

    fn cache(max_subjects: usize) -> KeyCache {
        KeyCache {
            max_subjects,
            ttl: Duration::from_secs(60),
            inner: Mutex::new(CacheInner::default()),
        }
    }

    #[test]
    fn cache_is_bounded_and_evicts_the_least_recently_used() {
        let c = cache(2);
        let (t, a) = ids("a");
        let (_, b) = ids("b");
        let (_, d) = ids("d");
        c.put_live(&t, &a, &key(), 0);
        std::thread::sleep(Duration::from_millis(2));
        c.put_live(&t, &b, &key(), 0);
        std::thread::sleep(Duration::from_millis(2));
        // Touch a, so b is now the least recently used.
        assert!(c.live(&t, &a).is_some());
        c.put_live(&t, &d, &key(), 0);
        assert_eq!(c.lock().subjects.len(), 2);
        assert!(c.live(&t, &a).is_some());
        assert!(c.live(&t, &b).is_none());
        assert!(c.live(&t, &d).is_some());
    }

    #[test]
    fn a_lookup_that_raced_a_destroy_is_not_cached() {
        let c = cache(10);
        let (t, a) = ids("a");
        let epoch = c.epoch();
        // The store read happens here, then a destroy lands...
        c.evict(&t, &a);
        // ...and the stale result must not re-enter the cache.
        c.put_live(&t, &a, &key(), epoch);
        c.put_by_id(&t, &a, "k", Some(Arc::new(DataKey::generate())), epoch);
        assert!(c.live(&t, &a).is_none());
        assert!(c.by_id(&t, &a, "k").is_none());
    }

    /// Compile-time check: callers spawn these futures on tokio.
    #[allow(dead_code)]
    fn futures_are_send(c: &SubjectCipher, t: &TenantId, s: &SubjectId, v: &mut Value) {
        fn is_send<T: Send>(_: T) {}
        is_send(c.seal(t, s, v));
        is_send(c.open(t, s, v));
        is_send(c.destroy(t, s));
    }

    #[tokio::test]
    async fn seal_reuses_the_cached_live_key() {
        let store = Arc::new(MemorySubjectKeyStore::new());
        let cipher = SubjectCipher::new(store.clone());
        let (t, a) = ids("a");
        let mut p = serde_json::json!({"$text": "x"});
        cipher.seal(&t, &a, &mut p).await.unwrap();
        // Removed from the store behind the cipher's back: the cached key is
        // still used (within the TTL), which is the point of the cache.
        store.destroy(&t, &a).await.unwrap();
        let mut q = serde_json::json!({"$text": "y"});
        cipher.seal(&t, &a, &mut q).await.unwrap();
        assert_eq!(p["$sealed"]["kid"], q["$sealed"]["kid"]);
    }

    #[tokio::test]
    async fn tokens_follow_the_live_key_and_queries_create_none() {
        let cipher = SubjectCipher::new(Arc::new(MemorySubjectKeyStore::new()));
        let (t, a) = ids("a");
        let tag = TokenPurpose::Tag;
        assert_eq!(cipher.live_token(&t, &a, tag, "x").await.unwrap(), None);
        assert_eq!(
            cipher.live_generation(&t, &a).await.unwrap(),
            None,
            "a query made no key"
        );
        let written = cipher.token(&t, &a, tag, "x").await.unwrap();
        assert_eq!(
            cipher
                .live_token(&t, &a, tag, "x")
                .await
                .unwrap()
                .as_deref(),
            Some(written.as_str())
        );
        let many = cipher
            .tokens(&t, &a, tag, &["x".to_owned(), "y".to_owned()])
            .await
            .unwrap();
        assert_eq!(many[0], written);
        assert_ne!(many[1], written);
        // Another subject's token for the same value differs.
        let (_, b) = ids("b");
        assert_ne!(cipher.token(&t, &b, tag, "x").await.unwrap(), written);
        // After an erasure the subject has no key, so nothing matches; its
        // next key makes other tokens.
        cipher.destroy(&t, &a).await.unwrap();
        assert_eq!(cipher.live_token(&t, &a, tag, "x").await.unwrap(), None);
        assert_ne!(cipher.token(&t, &a, tag, "x").await.unwrap(), written);
    }

    #[tokio::test]
    async fn json_values_are_sealed_and_open_back_as_values() {
        let cipher = SubjectCipher::new(Arc::new(MemorySubjectKeyStore::new()));
        let (t, a) = ids("a");
        let original = serde_json::json!({
            "tags": {"$value": ["penicillin", "allergy"]},
            "content": {"$text": "allergic to penicillin"},
        });
        let mut p = original.clone();
        assert_eq!(cipher.seal(&t, &a, &mut p).await.unwrap(), 2);
        assert!(!crate::contains_clear_text(&p));
        assert!(!p.to_string().contains("penicillin"));
        assert_eq!(p["tags"]["$sealed"]["enc"], "json");
        let sealed = p.clone();
        cipher.open(&t, &a, &mut p).await.unwrap();
        assert_eq!(p, original);

        // The encoding is authenticated: a value passed off as text fails.
        let mut forged = sealed.clone();
        forged["tags"]["$sealed"]
            .as_object_mut()
            .unwrap()
            .remove("enc");
        assert!(matches!(
            cipher.open(&t, &a, &mut forged).await,
            Err(CryptoError::Tampered { .. })
        ));
        // Erased like text once the key is gone.
        cipher.destroy(&t, &a).await.unwrap();
        let mut gone = sealed;
        cipher.open(&t, &a, &mut gone).await.unwrap();
        assert_eq!(gone["tags"], serde_json::json!({"$erased": true}));
    }
}
