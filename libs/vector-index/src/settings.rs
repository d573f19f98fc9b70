//! Where the Qdrant server is. Outside the `qdrant` feature, so the
//! settings loader (mnemo-config) can resolve its section into this type
//! without linking qdrant-client.

use std::time::Duration;

use secrecy::SecretString;

/// Where the Qdrant server is and how to talk to it.
#[derive(Clone)]
pub struct QdrantSettings {
    /// The server's gRPC endpoint, e.g. `http://qdrant:6334` (gRPC, not the
    /// 6333 REST port).
    pub url: String,
    /// Sent as the `api-key` header when the server requires one.
    pub api_key: Option<SecretString>,
    /// Put before every collection name, so several deployments (or test
    /// runs) can share one server; empty by default.
    pub collection_prefix: String,
    /// Deadline of each request.
    pub timeout: Duration,
    /// Connect deadline.
    pub connect_timeout: Duration,
}

impl QdrantSettings {
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            api_key: None,
            collection_prefix: String::new(),
            timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(5),
        }
    }
}

impl std::fmt::Debug for QdrantSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The API key stays out of logs.
        f.debug_struct("QdrantSettings")
            .field("url", &self.url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("collection_prefix", &self.collection_prefix)
            .field("timeout", &self.timeout)
            .field("connect_timeout", &self.connect_timeout)
            .finish()
    }
}
