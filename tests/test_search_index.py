"""The search index is a cache: kept up to date incrementally it answers as a fresh build does, over random
edits and every kind of change; a damaged index or one of another format is rebuilt, concurrent searches in
real processes agree, a killed build resumes, a read does not wait for another process's refresh, and a
build reports its progress. (What a query's words match is test_search_matching's.)"""

from __future__ import annotations

import io
import json
import os
import random
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from amem.config import Config, load_config
from amem.index.index import VaultIndex
from amem.index.scan import RACY_NS
from amem.index.schema import LOCK_FILE
from amem.report import Progress, Reporter, StderrReporter
from amem.search.query import search
from tests.conftest import write_file

# --- what the index keeps of a note ---------------------------------------------------------------


def test_simple_frontmatter_gives_what_yaml_gives_or_defers_to_it() -> None:
    import yaml

    from amem.notes.parse import _jsonable, _load_yaml
    from amem.notes.simple_yaml import simple_frontmatter

    blocks = [
        "title: Hello World\ntags: [a, b-c, 2026]\ncreated: 2025-03-04\n",
        "title: yes\n",
        "title: 010\n",
        "a: 12\nb: 0\n",
        "title: a: b\n",
        "title: x # comment\n",
        "title: 'quoted'\n",
        "tags: []\n",
        "tags: [Null, x]\n",
        "title: Café au lait\n",
        "created: 2025-02-30\n",
        "key:\n",
        "a: 1\na: 2\n",
        "title: Ünïcode-ok (v2)\n",
    ]
    for block in blocks:
        fast = simple_frontmatter(block)
        if fast is not None:
            assert fast == _jsonable(_load_yaml(block) or {}), block
            assert "created" in block or fast == yaml.safe_load(block), block  # YAML has dates
    assert simple_frontmatter(blocks[0]) == {
        "title": "Hello World",
        "tags": ["a", "b-c", 2026],
        "created": "2025-03-04",
    }
    assert simple_frontmatter("title: yes\n") is None and simple_frontmatter("title: 010\n") is None


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
        result: dict[str, Any] = {q: search(config, q, limit=5) for q in QUERIES}
        result["!title"] = search(config, None, exact_title="Alpha Beta")
        index = VaultIndex(config)
        try:  # the exact-heading tier's keys, by note
            found = "SELECT n.id, h.key FROM note_headings h JOIN notes n ON n.rowid = h.note ORDER BY 1, 2"
            result["!headings"] = index.conn.execute(found).fetchall()
            # the short fields' own table holds each search row's head and headings, exactly
            short = "SELECT n.id, s.head, s.headings FROM {} s JOIN notes n ON n.rowid = s.rowid ORDER BY 1"
            result["!short"] = index.conn.execute(short.format("search_heads")).fetchall()
            assert result["!short"] == index.conn.execute(short.format("search_fts")).fetchall()
        finally:
            index.close()
        return result
    finally:
        if cache is not None and monkeypatch is not None:
            monkeypatch.setenv("XDG_CACHE_HOME", str(Path(os.environ["HOME"]) / ".cache"))


def random_note(rng: random.Random, ids: list[str]) -> str:
    title = " ".join(rng.choices(WORDS, k=rng.randint(1, 3)))
    body = " ".join(rng.choices(WORDS, k=rng.randint(0, 30)))
    links = " ".join(f"[[{rng.choice(ids).rsplit('/', 1)[-1][:-3]}]]" for _ in range(rng.randint(0, 3))) if ids else ""
    head = f"---\ntitle: {title}\n---\n" if rng.random() < 0.5 else f"# {title}\n"
    if rng.random() < 0.4:  # a section heading, some with an anchor
        words = " ".join(rng.choices(WORDS, k=rng.randint(1, 2)))
        head += f"## {words}{' {#' + words.replace(' ', '-') + '}' if rng.random() < 0.5 else ''}\n"
    return f"{head}{body}\n{links}\n"


# --- incremental equals fresh ------------------------------------------------------------------------


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
                # An invisible change (same size, same mtime) is promised to be seen only while the
                # note is racily recent (index.RACY_NS); an older one would be missed by design.
                if op == "same-size-same-mtime" and time.time_ns() - before.st_mtime_ns < RACY_NS // 2:
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
    conn.execute("DELETE FROM search_fts")
    conn.commit()
    conn.close()
    assert answers(config) == expected


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


def test_a_build_killed_halfway_resumes_where_it_stopped(vault: Path, config: Config, isolated_env: Path) -> None:
    import signal
    import time as clock

    for i in range(3000):
        write_file(vault / f"f{i % 7}/n{i}.md", f"---\ntitle: Note {i}\n---\nalpha {i} [[n{(i * 7) % 3000}]]\n")
    command = [sys.executable, "-m", "amem", "search", "alpha"]
    proc = subprocess.Popen(command, cwd=isolated_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    path = VaultIndex(config).path
    deadline = clock.monotonic() + 60
    done = 0
    while clock.monotonic() < deadline and proc.poll() is None:
        if path.exists():
            try:
                probe = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1)
                done = probe.execute("SELECT count(*) FROM notes").fetchone()[0]
                probe.close()
            except sqlite3.Error:
                done = 0
            if done >= 800:
                break
        clock.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert 800 <= done < 3000, done  # killed during the build, after some batches were committed
    stats = VaultIndex(config).refresh()
    assert stats.added + stats.changed <= 3000 - done + 400  # only what was left (and the last batch)
    assert search(config, "alpha")["total"] == 3000
    assert answers(config) == answers(config, vault.parent / "fresh-cache", pytest.MonkeyPatch())


def test_read_does_not_wait_for_another_process_refreshing(vault: Path, config: Config, isolated_env: Path) -> None:
    import fcntl

    from amem.ops.read import read_note

    write_file(vault / "a.md", "# A\n[[b]]\n")
    write_file(vault / "b.md", "# B\n")
    search(config, "warm")
    write_file(vault / "c.md", "# C\n[[b]]\n")
    lock = open(VaultIndex(config).path.with_name(LOCK_FILE), "a")  # noqa: SIM115
    fcntl.flock(lock, fcntl.LOCK_EX)  # as a build in another process holds it
    try:
        started = time.monotonic()
        note = read_note(config, "b")
        assert time.monotonic() - started < 5
        assert note["backlinks"] == ["a.md"]  # the index as it is, without the note not yet indexed
    finally:
        lock.close()
    assert read_note(config, "b")["backlinks"] == ["a.md", "c.md"]


# --- progress ----------------------------------------------------------------------------------------


class RecordingReporter(Reporter):
    def __init__(self) -> None:
        self.shown: list[tuple[str, int, int]] = []

    def progress(self, label: str, total: int) -> Progress:
        reporter = self

        class Recorder(Progress):
            count = 0

            def step(self, count: int = 1) -> None:
                self.count += count
                reporter.shown.append((label, self.count, total))

        return Recorder()


def test_a_build_reports_its_progress_to_the_reporter(vault: Path, config: Config) -> None:
    for i in range(900):
        write_file(vault / f"n{i}.md", f"# note {i}\nalpha\n")
    reporter = RecordingReporter()
    assert search(config, "alpha", reporter=reporter)["total"] == 900
    indexing = [shown for shown in reporter.shown if shown[0] == "indexing"]
    assert indexing[-1] == ("indexing", 900, 900) and len(indexing) == 3  # batch by batch
    terms = [shown for shown in reporter.shown if shown[0] == "indexing search terms"]
    assert terms[-1] == ("indexing search terms", 900, 900)  # the rows written, never more than there are


def test_a_cold_builds_search_rows_are_written_a_bounded_number_of_bytes_at_a_time(
    vault: Path, config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second pass holds a transaction's search fields in memory: a vault of big notes writes fewer of
    them a transaction, so that what it holds stays near `fts.PENDING_BYTES` however big its notes are."""
    from amem.index import fts

    monkeypatch.setattr(fts, "PENDING_BYTES", 20_000)
    for i in range(300):
        write_file(vault / f"n{i}.md", f"# note {i}\n" + "alpha beta gamma delta\n" * 40)  # ~1 KB each
    reporter = RecordingReporter()
    assert search(config, "alpha", reporter=reporter)["total"] == 300
    counts = [count for label, count, _ in reporter.shown if label == "indexing search terms"]
    steps = [later - earlier for earlier, later in zip([0, *counts], counts, strict=False)]
    assert counts[-1] == 300 and max(steps) <= 20_000 // 900, steps


def test_progress_is_shown_only_on_a_terminal(vault: Path, config: Config, monkeypatch: pytest.MonkeyPatch) -> None:

    for i in range(300):
        write_file(vault / f"n{i}.md", f"# note {i}\nalpha\n")
    clock = iter(range(0, 10**6, 5))
    monkeypatch.setattr("amem.report.time.monotonic", lambda: float(next(clock)))  # each look: 5 s later
    plain = io.StringIO()
    search(config, "alpha", reporter=StderrReporter(plain))
    assert "indexing" not in plain.getvalue()
    VaultIndex(config).path.unlink()
    terminal = FakeTerminal()
    search(config, "alpha", reporter=StderrReporter(terminal))
    assert "amem: indexing 300/300" in terminal.getvalue()


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_non_utf8_note_warns_on_search_once_and_not_on_reads_of_other_notes(vault: Path, amem: Any) -> None:
    write_file(vault / "bad.md", b"findme \xff\xfe")
    write_file(vault / "good.md", "# Good\nfindme\n")
    found = amem("search", "findme")
    assert found.exit_code == 0 and [hit["id"] for hit in found.json["hits"]] == ["good.md"]
    assert found.stderr.count("bad.md") == 1 and "UTF-8" in found.stderr
    read = amem("read", "good")
    assert read.exit_code == 0 and "bad.md" not in read.stderr
    (vault / "bad.md").write_bytes(b"findme fixed")
    again = amem("search", "findme")
    assert again.stderr == "" and again.json["total"] == 2
