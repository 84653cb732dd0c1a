"""The background machinery: the LLM worker thread, jobs, operations, shared services."""
