"""Semantic search: chunking, weighted reciprocal-rank fusion, vectors kept in step with the vault, fused
search results through the library, the command line and a real process, a broken model, and the promise
that without the extra (or without asking) nothing is imported."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from amem.config import load_config
from amem.errors import ConfigError
from amem.index.index import VaultIndex
from amem.index.schema import FILE as INDEX_FILE
from amem.report import CollectingReporter, Reporter
from amem.search.query import search
from amem.semantic import semantic
from tests.conftest import write_file

needs_model = pytest.mark.skipif(not semantic.installed(), reason="the semantic extra is not installed")

TOKENS = (
    "---\ntitle: Token lifetime\n---\nAccess tokens expire after fifteen minutes; refresh tokens after thirty days.\n"
)
DEPLOY = "# Deploy\n\nThe staging server is rebuilt every night from the main branch.\n"
COFFEE = "# Coffee\n\nThe espresso machine on the third floor needs descaling each month.\n"
PARAPHRASE = "how long do credentials stay valid"


def ids(result: Mapping[str, Any]) -> list[str]:
    return [hit["id"] for hit in result["hits"]]


def small_vault(vault: Path) -> None:
    write_file(vault / "auth.md", TOKENS)
    write_file(vault / "ops/deploy.md", DEPLOY)
    write_file(vault / "coffee.md", COFFEE)


def tables(config: Any) -> set[str]:
    conn = sqlite3.connect(config.cache_dir / INDEX_FILE)
    try:
        return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        conn.close()


# --- chunking and fusion (no model needed) -----------------------------------------------------------


def test_chunks_follow_headings_leave_out_code_and_markup_and_carry_the_title() -> None:
    body = (
        "Intro with a [link](https://example.com/x) and <b>bold</b>.\n\n"
        "## Setup {#setup}\n\nRun the `installer`.\n\n```sh\nsecret-command --flag\n```\n\n"
        "## Usage\n\nCall it **twice**.\n"
    )
    assert semantic.chunks("Tool", body) == [
        "Tool\nIntro with a link and  bold .",
        "Tool\n  Setup  \n\nRun the  installer .",
        "Tool\n  Usage\n\nCall it  twice .",
    ]


def test_a_long_section_is_cut_at_paragraphs_and_a_note_without_prose_is_its_title() -> None:
    paragraphs = [f"paragraph {i} " + "word " * 60 for i in range(12)]
    pieces = semantic.chunks("T", "## Long\n\n" + "\n\n".join(paragraphs))
    assert len(pieces) > 1
    assert all(len(piece) <= semantic.CHUNK_CHARS + len("T\n") + len("  Long\n") + 2 for piece in pieces)
    assert all(piece.startswith("T\n") for piece in pieces)
    joined = " ".join(pieces)
    assert all(f"paragraph {i} " in joined for i in range(12))  # nothing dropped between pieces
    assert semantic.chunks("Only a title", "```\ncode only\n```\n") == ["Only a title"]


def test_a_huge_note_stops_at_max_chunks() -> None:
    body = "".join(f"## Part {i}\n\ntext {i}\n\n" for i in range(semantic.MAX_CHUNKS + 10))
    assert len(semantic.chunks("T", body)) == semantic.MAX_CHUNKS


def test_fusion_is_weighted_reciprocal_rank_with_ties_by_id() -> None:
    fused = semantic.fuse([["a", "b", "c"], ["c", "d"]], [1.0, 0.5], k=10)
    expected = {"a": 1 / 11, "b": 1 / 12, "c": 1 / 13 + 0.5 / 11, "d": 0.5 / 12}
    assert [note_id for note_id, _ in fused] == sorted(expected, key=lambda i: (-expected[i], i))
    assert all(abs(score - expected[note_id]) < 1e-12 for note_id, score in fused)
    assert semantic.fuse([["b"], ["a"]], k=60) == [("a", 1 / 61), ("b", 1 / 61)]


def test_semantic_config_key_is_a_validated_boolean(isolated_env: Path) -> None:
    path = isolated_env.parent / "home/.config/amem/config.yaml"
    write_file(path, "semantic: sometimes\n")
    with pytest.raises(ConfigError) as info:
        load_config()
    assert info.value.message.startswith(f"semantic in {path}")
    write_file(path, "semantic: true\n")
    assert load_config().semantic is True
    path.unlink()
    assert load_config().semantic is False


# --- without the extra, or without asking, nothing is imported --------------------------------------

_PROBE = (
    "import sys\n"
    "{block}"
    "import amem.cli\n"
    "code = amem.cli.run(sys.argv[1:])\n"
    "loaded = sorted(m for m, v in sys.modules.items() if v is not None"
    " and (m.split('.')[0] in ('numpy', 'wordllama', 'tokenizers') or m == 'amem.semantic.semantic'))\n"
    "print(code, loaded, file=sys.stderr)\n"
)


def probe(vault: Path, cwd: Path, *args: str, hide_extra: bool) -> tuple[dict[str, Any], str]:
    """Run amem in a fresh interpreter; `hide_extra` makes the extra's package unimportable, as when it
    was never installed. Returns the JSON printed and the last stderr line (exit code, modules loaded)."""
    block = "sys.modules['wordllama'] = None\n" if hide_extra else ""
    env = {**os.environ, "AMEM_VAULT": str(vault)}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE.format(block=block), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr


def test_a_plain_search_imports_nothing_semantic(vault: Path, isolated_env: Path) -> None:
    small_vault(vault)
    result, stderr = probe(vault, isolated_env, "search", "tokens", hide_extra=False)
    assert (result["fused"], result["semantic"]) == (False, "unavailable")
    assert stderr.splitlines()[-1] == "0 []"


def test_without_the_extra_a_semantic_search_answers_from_keywords(vault: Path, isolated_env: Path) -> None:
    small_vault(vault)
    plain, _ = probe(vault, isolated_env, "search", "tokens", hide_extra=True)
    asked, stderr = probe(vault, isolated_env, "search", "--semantic", "tokens", hide_extra=True)
    assert (asked["fused"], asked["semantic"]) == (False, "unavailable")
    assert asked["hits"] == plain["hits"] and asked["total"] == plain["total"]
    assert "amem: warning: semantic search needs the semantic extra" in stderr
    last = stderr.splitlines()[-1]
    assert last.startswith("0 [") and "numpy" not in last and "wordllama" not in last


def test_exact_title_never_touches_the_semantic_ranker(vault: Path) -> None:
    small_vault(vault)
    config = load_config()._replace(semantic=True)
    result = search(config, None, exact_title="token lifetime", semantic=True)
    assert ids(result) == ["auth.md"]
    assert (result["fused"], result["semantic"]) == (False, "unavailable")
    assert "semantic_vectors" not in tables(config)


# --- with the model ----------------------------------------------------------------------------------


@needs_model
def test_a_paraphrase_finds_its_note_only_with_semantic_ranking(vault: Path) -> None:
    small_vault(vault)
    config = load_config()
    keyword = search(config, PARAPHRASE)
    fused = search(config, PARAPHRASE, semantic=True)
    assert "auth.md" not in ids(keyword)
    assert ids(fused)[0] == "auth.md"
    assert (fused["fused"], fused["semantic"]) == (True, "ok")
    assert fused["total"] == len(set(ids(keyword)) | set(ids(fused)))
    assert fused["hits"][0]["snippet"].startswith("Access tokens expire")


@needs_model
def test_fusion_keeps_an_exact_keyword_hit_first(vault: Path) -> None:
    small_vault(vault)
    config = load_config()
    assert ids(search(config, "espresso descaling", semantic=True))[0] == "coffee.md"
    assert ids(search(config, "Deploy", semantic=True))[0] == "ops/deploy.md"


@needs_model
def test_config_turns_it_on_and_the_flag_off(vault: Path, isolated_env: Path, amem: Any) -> None:
    small_vault(vault)
    write_file(isolated_env.parent / "home/.config/amem/config.yaml", "semantic: true\n")
    on = amem("search", PARAPHRASE)
    assert on.exit_code == 0, on.stderr
    assert (on.json["fused"], on.json["semantic"]) == (True, "ok")
    assert on.json["hits"][0]["id"] == "auth.md"
    off = amem("search", "--no-semantic", PARAPHRASE)
    assert (off.json["fused"], off.json["semantic"]) == (False, "unavailable")


@needs_model
def test_the_installed_amem_fuses_in_a_real_process(vault: Path, isolated_env: Path) -> None:
    small_vault(vault)
    script = Path(sys.executable).parent / "amem"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "amem"]
    env = {**os.environ, "AMEM_VAULT": str(vault)}
    done = subprocess.run(
        [*command, "search", "--semantic", PARAPHRASE], cwd=isolated_env, env=env, capture_output=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["fused"], result["semantic"], ids(result)[0]) == (True, "ok", "auth.md")
    assert done.stderr == b""


def sync_index(config: Any) -> tuple[int, dict[str, tuple[str, bytes]]]:
    index = VaultIndex(config)
    try:
        index.refresh()
        embedder = semantic.load_embedder()
        count = semantic.sync(
            index.conn,
            embedder,
            semantic.index_stamps(index.conn),
            semantic.note_reader(config, index.conn),
            Reporter(),
        )
        return count, semantic.vectors_of(index.conn)
    finally:
        index.close()


@needs_model
def test_one_changed_note_is_embedded_again_and_the_table_equals_a_rebuild(
    vault: Path, isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    small_vault(vault)
    config = load_config()
    first_cache = config.cache_dir
    assert sync_index(config)[0] == 3
    assert sync_index(config)[0] == 0  # nothing changed, nothing read or embedded

    write_file(vault / "coffee.md", COFFEE + "\nAlso the milk frother.\n")
    os.utime(vault / "ops/deploy.md", ns=(10**18, 10**18))  # touched, same bytes: no new embedding
    (vault / "auth.md").unlink()
    write_file(vault / "new.md", "# New\n\nA fresh note about release trains.\n")
    count, incremental = sync_index(config)
    assert count == 2  # coffee.md and new.md
    assert sorted(incremental) == ["coffee.md", "new.md", "ops/deploy.md"]

    monkeypatch.setenv("XDG_CACHE_HOME", str(isolated_env / "fresh-cache"))
    fresh_config = load_config()
    assert fresh_config.cache_dir != first_cache
    count, rebuilt = sync_index(fresh_config)
    assert count == 3 and rebuilt == incremental


@needs_model
def test_an_unreadable_note_gets_no_vectors_and_the_search_still_answers(vault: Path) -> None:
    small_vault(vault)
    write_file(vault / "latin1.md", "caf\xe9 tokens".encode("latin-1"))
    config = load_config()
    reporter = CollectingReporter()
    result = search(config, PARAPHRASE, semantic=True, reporter=reporter)
    assert result["semantic"] == "ok" and "latin1.md" not in ids(result)
    assert "latin1.md" not in sync_index(config)[1]


def broken_extra(folder: Path) -> Path:
    """A copy of the installed extra's package without its weights: a damaged install."""
    import wordllama

    source = Path(wordllama.__file__).parent
    target = folder / "wordllama"
    target.mkdir(parents=True)
    for entry in source.iterdir():
        if entry.name != "weights":
            (target / entry.name).symlink_to(entry)
    return folder


@needs_model
def test_a_broken_model_answers_from_keywords_with_an_error_and_a_warning(vault: Path, isolated_env: Path) -> None:
    small_vault(vault)
    plain, _ = probe(vault, isolated_env, "search", "tokens", hide_extra=False)
    shadow = broken_extra(isolated_env / "broken")
    code = "import sys, amem.cli; sys.exit(amem.cli.run(sys.argv[1:]))"
    env = {**os.environ, "AMEM_VAULT": str(vault), "PYTHONPATH": str(shadow)}
    done = subprocess.run(
        [sys.executable, "-c", code, "search", "--semantic", "tokens"],
        cwd=isolated_env,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["fused"], result["semantic"]) == (False, "error")
    assert result["hits"] == plain["hits"] and result["total"] == plain["total"]
    assert "amem: warning: the model file weights/l2_supercat_256.safetensors cannot be read" in done.stderr
    assert "Traceback" not in done.stderr and str(shadow) not in done.stderr


@needs_model
def test_a_model_failing_at_query_time_costs_only_the_fusion(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    small_vault(vault)
    config = load_config()
    plain = search(config, "tokens")
    embedder = semantic.load_embedder()
    real = embedder.embed

    def embed_notes_only(texts: Any) -> Any:
        if len(texts) == 1 and texts[0] == "tokens":
            raise RuntimeError("model crashed")
        return real(texts)

    monkeypatch.setattr(embedder, "embed", embed_notes_only)
    reporter = CollectingReporter()
    result = search(config, "tokens", semantic=True, reporter=reporter)
    assert (result["fused"], result["semantic"]) == (False, "error")
    assert result["hits"] == plain["hits"]
    assert reporter.warnings == ["semantic ranking failed (RuntimeError); answering from keywords only"]


@needs_model
def test_vectors_equal_wordllamas_own_loader() -> None:
    import numpy as np
    import wordllama

    texts = ["Access tokens expire after fifteen minutes", "令牌多久过期", "caching computed properties in templates"]
    folder = Path(wordllama.__file__).parent
    theirs = wordllama.WordLlama.load(cache_dir=folder, disable_download=True).embed(texts, norm=True)
    ours = semantic.load_embedder().embed(texts)
    assert ours.shape == (3, 256)
    assert np.abs(ours - theirs).max() < 1e-4


def brute_force(config: Any, query: str) -> list[tuple[str, float]]:
    """Every note's best chunk similarity computed from the stored rows one by one, best first, ties by id."""
    import numpy as np

    index = VaultIndex(config)
    try:
        rows = semantic.vectors_of(index.conn)
    finally:
        index.close()
    # the stored float16 vectors and the float16 query, multiplied in float32
    probe = semantic.load_embedder().embed([query])[0].astype(np.float16).astype(np.float32)
    scores = []
    for note_id, (_, blob) in rows.items():
        vectors = np.frombuffer(blob, dtype=np.float16).reshape(-1, 256).astype(np.float32)
        if len(vectors):
            scores.append((note_id, round(float((vectors @ probe).max()), 6)))
    return sorted(scores, key=lambda item: (-item[1], item[0]))


@needs_model
@pytest.mark.parametrize("keep", [False, True])
def test_semantic_ranking_equals_a_brute_force_scan(vault: Path, keep: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(semantic, "KEEP_VECTORS", keep)
    small_vault(vault)
    for i in range(30):  # identical notes tie, and the cut-off must keep the lowest ids among them
        write_file(vault / f"same/{i:02}.md", "# Same\n\nTokens and sessions.\n")
    config = load_config()
    sync_index(config)
    index = VaultIndex(config)
    try:
        embedder = semantic.load_embedder()
        for query in (PARAPHRASE, "sessions", "令牌"):
            expected = brute_force(config, query)
            for depth in (5, 10, 33, 100):
                assert semantic.rank(index.conn, embedder, query, depth) == expected[:depth]
    finally:
        index.close()


@needs_model
def test_kept_vectors_follow_a_change(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(semantic, "KEEP_VECTORS", True)
    small_vault(vault)
    config = load_config()
    assert ids(search(config, PARAPHRASE, semantic=True))[0] == "auth.md"
    (vault / "auth.md").unlink()
    write_file(vault / "later.md", TOKENS.replace("Token lifetime", "Credential expiry"))
    assert ids(search(config, PARAPHRASE, semantic=True))[0] == "later.md"
    assert ids(search(config, PARAPHRASE, semantic=True)) == ids(search(config, PARAPHRASE, semantic=True))


@needs_model
def test_a_broken_dependency_is_named_without_its_path(vault: Path, isolated_env: Path) -> None:
    small_vault(vault)
    shadow = isolated_env / "shadow"
    write_file(
        shadow / "tokenizers/__init__.py",
        "raise ImportError('undefined symbol in /secret/host/path/tokenizers.so', name='tokenizers')\n",
    )
    code = "import sys, amem.cli; sys.exit(amem.cli.run(sys.argv[1:]))"
    env = {**os.environ, "AMEM_VAULT": str(vault), "PYTHONPATH": str(shadow)}
    done = subprocess.run(
        [sys.executable, "-c", code, "search", "--semantic", "tokens"],
        cwd=isolated_env,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["semantic"] == "error"
    assert "cannot be imported (tokenizers is missing or broken)" in done.stderr
    assert "/secret" not in done.stderr and "Traceback" not in done.stderr


@needs_model
def test_searches_keep_the_vectors_equal_to_a_rebuild(
    vault: Path, isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    small_vault(vault)
    config = load_config()
    assert ids(search(config, PARAPHRASE, semantic=True))[0] == "auth.md"
    write_file(vault / "auth.md", "# Lunch\n\nThe canteen serves noodles on Fridays.\n")
    write_file(vault / "ops/keys.md", TOKENS.replace("Token lifetime", "Key rotation"))
    assert ids(search(config, PARAPHRASE, semantic=True))[0] == "ops/keys.md"
    assert ids(search(config, PARAPHRASE, semantic=True))[0] == "ops/keys.md"  # nothing changed in between
    index = VaultIndex(config)
    try:
        kept = semantic.vectors_of(index.conn)
    finally:
        index.close()
    monkeypatch.setenv("XDG_CACHE_HOME", str(isolated_env / "fresh-cache"))
    assert sync_index(load_config())[1] == kept


def counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every text the model embeds from now on, queries included."""
    embedder = semantic.load_embedder()
    real = embedder.embed
    seen: list[str] = []

    def embed(texts: Any) -> Any:
        seen.extend(texts)
        return real(texts)

    monkeypatch.setattr(embedder, "embed", embed)
    return seen


@needs_model
def test_through_search_one_changed_note_is_embedded_again_and_a_plain_search_keeps_the_vectors(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    small_vault(vault)
    config = load_config()
    seen = counting(monkeypatch)
    search(config, PARAPHRASE, semantic=True)
    assert len(seen) == 1 + 3  # the query, and one chunk per note
    seen.clear()
    search(config, "tokens")  # a plain search opens the index with the vectors in it: they stay
    search(config, PARAPHRASE, semantic=True)
    assert seen == [PARAPHRASE]
    seen.clear()
    write_file(vault / "coffee.md", COFFEE + "\nAlso the milk frother.\n")
    search(config, PARAPHRASE, semantic=True)
    assert seen == [*semantic.chunks("Coffee", COFFEE + "\nAlso the milk frother.\n"), PARAPHRASE]


@needs_model
def test_a_rebuilt_index_keeps_the_vectors_of_the_notes_it_still_holds(
    vault: Path, isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The keyword tables are built again when the settings change (here: a folder excluded) or amem's
    schema does; the vectors are kept, keyed by note and by the note's bytes, so nothing is embedded again
    (a real model takes minutes for a vault of thousands of notes). Those of the notes left out go."""
    small_vault(vault)
    config = load_config()
    search(config, PARAPHRASE, semantic=True)
    before = vectors(config)
    write_file(isolated_env.parent / "home/.config/amem/config.yaml", "excludeDirs: [ops]\n")
    rebuilt = load_config()
    assert rebuilt.cache_dir == config.cache_dir
    seen = counting(monkeypatch)
    assert ids(search(rebuilt, "tokens")) == ["auth.md"]  # other settings: the index is built again
    assert sorted(ids(search(rebuilt, PARAPHRASE, semantic=True))) == ["auth.md", "coffee.md"]
    assert seen == [PARAPHRASE]  # the query alone: no note embedded again
    assert vectors(rebuilt) == {i: v for i, v in before.items() if i != "ops/deploy.md"}
    assert vectors(rebuilt) == vectors_of_a_fresh_build(isolated_env, monkeypatch)


@needs_model
def test_an_index_of_an_older_schema_is_built_again_without_embedding_again(
    vault: Path, isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    small_vault(vault)
    config = load_config()
    search(config, PARAPHRASE, semantic=True)
    before = vectors(config)
    conn = sqlite3.connect(config.cache_dir / INDEX_FILE)
    settings = json.loads(conn.execute("SELECT value FROM meta WHERE key = 'settings'").fetchone()[0])
    conn.execute("UPDATE meta SET value = ? WHERE key = 'settings'", (json.dumps([settings[0] - 1, *settings[1:]]),))
    conn.commit()
    conn.close()
    seen = counting(monkeypatch)
    index = VaultIndex(config)
    try:
        assert index.refresh().added == 3  # built again
    finally:
        index.close()
    assert ids(search(config, PARAPHRASE, semantic=True))[0] == "auth.md"
    assert seen == [PARAPHRASE]
    assert vectors(config) == before


@needs_model
def test_the_first_index_of_a_version_takes_the_vectors_of_another_versions_file(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each schema version keeps its own file (`index.versions`): the first file of a new one takes the
    vectors of the vault's file of the version before, so an upgrade embeds nothing again, and removes that
    file once no process has it open."""
    small_vault(vault)
    config = load_config()
    search(config, PARAPHRASE, semantic=True)
    before = vectors(config)
    other = config.cache_dir / "index-14.sqlite"
    (config.cache_dir / INDEX_FILE).rename(other)  # as the version before left it: closed, no side files
    seen = counting(monkeypatch)
    index = VaultIndex(config)
    try:
        assert index.refresh().added == 3  # this version's file, built from nothing
    finally:
        index.close()
    assert ids(search(config, PARAPHRASE, semantic=True))[0] == "auth.md"
    assert seen == [PARAPHRASE]  # the query alone: no note embedded again
    assert vectors(config) == before
    assert not other.exists()


def vectors(config: Any) -> dict[str, tuple[str, bytes]]:
    index = VaultIndex(config)
    try:
        return semantic.vectors_of(index.conn)
    finally:
        index.close()


def vectors_of_a_fresh_build(isolated_env: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, tuple[str, bytes]]:
    """The vectors an index built from nothing, in another cache folder, holds."""
    cache = os.environ["XDG_CACHE_HOME"]
    monkeypatch.setenv("XDG_CACHE_HOME", str(isolated_env / "fresh-cache"))
    try:
        fresh = load_config()
        search(fresh, PARAPHRASE, semantic=True)
        return vectors(fresh)
    finally:
        monkeypatch.setenv("XDG_CACHE_HOME", cache)


@needs_model
def test_semantic_hits_obey_the_tag_and_folder_filters(vault: Path) -> None:
    small_vault(vault)
    write_file(vault / "ops/keys.md", "---\ntags: [security]\n---\n" + TOKENS.split("---\n", 2)[2])
    config = load_config()
    everywhere = search(config, PARAPHRASE, semantic=True)
    assert {"auth.md", "ops/keys.md"} <= set(ids(everywhere))
    in_ops = search(config, PARAPHRASE, semantic=True, folder="ops")
    assert ids(in_ops)[0] == "ops/keys.md" and all(i.startswith("ops/") for i in ids(in_ops))
    assert in_ops["total"] == len(ids(in_ops)) == 2
    tagged = search(config, PARAPHRASE, semantic=True, tags=["security"])
    assert ids(tagged) == ["ops/keys.md"] and tagged["total"] == 1
