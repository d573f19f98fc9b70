"""A LangChain retriever over one subject's memories (``pip install mnemo-client[langchain]``).

    retriever = MnemoRetriever(client=MnemoClient(), subject="user-42", k=5)
    docs = retriever.invoke("what does she drink?")

Each ``Document`` holds a result's text; its metadata says what it is
(``type``: ``memory`` or ``episode``), how it ranked (``score`` and the
score ``components``) and where it came from (``provenance``: the message
events it stands for, and for a memory its ``producer``).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict

from .. import models as m
from ..async_client import AsyncMnemoClient
from ..client import MnemoClient


def result_to_document(result: m.SearchResult) -> Document:
    metadata: Dict[str, Any] = {
        "type": result.type,
        "score": result.score,
        "components": result.components.model_dump(),
        "provenance": {"source_event_ids": list(result.provenance.source_event_ids)},
    }
    if result.via is not None:
        metadata["via"] = result.via.model_dump()
    text = ""
    if result.memory is not None:
        memory = result.memory
        text = memory.content or ""
        metadata.update(
            id=memory.id,
            subject=memory.subject,
            kind=memory.kind,
            tags=list(memory.tags),
            state=memory.state,
            version=memory.version,
            confidence=memory.confidence,
            importance=memory.importance,
            session=memory.session,
            agent=memory.agent,
            created_at=memory.created_at.isoformat(),
            updated_at=memory.updated_at.isoformat(),
        )
        metadata["provenance"]["producer"] = memory.provenance.producer.model_dump(exclude_none=True)
    elif result.episode is not None:
        episode = result.episode
        text = episode.content
        metadata.update(
            id=episode.id,
            message_id=episode.message_id,
            role=episode.role,
            session=episode.session,
            agent=episode.agent,
            timestamp=episode.timestamp.isoformat(),
        )
    return Document(page_content=text, metadata=metadata, id=metadata.get("id"))


class MnemoRetriever(BaseRetriever):
    """Retrieves a subject's memories (and, with ``include``, episodes) by
    mnemo's hybrid search. Give ``async_client`` for a truly async ``ainvoke``;
    without it the sync client runs in a worker thread."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    client: MnemoClient
    subject: str
    k: int = 4
    mode: Optional[m.SearchMode] = None
    filters: Optional[m.SearchFilters] = None
    include: Optional[List[m.IncludeKind]] = None
    async_client: Optional[AsyncMnemoClient] = None

    def _search_kwargs(self) -> Dict[str, Any]:
        return dict(k=self.k, mode=self.mode, filters=self.filters, include=self.include)

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> List[Document]:
        results = self.client.search(self.subject, query, **self._search_kwargs()).results
        return [result_to_document(r) for r in results]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> List[Document]:
        if self.async_client is None:
            return await super()._aget_relevant_documents(query, run_manager=run_manager)
        results = (await self.async_client.search(self.subject, query, **self._search_kwargs())).results
        return [result_to_document(r) for r in results]


__all__ = ["MnemoRetriever", "result_to_document"]
