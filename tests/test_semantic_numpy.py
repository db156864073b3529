"""A user's model folder run by amem's numpy encoder (`model.safetensors`): numpy's BLAS gets one thread in
the process that runs it, unless the user chose a count, checked in fresh processes (the count is read
when numpy is first imported)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("tokenizers")
pytest.importorskip("numpy")

from amem.semantic import models  # noqa: E402

#: numpy's BLAS thread counts: OpenBLAS (numpy's wheels), OpenMP builds, MKL
VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")

_THREADS_CHILD = """
import json, os, sys
if sys.argv[2] == "numpy first":
    import numpy
from amem.semantic import models
vectors = models.folder(sys.argv[1]).embed(["auth token rotation", "the espresso machine"])
print(json.dumps({
    "set": {name: os.environ.get(name) for name in sys.argv[3].split()},
    "threads": len(os.listdir("/proc/self/task")),
    "shape": list(vectors.shape),
}))
"""


def blas_child(model: Path, env: dict[str, str], how: str = "") -> dict[str, Any]:
    clean = {k: v for k, v in os.environ.items() if k not in VARIABLES}
    done = subprocess.run(
        [sys.executable, "-c", _THREADS_CHILD, str(model), how, " ".join(VARIABLES)],
        env={**clean, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)  # type: ignore[no-any-return]


@pytest.fixture
def numpy_model(tmp_path: Path) -> Path:
    from tests.bench.random_bert import make

    return make(tmp_path / "numpy-model", layers=2, width=32, heads=2, inner=64)


def test_a_model_folder_run_by_numpy_gets_one_blas_thread_unless_the_user_chose(numpy_model: Path) -> None:
    ours = blas_child(numpy_model, {})
    assert ours["shape"][0] == 2
    assert ours["set"] == dict.fromkeys(VARIABLES, "1")
    # the user's own count stands, and the others are left unset
    chosen = blas_child(numpy_model, {"OPENBLAS_NUM_THREADS": "2"})
    assert chosen["set"] == {"OPENBLAS_NUM_THREADS": "2", "OMP_NUM_THREADS": None, "MKL_NUM_THREADS": None}
    omp = blas_child(numpy_model, {"OMP_NUM_THREADS": "2"})
    assert omp["set"] == {"OPENBLAS_NUM_THREADS": None, "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": None}
    if (os.cpu_count() or 1) >= 2:  # OpenBLAS starts its worker threads when numpy is imported
        assert ours["threads"] < chosen["threads"]
    # numpy imported before the model: too late to change, so nothing is set
    late = blas_child(numpy_model, {}, "numpy first")
    assert late["set"] == dict.fromkeys(VARIABLES)


def test_an_onnx_model_folder_leaves_the_blas_threads_alone(isolated_env: Path) -> None:
    import importlib.util

    spec = importlib.util.find_spec(models.MINILM_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("the semantic-minilm extra is not installed")
    mine = isolated_env / "onnx-model"
    mine.mkdir()
    shutil.copy(Path(list(spec.submodule_search_locations)[0]) / "model.onnx", mine / "model.onnx")
    shutil.copy(Path(models.__file__).parent.parent / "data/minilm/tokenizer.json", mine / "tokenizer.json")
    assert blas_child(mine, {})["set"] == dict.fromkeys(VARIABLES)


def test_a_query_its_fusion_gives_no_weight_is_not_embedded(
    vault: Path, isolated_env: Path, numpy_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model folder's fusion (Latin only) gives a query holding a title as a phrase, or written in
    Chinese, no weight: the search answers as keywords rank it and never embeds the query (milliseconds of
    the model's, for nothing); a question is embedded, once."""
    from amem.config import load_config
    from amem.index.index import VaultIndex
    from amem.report import CollectingReporter
    from amem.search.query import search
    from amem.semantic import embedding
    from tests.conftest import write_file

    write_file(vault / "auth.md", "# Token lifetime\n\nAccess tokens expire after fifteen minutes.\n")
    write_file(vault / "deploy.md", "# Deploy\n\nThe staging server is rebuilt every night.\n")
    write_file(vault / "zh.md", "# 令牌\n\n访问令牌在十五分钟后过期。\n")
    write_file(
        isolated_env.parent / "home/.config/amem/config.yaml", f"semantic: {{enabled: true, model: {numpy_model}}}\n"
    )
    config = load_config()
    index = VaultIndex(config)
    try:
        index.refresh()
        assert embedding.index_now(index, CollectingReporter()) == 3
    finally:
        index.close()
    embedded: list[str] = []
    real = models.Transformer.embed

    def spied(self: models.Transformer, texts: Any) -> Any:
        embedded.extend(texts)
        return real(self, texts)

    monkeypatch.setattr(models.Transformer, "embed", spied)
    for query, why in [("token lifetime", "phrase"), ("令牌过期", "script"), ("how long do tokens last?", "question")]:
        embedded.clear()
        fused = search(config, query, semantic=True, explain=True)
        keyword = search(config, query, semantic=False)
        assert (fused["fusion"]["why"], fused["semantic"]) == (why, "ok")
        if why == "question":
            assert fused["fusion"]["weight"] > 0 and embedded == [query]
        else:
            assert fused["fusion"]["weight"] == 0 and embedded == []
            assert [hit["id"] for hit in fused["hits"]] == [hit["id"] for hit in keyword["hits"]]
