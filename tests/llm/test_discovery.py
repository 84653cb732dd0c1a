"""Models already on this computer: each tool's folder layout, built here with the demo model."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from curator.llm.discovery import (
    OLLAMA_MODEL_MEDIA_TYPE,
    default_roots,
    find_local_models,
)


def _link(target: Path, link: Path) -> Path:
    link.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, link)
    return link


def _ollama_tree(root: Path, demo_model: Path, name: str, tag: str) -> Path:
    digest = hashlib.sha256(demo_model.read_bytes()).hexdigest()
    blob = root / "blobs" / f"sha256-{digest}"
    blob.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(demo_model, blob)
    (root / "blobs" / "sha256-0000").write_text("a template, not a model")
    manifest = root / "manifests" / "registry.ollama.ai" / "library" / name / tag
    manifest.parent.mkdir(parents=True, exist_ok=True)
    manifest.write_text(
        json.dumps(
            {
                "schemaVersion": 2,
                "layers": [
                    {"mediaType": "application/vnd.ollama.image.template", "digest": "sha256:0000"},
                    {"mediaType": OLLAMA_MODEL_MEDIA_TYPE, "digest": f"sha256:{digest}"},
                ],
            }
        )
    )
    return blob


def test_each_tool_layout_is_found_with_header_facts(tmp_path: Path, demo_model: Path) -> None:
    lm = _link(demo_model, tmp_path / "lms" / "publisher" / "repo" / "small.Q4_1.gguf")
    (tmp_path / "lms" / "publisher" / "repo" / "README.md").write_text("not a model")
    (tmp_path / "lms" / "publisher" / "repo" / "broken.gguf").write_bytes(b"GGUF\x03\x00")
    hf_snap = tmp_path / "hf" / "models--org--Small-GGUF" / "snapshots" / "abc123"
    hf = _link(demo_model, hf_snap / "small-q4.gguf")
    g4a = tmp_path / "g4a" / "copy.gguf"
    g4a.parent.mkdir()
    shutil.copyfile(demo_model, g4a)
    ollama_root = tmp_path / "ollama"
    blob = _ollama_tree(ollama_root, demo_model, "smollm2", "135m")

    models = find_local_models(
        {
            "lmstudio": [tmp_path / "lms"],
            "huggingface": [tmp_path / "hf"],
            "gpt4all": [tmp_path / "g4a", tmp_path / "missing"],
            "ollama": [ollama_root],
        }
    )
    by_source = {m.source: m for m in models}
    # the symlinked LM Studio and HF files resolve to the same demo model: listed once
    assert [m.source for m in models] == ["lmstudio", "gpt4all", "ollama"]
    assert by_source["lmstudio"].label == "publisher/repo/small.Q4_1.gguf"
    assert by_source["lmstudio"].path == lm
    assert by_source["gpt4all"].path == g4a
    assert by_source["ollama"].label == "smollm2:135m"
    assert by_source["ollama"].path == blob
    for model in models:
        assert model.quantization == "Q4_1"
        assert model.architecture == "llama"
        assert model.size_bytes == demo_model.stat().st_size
        assert model.name

    only_hf = find_local_models({"huggingface": [tmp_path / "hf"]})
    assert [(m.label, m.path) for m in only_hf] == [("org/Small-GGUF/small-q4.gguf", hf)]


def test_unreadable_files_and_bad_manifests_are_skipped(tmp_path: Path) -> None:
    root = tmp_path / "ollama"
    manifest = root / "manifests" / "registry.ollama.ai" / "library" / "x" / "latest"
    manifest.parent.mkdir(parents=True)
    manifest.write_text("{not json")
    other = root / "manifests" / "registry.ollama.ai" / "library" / "y" / "latest"
    other.parent.mkdir(parents=True)
    other.write_text(
        json.dumps({"layers": [{"mediaType": OLLAMA_MODEL_MEDIA_TYPE, "digest": "sha256:ff"}]})
    )
    (root / "blobs").mkdir()
    (root / "blobs" / "sha256-ff").write_bytes(b"not a gguf at all")
    fake = tmp_path / "lms" / "fake.gguf"
    fake.parent.mkdir()
    fake.write_text("hello")
    assert find_local_models({"ollama": [root], "lmstudio": [tmp_path / "lms"]}) == []


def test_default_roots_follow_the_environment(tmp_path: Path) -> None:
    roots = default_roots(
        {"HF_HUB_CACHE": str(tmp_path / "hub"), "HF_HOME": str(tmp_path / "hfhome")},
        home=tmp_path / "home",
    )
    assert roots["huggingface"][:2] == [tmp_path / "hub", tmp_path / "hfhome" / "hub"]
    assert roots["huggingface"][2] == tmp_path / "home" / ".cache" / "huggingface" / "hub"
    assert tmp_path / "home" / ".lmstudio" / "models" in roots["lmstudio"]
    assert tmp_path / "home" / ".cache" / "lm-studio" / "models" in roots["lmstudio"]
    assert roots["ollama"] == [tmp_path / "home" / ".ollama" / "models"]
    assert tmp_path / "home" / ".local" / "share" / "nomic.ai" / "GPT4All" in roots["gpt4all"]


@pytest.mark.parametrize("host", ["registry.ollama.ai", "hf.co"])
def test_ollama_labels(tmp_path: Path, demo_model: Path, host: str) -> None:
    root = tmp_path / "o"
    _ollama_tree(root, demo_model, "m", "q4")
    if host != "registry.ollama.ai":
        src = root / "manifests" / "registry.ollama.ai"
        src.rename(root / "manifests" / host)
    (label,) = [m.label for m in find_local_models({"ollama": [root]})]
    assert label == ("m:q4" if host == "registry.ollama.ai" else "hf.co/library/m:q4")
