use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use mnemo_domain::{SubjectId, TenantId};

use super::SubjectKeyStore;
use crate::data_key::new_key_id;
use crate::{CryptoError, DataKey, KeyRef};

/// Keys in process memory only, for tests of other crates (and of this one).
/// Nothing is wrapped or persisted; a restart forgets every key, which reads
/// as every subject being erased.
#[derive(Default)]
pub struct MemorySubjectKeyStore {
    keys: Mutex<HashMap<(TenantId, SubjectId), KeyRef>>,
}

impl MemorySubjectKeyStore {
    pub fn new() -> Self {
        Self::default()
    }

    fn keys(&self) -> std::sync::MutexGuard<'_, HashMap<(TenantId, SubjectId), KeyRef>> {
        // Every critical section is a single map operation, so a panic
        // elsewhere cannot leave the map half-updated: poisoning is ignored.
        self.keys.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for MemorySubjectKeyStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemorySubjectKeyStore")
            .field("subjects", &self.keys().len())
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
        Ok(self
            .keys()
            .entry((tenant.clone(), subject.clone()))
            .or_insert_with(|| KeyRef {
                key_id: new_key_id(),
                key: Arc::new(DataKey::generate()),
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
            .get(&(tenant.clone(), subject.clone()))
            .filter(|k| k.key_id == key_id)
            .map(|k| Arc::clone(&k.key)))
    }

    async fn destroy(&self, tenant: &TenantId, subject: &SubjectId) -> Result<u32, CryptoError> {
        // Dropping the KeyRef wipes the key once no cipher cache or caller
        // still holds its Arc.
        let removed = self.keys().remove(&(tenant.clone(), subject.clone()));
        Ok(u32::from(removed.is_some()))
    }
}
