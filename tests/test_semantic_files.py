"""The files a semantic model is loaded from, through `amem search --semantic` in real processes: the static
model's two files (wordllama's) are checked by SHA-256 before either is read, so a copy with one byte
changed is `semantic: "error"` with a warning naming the file, never a silent load; and a model folder of
the user's is ONNX, so one of safetensors only is refused with what to do instead."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("numpy")
pytest.importorskip("tokenizers")
pytest.importorskip("safetensors")

from amem.semantic import models  # noqa: E402
from tests.conftest import write_file  # noqa: E402


def search(*args: str, env: dict[str, str] | None = None) -> tuple[dict[str, Any], str]:
    done = subprocess.run(
        [sys.executable, "-m", "amem", "search", "--semantic", *args],
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr


@pytest.fixture
def notes(vault: Path) -> Path:
    write_file(vault / "auth.md", "# Token lifetime\n\nAccess tokens expire after fifteen minutes.\n")
    write_file(vault / "deploy.md", "# Deploy\n\nThe staging server is rebuilt every night.\n")
    return vault


def wordllama_copy(site: Path, changed: str | None) -> dict[str, str]:
    """A package `wordllama` under `site` holding the static model's two files, `changed` (one of them)
    with one byte changed, and code that must never run; the environment that puts it first."""
    try:
        real = Path(models.package_folder("wordllama", "semantic", "this test"))
    except models.SemanticUnavailable:
        pytest.skip("the semantic extra is not installed")
    fake = site / "wordllama"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise SystemExit('the package code must never run')\n")
    for name in models.WORDLLAMA_FILES:
        data = bytearray((real / name).read_bytes())
        if name == changed:
            data[len(data) // 2] ^= 0x01
        write_file(fake / name, bytes(data))
    return {"PYTHONPATH": str(site)}


@pytest.mark.parametrize("changed", list(models.WORDLLAMA_FILES))
def test_a_static_model_file_with_one_byte_changed_is_a_semantic_error(
    notes: Path, tmp_path: Path, changed: str
) -> None:
    env = wordllama_copy(tmp_path / "site", changed)
    result, stderr = search("when do access tokens expire", env=env)
    assert (result["semantic"], result["fused"]) == ("error", False)
    assert result["hits"][0]["id"] == "auth.md"  # the keyword answer stands
    assert f"the model file {changed} is not the one amem was built for" in stderr
    assert models.WORDLLAMA_FILES[changed] in stderr
    assert str(tmp_path) not in stderr and "Traceback" not in stderr


def test_the_static_models_files_as_published_load(notes: Path, tmp_path: Path) -> None:
    env = wordllama_copy(tmp_path / "site", None)
    result, stderr = search("how long do credentials stay valid", env=env)
    assert (result["semantic"], result["fused"]) == ("ok", True), stderr


def test_a_model_folder_of_safetensors_only_says_to_export_onnx(notes: Path, isolated_env: Path) -> None:
    mine = isolated_env.parent / "home/.config/amem/mine"
    mine.mkdir(parents=True)
    shutil.copy(Path(models.__file__).parent.parent / "data/minilm/tokenizer.json", mine / "tokenizer.json")
    write_file(mine / "model.safetensors", b"\x08\x00\x00\x00\x00\x00\x00\x00{}      ")
    write_file(mine / "config.json", "{}")
    write_file(isolated_env.parent / "home/.config/amem/config.yaml", "semantic: {enabled: true, model: mine}\n")
    result, stderr = search("when do access tokens expire")
    assert (result["semantic"], result["fused"]) == ("error", False)
    assert result["hits"][0]["id"] == "auth.md"
    assert "model.safetensors but no model.onnx" in stderr and "export" in stderr
    assert str(isolated_env.parent) not in stderr
