"""The search index: tokenizer, incremental upkeep equal to a fresh build, damage, concurrency, progress."""

from __future__ import annotations

import io
import json
import os
import random
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from amem.config import Config, load_config
from amem.vault import search as search_module
from amem.vault.index import VaultIndex
from amem.vault.search import phrase_form, search, terms_of, title_key, word_runs
from tests.conftest import write_file

# --- tokenizer ---------------------------------------------------------------------------------------


def terms(text: str) -> list[str]:
    return terms_of(word_runs(text))[0]


def test_words_are_folded_with_nfkc_and_case_folding() -> None:
    assert terms("Ｔｏｋｅｎ STRASSE Straße Ǆemal") == ["token", "strasse", "strasse", "džemal"]


def test_words_are_letters_and_digits_only() -> None:
    assert terms("snake_case kebab-case a.b v2 [[link|alias]]") == [
        "snake",
        "case",
        "kebab",
        "case",
        "a",
        "b",
        "v2",
        "link",
        "alias",
    ]


def test_cjk_runs_give_characters_and_overlapping_bigrams() -> None:
    found, length = terms_of(word_runs("用户认证令牌"))
    assert found == ["用", "户", "认", "证", "令", "牌", "用户", "户认", "认证", "证令", "令牌"]
    assert length == 6


def test_cjk_is_split_from_latin_in_one_run() -> None:
    assert sorted(terms("token认证v2")) == sorted(["token", "认", "证", "认证", "v2"])


def test_japanese_and_korean_are_cjk() -> None:
    assert "検索" in terms("全文検索エンジン")
    assert "ンジ" in terms("全文検索エンジン")
    assert "검색" in terms("전문검색")


def test_combining_marks_stay_in_their_word() -> None:
    assert terms("हिन्दी") == ["हिन्दी"]


def test_phrase_form_drops_spaces_between_cjk_only() -> None:
    assert phrase_form(word_runs("用户 认证 and Token")) == "用户认证 and token"


def test_title_key_folds_form_case_and_separators() -> None:
    assert title_key("Cafe\u0301") == title_key("Café") == title_key("CAFÉ")
    assert title_key("a-b_c") == title_key("A B C") == title_key("a  --__ b c ")
    assert title_key("ab c") != title_key("a bc")


# --- helpers -----------------------------------------------------------------------------------------

QUERIES = [
    "alpha",
    "al",
    "beta gamma",
    "gamma delta",
    "认证",
    "认",
    "用户认证",
    "token 令牌",
    "note",
    "zeta",
    "nothing-here",
    "x",
]
WORDS = [
    "alpha",
    "alphabet",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "token",
    "用户认证令牌",
    "认证",
    "令牌",
    "tokens",
    "gam",
]


def fresh_config(config: Config, cache: Path, monkeypatch: pytest.MonkeyPatch) -> Config:
    """The same vault, but an index in another cache folder."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    other = load_config()
    monkeypatch.setenv("XDG_CACHE_HOME", str(Path(os.environ["HOME"]) / ".cache"))
    return other


def answers(config: Config, cache: Path | None = None, monkeypatch: pytest.MonkeyPatch | None = None) -> Any:
    """Every query's full output (and an exact-title check), with the index in `cache` when given."""
    if cache is not None and monkeypatch is not None:
        monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    try:
        result = {q: search(config, q, limit=5) for q in QUERIES}
        result["!title"] = search(config, None, exact_title="Alpha Beta")
        return result
    finally:
        if cache is not None and monkeypatch is not None:
            monkeypatch.setenv("XDG_CACHE_HOME", str(Path(os.environ["HOME"]) / ".cache"))


def random_note(rng: random.Random, ids: list[str]) -> str:
    title = " ".join(rng.choices(WORDS, k=rng.randint(1, 3)))
    body = " ".join(rng.choices(WORDS, k=rng.randint(0, 30)))
    links = " ".join(f"[[{rng.choice(ids).rsplit('/', 1)[-1][:-3]}]]" for _ in range(rng.randint(0, 3))) if ids else ""
    head = f"---\ntitle: {title}\n---\n" if rng.random() < 0.5 else f"# {title}\n"
    return f"{head}{body}\n{links}\n"


# --- incremental equals fresh ------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("seed", [20261129, 1, 2])
def test_incremental_index_equals_a_fresh_build_over_random_edits(
    vault: Path, config: Config, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    rng = random.Random(seed)
    ids: list[str] = []
    for i in range(40):
        note_id = f"{rng.choice(['', 'a/', 'a/b/', 'c/'])}n{i}.md"
        write_file(vault / note_id, random_note(rng, ids))
        ids.append(note_id)
    search(config, "warm up")
    counter = 100
    for step in range(60):
        op = rng.choice(
            [
                "create",
                "edit",
                "delete",
                "rename",
                "same-size",
                "same-size-same-mtime",
                "touch",
                "not-utf8",
                "create",
                "edit",
                "rewrite-many",
            ]
        )
        if op == "rewrite-many":  # more changes in one refresh than postings are edited in place for
            for note_id in rng.sample(ids, min(len(ids), 36)):
                (vault / note_id).write_text(random_note(rng, ids), encoding="utf-8")
        elif op == "create" or not ids:
            note_id = f"{rng.choice(['', 'a/', 'd/'])}n{counter}.md"
            counter += 1
            write_file(vault / note_id, random_note(rng, ids))
            ids.append(note_id)
        else:
            note_id = rng.choice(ids)
            path = vault / note_id
            if op == "edit":
                path.write_text(random_note(rng, ids), encoding="utf-8")
            elif op == "delete":
                path.unlink()
                ids.remove(note_id)
            elif op == "rename":
                new_id = f"{rng.choice(['', 'a/', 'e/f/'])}r{counter}.md"
                counter += 1
                (vault / new_id).parent.mkdir(parents=True, exist_ok=True)
                os.rename(path, vault / new_id)
                ids[ids.index(note_id)] = new_id
            elif op in ("same-size", "same-size-same-mtime"):
                data = path.read_bytes()
                before = os.stat(path)
                swapped = data.replace(b"alpha", b"gamma", 1) if b"alpha" in data else data.replace(b"beta", b"zeta", 1)
                path.write_bytes(swapped)
                if op == "same-size-same-mtime":
                    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
            elif op == "touch":
                os.utime(path)
            elif op == "not-utf8":
                path.write_bytes(b"\xff\xfe not UTF-8 alpha")
        if step % 4 == 3:
            incremental = answers(config)
            fresh = answers(config, tmp_path / f"fresh-{step}", monkeypatch)
            assert incremental == fresh, f"after step {step} ({op})"


def test_every_kind_of_change_shows_on_the_next_search(vault: Path, config: Config) -> None:
    write_file(vault / "a.md", "# A\nalpha\n")
    write_file(vault / "b.md", "# B\nbeta\n")
    assert [h["id"] for h in search(config, "alpha")["hits"]] == ["a.md"]
    write_file(vault / "b.md", "# B\nalpha\n")
    write_file(vault / "c.md", "# C\nalpha\n")
    assert [h["id"] for h in search(config, "alpha")["hits"]] == ["a.md", "b.md", "c.md"]
    os.rename(vault / "a.md", vault / "z.md")
    (vault / "c.md").unlink()
    assert [h["id"] for h in search(config, "alpha")["hits"]] == ["b.md", "z.md"]


def test_a_note_that_stops_or_starts_being_readable_loses_or_takes_back_its_links(vault: Path, config: Config) -> None:
    write_file(vault / "x.md", "# X\nfindme\n")
    write_file(vault / "sub/x.md", "# Sub X\nfindme\n")
    write_file(vault / "linker.md", "# Linker\nsee [[x]]\n")

    def backlinks() -> dict[str, list[str]]:
        return {hit["id"]: hit["backlinks"] for hit in search(config, "findme")["hits"]}

    assert backlinks() == {"sub/x.md": [], "x.md": ["linker.md"]}
    (vault / "x.md").write_bytes(b"# X\n\xff findme\n")
    assert backlinks() == {"sub/x.md": ["linker.md"]}  # [[x]] now finds the only readable x
    (vault / "x.md").write_text("# X\nfindme again\n", encoding="utf-8")
    assert backlinks() == {"sub/x.md": [], "x.md": ["linker.md"]}


# --- damage and concurrency --------------------------------------------------------------------------


def small_vault(vault: Path, n: int = 30) -> None:
    rng = random.Random(7)
    ids: list[str] = []
    for i in range(n):
        note_id = f"{'sub/' if i % 3 else ''}note{i}.md"
        write_file(vault / note_id, random_note(rng, ids))
        ids.append(note_id)


@pytest.mark.parametrize("damage", ["garbage", "truncated", "zeroed-middle"])
def test_a_damaged_index_is_rebuilt_and_search_still_answers(vault: Path, config: Config, damage: str) -> None:
    small_vault(vault, 60)
    expected = answers(config)
    path = VaultIndex(config).path
    data = path.read_bytes()
    if damage == "garbage":
        path.write_bytes(b"this is not a database" * 100)
    elif damage == "truncated":
        path.write_bytes(data[: len(data) // 2])
    else:
        middle = len(data) // 2 // 4096 * 4096
        path.write_bytes(data[:middle] + b"\x00" * 8192 + data[middle + 8192 :])
    assert answers(config) == expected


def test_an_index_of_another_format_is_rebuilt(vault: Path, config: Config) -> None:
    small_vault(vault)
    expected = answers(config)
    conn = sqlite3.connect(VaultIndex(config).path)
    conn.execute("UPDATE meta SET value = 'old' WHERE key = 'settings'")
    conn.execute("DELETE FROM search_terms")
    conn.commit()
    conn.close()
    assert answers(config) == expected


@pytest.mark.slow
def test_concurrent_searches_in_real_processes_agree_and_leave_the_index_sound(
    vault: Path, config: Config, isolated_env: Path
) -> None:
    small_vault(vault, 400)
    command = [sys.executable, "-m", "amem", "search", "alpha beta", "--limit", "50"]
    for _round in range(2):
        procs = [
            subprocess.Popen(command, cwd=isolated_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(4)
        ]
        outputs = [proc.communicate(timeout=120) for proc in procs]
        assert all(proc.returncode == 0 for proc in procs), [err for _, err in outputs]
        assert len({out for out, _ in outputs}) == 1
        assert json.loads(outputs[0][0]) == search(config, "alpha beta", limit=50)
        write_file(vault / "sub/note5.md", "# alpha beta\nchanged between rounds\n")  # an incremental round next
    conn = sqlite3.connect(VaultIndex(config).path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()


# --- progress ----------------------------------------------------------------------------------------


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_slow_build_shows_progress_on_a_terminal(
    vault: Path, config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(300):
        write_file(vault / f"n{i}.md", f"# note {i}\nalpha\n")
    clock = iter(range(0, 10**6, 5))
    monkeypatch.setattr("amem.vault.index.time.monotonic", lambda: float(next(clock)))  # each look: 5 s later
    monkeypatch.setattr(search_module, "_first_build_start", None)  # as if imported by this build
    terminal = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert search(config, "alpha")["total"] == 300
    assert "amem: indexing 250/300 notes" in terminal.getvalue()
    assert "amem: indexing search terms 300/300 notes\n" in terminal.getvalue()


def test_no_progress_when_stderr_is_not_a_terminal(
    vault: Path, config: Config, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for i in range(300):
        write_file(vault / f"n{i}.md", f"# note {i}\nalpha\n")
    clock = iter(range(0, 10**6, 5))
    monkeypatch.setattr("amem.vault.index.time.monotonic", lambda: float(next(clock)))
    search(config, "alpha")
    assert "indexing" not in capsys.readouterr().err
