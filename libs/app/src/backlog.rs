//! The consolidation buffer as `/readyz`, `/metrics` and ingest's ceiling
//! read it.

use std::sync::Arc;

use async_trait::async_trait;
use mnemo_consolidator::buffer::MessageBuffer;
use mnemo_http::backlog::{self, BufferProbe};

pub struct BufferFigures(pub Arc<dyn MessageBuffer>);

#[async_trait]
impl BufferProbe for BufferFigures {
    async fn figures(
        &self,
    ) -> Result<backlog::BufferFigures, Box<dyn std::error::Error + Send + Sync>> {
        let stats = self.0.stats().await?;
        Ok(backlog::BufferFigures {
            messages: stats.messages,
            conversations: stats.conversations,
            oldest: stats.oldest,
            oldest_seconds: None,
        })
    }
}
