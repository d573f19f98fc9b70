use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use mnemo_domain::{SubjectId, TenantId};

use super::SubjectKeyStore;
use crate::data_key::{new_key_id, next_generation};
use crate::{CryptoError, DataKey, KeyRef};

/// Keys in process memory only, for tests of other crates (and of this one).
/// Nothing is wrapped or persisted; a restart forgets every key, which reads
/// as every subject being erased.
#[derive(Default)]
pub struct MemorySubjectKeyStore {
    inner: Mutex<Keys>,
}

#[derive(Default)]
struct Keys {
    live: HashMap<(TenantId, SubjectId), KeyRef>,
    /// The highest destroyed generation per subject: the tombstones, as far
    /// as numbering needs them.
    destroyed: HashMap<(TenantId, SubjectId), u32>,
}

impl MemorySubjectKeyStore {
    pub fn new() -> Self {
        Self::default()
    }

    fn keys(&self) -> MutexGuard<'_, Keys> {
        // Every critical section updates the maps together before it can
        // panic, so a panic elsewhere cannot leave them half-updated:
        // poisoning is ignored.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for MemorySubjectKeyStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemorySubjectKeyStore")
            .field("subjects", &self.keys().live.len())
            .finish()
    }
}

#[async_trait::async_trait]
impl SubjectKeyStore for MemorySubjectKeyStore {
    async fn get_or_create(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<KeyRef, CryptoError> {
        // Created under the lock, so concurrent first uses agree.
        let id = (tenant.clone(), subject.clone());
        let mut keys = self.keys();
        let generation = next_generation(keys.destroyed.get(&id).copied());
        Ok(keys
            .live
            .entry(id)
            .or_insert_with(|| KeyRef {
                key_id: new_key_id(),
                key: Arc::new(DataKey::generate()),
                generation,
            })
            .clone())
    }

    async fn get(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
        key_id: &str,
    ) -> Result<Option<Arc<DataKey>>, CryptoError> {
        Ok(self
            .keys()
            .live
            .get(&(tenant.clone(), subject.clone()))
            .filter(|k| k.key_id == key_id)
            .map(|k| Arc::clone(&k.key)))
    }

    async fn destroy(&self, tenant: &TenantId, subject: &SubjectId) -> Result<u32, CryptoError> {
        // Dropping the KeyRef wipes the key once no cipher cache or caller
        // still holds its Arc.
        let id = (tenant.clone(), subject.clone());
        let mut keys = self.keys();
        let Some(removed) = keys.live.remove(&id) else {
            return Ok(0);
        };
        let last = keys.destroyed.entry(id).or_insert(removed.generation);
        *last = (*last).max(removed.generation);
        Ok(1)
    }

    async fn live_generation(
        &self,
        tenant: &TenantId,
        subject: &SubjectId,
    ) -> Result<Option<u32>, CryptoError> {
        Ok(self
            .keys()
            .live
            .get(&(tenant.clone(), subject.clone()))
            .map(|k| k.generation))
    }
}
