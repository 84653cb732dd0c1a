"""Real damaged model files, built from the demo GGUF (no mocks: llama.cpp loads them).

The GGUF tensor table says where each tensor's bytes lie; overwriting them with ``0xFF``
makes every value NaN (``0xFFFF`` is a NaN in float16, ``0xFFFFFFFF`` in float32), so the
file still passes the header checks and loads, but computes NaN logits.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from curator.llm.model_file import read_tensor_table

NAN_TENSOR = "output_norm.weight"
"""The last norm before the output layer: NaN here turns every logit into NaN."""


def nan_weights_copy(source: Path, target: Path, tensor: str = NAN_TENSOR) -> Path:
    """Copy ``source`` to ``target`` with the data of ``tensor`` overwritten by NaNs."""
    shutil.copyfile(source, target)
    entry = next(e for e in read_tensor_table(target) if e.name == tensor)
    assert entry.nbytes > 0, f"unknown block size of {tensor} (type {entry.ggml_type})"
    with target.open("r+b") as handle:
        handle.seek(entry.offset)
        handle.write(b"\xff" * entry.nbytes)
    return target
