"""The LLM pipeline: step 0 (classify episodes) and steps 1-3 (distil staged candidates).

Everything here is plain Python driven by a :class:`~curator.pipeline.progress.TaskState`,
so the command line and the desktop window's worker thread run the very same functions.
"""
