"""The local language model: GGUF files, prompts, grammars and the llama.cpp backend.

Nothing here imports llama.cpp at package import time: reading a model's header,
validating it in a child process and resolving which model to use work without loading
the native library, which is imported only when a model is actually loaded.
"""
