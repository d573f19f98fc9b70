"""Framework adapters: ``langgraph`` (a BaseStore), ``langchain`` (a BaseRetriever)."""
