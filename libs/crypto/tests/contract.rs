//! Behaviour every `SubjectKeyStore` must have, and the cipher on top of it.
//! Each test is written once, over `Arc<dyn SubjectKeyStore>`, and run
//! against every store implementation by the `contract!` macro at the bottom.

mod common;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use common::{subject, tenant};
use mnemo_crypto::CryptoError;
use mnemo_crypto::{contains_clear_text, DataKey, KeyRef, SubjectCipher, SubjectKeyStore};
use mnemo_domain::{SubjectId, TenantId};
use serde_json::{json, Value};

type Store = Arc<dyn SubjectKeyStore>;

// ---------------------------------------------------------------- store

async fn get_or_create_is_stable_and_get_finds_it(store: Store) {
    let (t, s) = (tenant("t1"), subject("alice"));
    let a = store.get_or_create(&t, &s).await.unwrap();
    let b = store.get_or_create(&t, &s).await.unwrap();
    assert_eq!(a.key_id, b.key_id);
    assert_eq!(*a.key, *b.key);

    let got = store
        .get(&t, &s, &a.key_id)
        .await
        .unwrap()
        .expect("live key");
    assert_eq!(*got, *a.key);
    assert!(store.get(&t, &s, "dk_unknown").await.unwrap().is_none());
}

async fn different_subjects_get_different_keys(store: Store) {
    let t1 = tenant("t1");
    let t2 = tenant("t2");
    let alice = subject("alice");
    let bob = subject("bob");
    let keys = [
        store.get_or_create(&t1, &alice).await.unwrap(),
        store.get_or_create(&t1, &bob).await.unwrap(),
        // Same subject id in another tenant is another person.
        store.get_or_create(&t2, &alice).await.unwrap(),
    ];
    let ids: HashSet<&str> = keys.iter().map(|k| k.key_id.as_str()).collect();
    assert_eq!(ids.len(), 3);
    for (i, a) in keys.iter().enumerate() {
        for b in &keys[i + 1..] {
            assert_ne!(*a.key, *b.key);
        }
    }
    // A key id is only found under its own tenant and subject.
    let alices = &keys[0].key_id;
    assert!(store.get(&t1, &bob, alices).await.unwrap().is_none());
    assert!(store.get(&t2, &alice, alices).await.unwrap().is_none());
}

async fn destroy_then_get_is_none_and_next_key_is_new(store: Store) {
    let (t, s) = (tenant("t1"), subject("alice"));
    let old = store.get_or_create(&t, &s).await.unwrap();

    assert_eq!(store.destroy(&t, &s).await.unwrap(), 1);
    assert!(store.get(&t, &s, &old.key_id).await.unwrap().is_none());
    assert_eq!(store.destroy(&t, &s).await.unwrap(), 0);

    let new = store.get_or_create(&t, &s).await.unwrap();
    assert_ne!(new.key_id, old.key_id);
    assert_ne!(*new.key, *old.key);
    assert!(store.get(&t, &s, &old.key_id).await.unwrap().is_none());
    assert!(store.get(&t, &s, &new.key_id).await.unwrap().is_some());
}

async fn each_erasure_starts_the_next_generation(store: Store) {
    let (t, s) = (tenant("t1"), subject("alice"));
    assert_eq!(store.live_generation(&t, &s).await.unwrap(), None);
    // Asking does not create a key.
    assert_eq!(store.destroy(&t, &s).await.unwrap(), 0);

    let first = store.get_or_create(&t, &s).await.unwrap();
    assert_eq!(first.generation, 1);
    assert_eq!(store.live_generation(&t, &s).await.unwrap(), Some(1));
    assert_eq!(store.get_or_create(&t, &s).await.unwrap().generation, 1);

    store.destroy(&t, &s).await.unwrap();
    // Erased and nothing sealed since: no live key, and none is made by
    // asking.
    assert_eq!(store.live_generation(&t, &s).await.unwrap(), None);
    assert_eq!(store.live_generation(&t, &s).await.unwrap(), None);
    let second = store.get_or_create(&t, &s).await.unwrap();
    assert_eq!(second.generation, 2);
    assert_ne!(second.key_id, first.key_id);

    store.destroy(&t, &s).await.unwrap();
    // A destroy with no key in between does not skip a generation.
    assert_eq!(store.destroy(&t, &s).await.unwrap(), 0);
    assert_eq!(store.get_or_create(&t, &s).await.unwrap().generation, 3);

    // Generations count per subject and tenant.
    let bob = store.get_or_create(&t, &subject("bob")).await.unwrap();
    assert_eq!(bob.generation, 1);
    let elsewhere = store.get_or_create(&tenant("t2"), &s).await.unwrap();
    assert_eq!(elsewhere.generation, 1);
}

async fn concurrent_first_uses_after_an_erasure_agree_on_the_generation(store: Store) {
    let t = tenant("t1");
    let s = subject("racer");
    store.get_or_create(&t, &s).await.unwrap();
    store.destroy(&t, &s).await.unwrap();
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let (store, t, s) = (Arc::clone(&store), t.clone(), s.clone());
            tokio::spawn(async move { store.get_or_create(&t, &s).await.unwrap() })
        })
        .collect();
    for task in tasks {
        let key = task.await.unwrap();
        assert_eq!(key.generation, 2);
    }
}

async fn the_cipher_tells_the_generation_and_follows_its_own_destroys(store: Store) {
    let (t, s) = (tenant("t1"), subject("alice"));
    let cipher = SubjectCipher::new(Arc::clone(&store));
    assert_eq!(cipher.live_generation(&t, &s).await.unwrap(), None);
    assert_eq!(cipher.generation(&t, &s).await.unwrap(), 1);
    let mut sealed = json!({"$text": "first life"});
    cipher.seal(&t, &s, &mut sealed).await.unwrap();
    assert_eq!(cipher.live_generation(&t, &s).await.unwrap(), Some(1));

    cipher.destroy(&t, &s).await.unwrap();
    // The cached live key was evicted with the destroy.
    assert_eq!(cipher.live_generation(&t, &s).await.unwrap(), None);
    assert_eq!(cipher.generation(&t, &s).await.unwrap(), 2);
    assert_eq!(cipher.live_generation(&t, &s).await.unwrap(), Some(2));
    let mut fresh = json!({"$text": "second life"});
    cipher.seal(&t, &s, &mut fresh).await.unwrap();
    assert_ne!(fresh["$sealed"]["kid"], sealed["$sealed"]["kid"]);
}

async fn destroy_leaves_other_subjects_keys(store: Store) {
    let t1 = tenant("t1");
    let t2 = tenant("t2");
    let alice = subject("alice");
    let bob = subject("bob");
    let bobs = store.get_or_create(&t1, &bob).await.unwrap();
    let other_alices = store.get_or_create(&t2, &alice).await.unwrap();
    store.get_or_create(&t1, &alice).await.unwrap();

    assert_eq!(store.destroy(&t1, &alice).await.unwrap(), 1);

    assert!(store.get(&t1, &bob, &bobs.key_id).await.unwrap().is_some());
    let again = store.get_or_create(&t2, &alice).await.unwrap();
    assert_eq!(again.key_id, other_alices.key_id);
    assert_eq!(*again.key, *other_alices.key);
}

async fn concurrent_get_or_create_agree(store: Store) {
    let t = tenant("t1");
    for round in 0..5 {
        let s = subject(&format!("racer-{round}"));
        let tasks: Vec<_> = (0..16)
            .map(|_| {
                let (store, t, s) = (Arc::clone(&store), t.clone(), s.clone());
                tokio::spawn(async move { store.get_or_create(&t, &s).await.unwrap() })
            })
            .collect();
        let mut keys: Vec<KeyRef> = Vec::new();
        for task in tasks {
            keys.push(task.await.unwrap());
        }
        for k in &keys[1..] {
            assert_eq!(k.key_id, keys[0].key_id);
            assert_eq!(*k.key, *keys[0].key);
        }
    }
}

// ---------------------------------------------------------------- cipher

fn sample_event() -> Value {
    json!({
        "type": "message.received",
        "session": "s-1",
        "text": {"$text": "I live in Lisbon"},
        "parts": [
            {"$text": "first"},
            42,
            {"nested": {"deep": [{"$text": "ünïcødé 🙂 \"quoted\""}, null]}}
        ],
        "not_a_marker": {"$text": "two keys: plain data", "extra": true},
        "empty": {"$text": ""},
        "already": {"$erased": true}
    })
}

async fn seal_open_round_trip_on_nested_payloads(store: Store) {
    let (t, s) = (tenant("t1"), subject("alice"));
    let cipher = SubjectCipher::new(Arc::clone(&store));
    let original = sample_event();

    let mut sealed = original.clone();
    assert_eq!(cipher.seal(&t, &s, &mut sealed).await.unwrap(), 4);
    assert!(!contains_clear_text(&sealed));
    assert_eq!(sealed["text"]["$sealed"]["alg"], "A256GCM");
    let kid = store.get_or_create(&t, &s).await.unwrap().key_id;
    assert_eq!(sealed["parts"][0]["$sealed"]["kid"], kid.as_str());
    // Everything that is not a marker is left exactly as it was.
    for field in ["type", "session", "not_a_marker", "already"] {
        assert_eq!(sealed[field], original[field], "{field}");
    }
    assert_eq!(sealed["parts"][1], 42);
    // Sealing is idempotent on an already sealed payload.
    let before = sealed.clone();
    assert_eq!(cipher.seal(&t, &s, &mut sealed).await.unwrap(), 0);
    assert_eq!(sealed, before);

    // Stored as text and read back, by this cipher and by a cold one.
    let stored = serde_json::to_string(&sealed).unwrap();
    for c in [&cipher, &SubjectCipher::new(Arc::clone(&store))] {
        let mut read: Value = serde_json::from_str(&stored).unwrap();
        assert_eq!(c.open(&t, &s, &mut read).await.unwrap(), 4);
        assert_eq!(read, original);
    }

    // Random nonces: the same text never seals to the same bytes.
    let mut a = json!({"$text": "same"});
    let mut b = json!({"$text": "same"});
    cipher.seal(&t, &s, &mut a).await.unwrap();
    cipher.seal(&t, &s, &mut b).await.unwrap();
    assert_ne!(a["$sealed"]["ct"], b["$sealed"]["ct"]);
    assert_ne!(a["$sealed"]["nonce"], b["$sealed"]["nonce"]);
}

async fn sealed_output_contains_no_plaintext(store: Store) {
    let (t, s) = (tenant("t1"), subject("alice"));
    let cipher = SubjectCipher::new(store);
    let secret = "my-very-secret-diagnosis-XYZZY";
    let mut p = json!({"a": {"$text": secret}, "b": [{"$text": secret}]});
    cipher.seal(&t, &s, &mut p).await.unwrap();

    let bytes = serde_json::to_vec(&p).unwrap();
    let contains = |needle: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
    assert!(!contains(secret.as_bytes()));
    assert!(!contains(b"XYZZY"));
    assert!(!contains(B64.encode(secret).as_bytes()));
    assert!(!contains(b"$text"));
}

async fn open_after_destroy_is_erased_and_other_fields_intact(store: Store) {
    let (t, s) = (tenant("t1"), subject("alice"));
    let cipher = SubjectCipher::new(store);
    let mut sealed = sample_event();
    cipher.seal(&t, &s, &mut sealed).await.unwrap();

    // Warm the cache first: the destroy must evict it, not just the store.
    let mut warm = sealed.clone();
    cipher.open(&t, &s, &mut warm).await.unwrap();
    assert_eq!(warm["text"]["$text"], "I live in Lisbon");

    assert_eq!(cipher.destroy(&t, &s).await.unwrap(), 1);

    let mut read = sealed.clone();
    assert_eq!(cipher.open(&t, &s, &mut read).await.unwrap(), 4);
    let erased = json!({"$erased": true});
    assert_eq!(read["text"], erased);
    assert_eq!(read["parts"][0], erased);
    assert_eq!(read["parts"][2]["nested"]["deep"][0], erased);
    assert_eq!(read["empty"], erased);
    let original = sample_event();
    for field in ["type", "session", "not_a_marker", "already"] {
        assert_eq!(read[field], original[field], "{field}");
    }
    assert_eq!(read["parts"][1], 42);
    assert!(!contains_clear_text(&read));

    // New content after the erasure is sealed under a new key and readable;
    // the old content stays erased.
    let mut fresh = json!({"text": {"$text": "new life"}});
    cipher.seal(&t, &s, &mut fresh).await.unwrap();
    assert_ne!(
        fresh["text"]["$sealed"]["kid"],
        sealed["text"]["$sealed"]["kid"]
    );
    cipher.open(&t, &s, &mut fresh).await.unwrap();
    assert_eq!(fresh["text"]["$text"], "new life");
    let mut again = sealed.clone();
    cipher.open(&t, &s, &mut again).await.unwrap();
    assert_eq!(again["text"], erased);
}

async fn destroy_leaves_other_subjects_readable(store: Store) {
    let t1 = tenant("t1");
    let t2 = tenant("t2");
    let alice = subject("alice");
    let bob = subject("bob");
    let cipher = SubjectCipher::new(store);
    let targets = [(&t1, &alice), (&t1, &bob), (&t2, &alice)];
    let mut sealed = Vec::new();
    for (t, s) in targets {
        let mut p = json!({"text": {"$text": format!("{t}/{s}")}});
        cipher.seal(t, s, &mut p).await.unwrap();
        sealed.push(p);
    }

    cipher.destroy(&t1, &alice).await.unwrap();

    for ((t, s), p) in targets.into_iter().zip(&sealed) {
        let mut read = p.clone();
        cipher.open(t, s, &mut read).await.unwrap();
        if (t, s) == (&t1, &alice) {
            assert_eq!(read["text"], json!({"$erased": true}));
        } else {
            assert_eq!(read["text"]["$text"], format!("{t}/{s}"));
        }
    }
}

async fn tampered_ciphertext_is_an_error_not_erased(store: Store) {
    let (t, s) = (tenant("t1"), subject("alice"));
    let cipher = SubjectCipher::new(store);
    let mut sealed = json!({"ok": {"$text": "untouched"}, "text": {"$text": "attack at dawn"}});
    cipher.seal(&t, &s, &mut sealed).await.unwrap();

    let flip = |field: &str| {
        let mut p = sealed.clone();
        let mut raw = B64
            .decode(p["text"]["$sealed"][field].as_str().unwrap())
            .unwrap();
        raw[0] ^= 0x01;
        p["text"]["$sealed"][field] = Value::from(B64.encode(raw));
        p
    };
    for field in ["ct", "nonce"] {
        let tampered = flip(field);
        let mut read = tampered.clone();
        let err = cipher.open(&t, &s, &mut read).await.unwrap_err();
        assert!(
            matches!(err, CryptoError::Tampered { .. }),
            "{field}: {err}"
        );
        assert_eq!(err.code(), "sealed_content_tampered");
        // All-or-nothing: not even the intact marker was opened.
        assert_eq!(read, tampered);
    }
}

/// Hands out the key of `owner` whatever subject is asked for: a store bug
/// (or an attacker who can choose the key) that only the AAD stops.
struct IgnoresSubject {
    inner: Store,
    owner: SubjectId,
}

#[async_trait::async_trait]
impl SubjectKeyStore for IgnoresSubject {
    async fn get_or_create(&self, t: &TenantId, _: &SubjectId) -> Result<KeyRef, CryptoError> {
        self.inner.get_or_create(t, &self.owner).await
    }
    async fn get(
        &self,
        t: &TenantId,
        _: &SubjectId,
        key_id: &str,
    ) -> Result<Option<Arc<DataKey>>, CryptoError> {
        self.inner.get(t, &self.owner, key_id).await
    }
    async fn destroy(&self, t: &TenantId, _: &SubjectId) -> Result<u32, CryptoError> {
        self.inner.destroy(t, &self.owner).await
    }
    async fn live_generation(
        &self,
        t: &TenantId,
        _: &SubjectId,
    ) -> Result<Option<u32>, CryptoError> {
        self.inner.live_generation(t, &self.owner).await
    }
}

async fn sealed_for_a_cannot_be_opened_as_b(store: Store) {
    let t = tenant("t1");
    let alice = subject("alice");
    let bob = subject("bob");
    let cipher = SubjectCipher::new(Arc::clone(&store));
    let mut sealed = json!({"text": {"$text": "alice's secret"}});
    cipher.seal(&t, &alice, &mut sealed).await.unwrap();
    // Bob has a key of his own too.
    store.get_or_create(&t, &bob).await.unwrap();

    // Through the real store, Alice's key id is not Bob's: erased, never
    // plaintext.
    let mut as_bob = sealed.clone();
    cipher.open(&t, &bob, &mut as_bob).await.unwrap();
    assert_eq!(as_bob["text"], json!({"$erased": true}));
    let mut other_tenant = sealed.clone();
    cipher
        .open(&tenant("t2"), &alice, &mut other_tenant)
        .await
        .unwrap();
    assert_eq!(other_tenant["text"], json!({"$erased": true}));

    // Even when Alice's key itself is used, the AAD names Alice.
    let leaky = SubjectCipher::new(Arc::new(IgnoresSubject {
        inner: Arc::clone(&store),
        owner: alice.clone(),
    }));
    let mut read = sealed.clone();
    let err = leaky.open(&t, &bob, &mut read).await.unwrap_err();
    assert!(matches!(err, CryptoError::Tampered { .. }), "{err}");
    let mut read = sealed.clone();
    leaky.open(&t, &alice, &mut read).await.unwrap();
    assert_eq!(read["text"]["$text"], "alice's secret");
}

async fn payload_without_markers_creates_no_key(store: Store) {
    let (t, s) = (tenant("t1"), subject("alice"));
    let cipher = SubjectCipher::new(Arc::clone(&store));
    let mut p = json!({"type": "session.started", "n": [1, 2]});
    assert_eq!(cipher.seal(&t, &s, &mut p).await.unwrap(), 0);
    assert_eq!(cipher.open(&t, &s, &mut p).await.unwrap(), 0);
    assert_eq!(p, json!({"type": "session.started", "n": [1, 2]}));
    assert_eq!(store.destroy(&t, &s).await.unwrap(), 0);
}

async fn malformed_markers_are_errors_and_leave_the_payload(store: Store) {
    let (t, s) = (tenant("t1"), subject("alice"));
    let cipher = SubjectCipher::new(store);

    let original = json!({"good": {"$text": "fine"}, "bad": {"$text": 5}});
    let mut p = original.clone();
    let err = cipher.seal(&t, &s, &mut p).await.unwrap_err();
    assert_eq!(err.code(), "malformed_marker");
    assert_eq!(p, original);

    let mut sealed = json!({"a": {"$text": "x"}});
    cipher.seal(&t, &s, &mut sealed).await.unwrap();
    let mut wrong_alg = sealed.clone();
    wrong_alg["a"]["$sealed"]["alg"] = json!("none");
    let err = cipher.open(&t, &s, &mut wrong_alg).await.unwrap_err();
    assert_eq!(err.code(), "unsupported_algorithm");
    let mut missing = sealed.clone();
    missing["a"]["$sealed"]
        .as_object_mut()
        .unwrap()
        .remove("nonce");
    let err = cipher.open(&t, &s, &mut missing).await.unwrap_err();
    assert_eq!(err.code(), "malformed_marker");
}

async fn cache_serves_keys_until_ttl_and_zero_ttl_disables_it(store: Store) {
    let (t, s) = (tenant("t1"), subject("alice"));
    let cached = SubjectCipher::new(Arc::clone(&store));
    let uncached = SubjectCipher::with_cache_limits(Arc::clone(&store), 0, Duration::ZERO);
    let mut sealed = json!({"text": {"$text": "hello"}});
    cached.seal(&t, &s, &mut sealed).await.unwrap();

    // Destroyed behind the ciphers' backs (as another process would).
    store.destroy(&t, &s).await.unwrap();

    let mut read = sealed.clone();
    uncached.open(&t, &s, &mut read).await.unwrap();
    assert_eq!(read["text"], json!({"$erased": true}));
    // The cached cipher still holds the key until its TTL: the documented
    // cross-process window.
    let mut read = sealed.clone();
    cached.open(&t, &s, &mut read).await.unwrap();
    assert_eq!(read["text"]["$text"], "hello");
}

macro_rules! contract {
    ($($name:ident),* $(,)?) => {
        mod memory_store {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let fixture = crate::common::memory().await;
                    super::$name(std::sync::Arc::clone(&fixture.store)).await;
                }
            )*
        }

        #[cfg(feature = "sqlite")]
        mod sqlite_store {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let fixture = crate::common::sqlite().await;
                    super::$name(std::sync::Arc::clone(&fixture.store)).await;
                }
            )*
        }

        #[cfg(feature = "postgres")]
        mod postgres_store {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let fixture = crate::common::postgres().await;
                    super::$name(std::sync::Arc::clone(&fixture.store)).await;
                }
            )*
        }
    };
}

contract!(
    get_or_create_is_stable_and_get_finds_it,
    different_subjects_get_different_keys,
    destroy_then_get_is_none_and_next_key_is_new,
    destroy_leaves_other_subjects_keys,
    each_erasure_starts_the_next_generation,
    concurrent_first_uses_after_an_erasure_agree_on_the_generation,
    the_cipher_tells_the_generation_and_follows_its_own_destroys,
    concurrent_get_or_create_agree,
    seal_open_round_trip_on_nested_payloads,
    sealed_output_contains_no_plaintext,
    open_after_destroy_is_erased_and_other_fields_intact,
    destroy_leaves_other_subjects_readable,
    tampered_ciphertext_is_an_error_not_erased,
    sealed_for_a_cannot_be_opened_as_b,
    payload_without_markers_creates_no_key,
    malformed_markers_are_errors_and_leave_the_payload,
    cache_serves_keys_until_ttl_and_zero_ttl_disables_it,
);
