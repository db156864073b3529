"""The cold build: its tokenizer gives the same terms as before it was made faster, a build by the
installed `amem` equals one made note by note, and a build killed half way is finished by the next command."""

from __future__ import annotations

import json
import operator
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import time
import unicodedata
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amem.index.batch import CompactResolver
from amem.index.schema import FILE as INDEX_FILE
from amem.notes import tokenize
from amem.notes.links import LinkResolver, extract_links, link_census
from amem.notes.tokenize import field_text, stem
from tests.conftest import write_file
from tests.installed import amem_bin

# --- the tokenizer's terms ---------------------------------------------------------------------------


def reference_field_text(text: str) -> str:
    """`field_text` as it was before its one-pass form: split at CJK stretches, then words per piece."""
    folded = unicodedata.normalize("NFKC", text).casefold().replace("_", " ")
    word = re.compile(rf"[\w{tokenize._MARKS}]+")
    if folded.isascii():
        return " ".join(map(stem, word.findall(folded)))
    out = []
    for i, part in enumerate(re.split(f"([{tokenize._CJK_CHARS}]+)", folded)):
        if i % 2:
            out.append(" ".join(map(operator.add, part, part[1:])))
            out.append(part[-1])
        elif part:
            words = word.findall(part)
            if words:
                out.append(" ".join(map(stem, words)))
    return " ".join(piece for piece in out if piece)


#: Latin words and their inflections, CJK of each script (with `・` and `ー`, CJK but no letters), marks,
#: full-width and compatibility forms that NFKC changes, underscores, punctuation and spaces.
ALPHABET = list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.,;:!?'\" \t\n#[]()")
ALPHABET += list("认证令牌用户全文検索エンジンひらがなカタカナ한국어々〆〇・ー゛")
ALPHABET += ["\u0301", "\u0308", "\u093f", "\u094d", "é", "ß", "İ", "ﬁ", "Ａ", "１", "ｶ", "①", "\u2063", "。", "、"]
WORDS = ["files", "linking", "hopping", "agreed", "ponies", "token", "tokens", "auth", "embedded", "happy"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(ALPHABET), st.sampled_from(WORDS)), max_size=60).map("".join))
def test_a_field_gets_the_terms_it_got_before_the_one_pass_tokenizer(text: str) -> None:
    expected = reference_field_text(text)
    assert field_text(text) == expected
    assert field_text(text) == expected  # the second time from the per-run cache


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.one_of(st.sampled_from(ALPHABET), st.sampled_from(WORDS)), max_size=80).map("".join),
    st.integers(1, 12),
)
def test_a_long_field_is_tokenized_a_slice_at_a_time_into_the_same_terms(text: str, size: int) -> None:
    """A field longer than a slice is folded and split a slice at a time, each cut after a line break or a
    space (a note of hundreds of megabytes would otherwise hold a list of every word at once): the terms
    are those of the whole."""
    assert tokenize.sliced_field_text(text, size) == reference_field_text(text)


def test_a_note_of_many_megabytes_is_tokenized_without_holding_every_word_at_once() -> None:
    import tracemalloc

    text = "auth token, word [[a]]\n" * 400_000  # 9.6 MB, 1.6 million words
    tracemalloc.start()
    try:
        terms = field_text(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert terms == reference_field_text(text)
    # The text folded, its terms and their join; a list of every word would be some 100 MB more.
    assert peak < 5 * len(text), peak


# --- a cold build by the installed amem --------------------------------------------------------------

#: Base names shared by notes in several folders, so that links resolve by the resolver's ranking.
NAMES = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "token", "用户认证", "Café"]
FOLDERS = ["", "a/", "a/b/", "c/", "c/d/e/"]


def note_text(rng: random.Random, i: int, ids: list[str]) -> str:
    """A note linking to notes written before and after it, by base name, path and Markdown link."""
    links = []
    for _ in range(rng.randint(0, 4)):
        target = rng.choice(ids)
        stem_ = target[:-3]
        base = stem_.rsplit("/", 1)[-1]
        links.append(rng.choice([f"[[{base}]]", f"[[{stem_}]]", f"[x]({target})", f"[[{stem_.upper()}|y]]", "[[no]]"]))
    words = " ".join(rng.choices(NAMES + ["files", "linking", "认证令牌", "hopping"], k=rng.randint(1, 20)))
    heading = f"## {rng.choice(NAMES)} {i}\n" if rng.random() < 0.5 else ""
    if rng.random() < 0.3:  # headings the exact-heading tier keeps: twice, with an anchor, in other case
        name = rng.choice(NAMES)
        heading += f"### {name.upper()} {{#{name}}}\n## {name}\n"
    fence = "```\n[[alpha]] in code\n```\n" if rng.random() < 0.2 else ""
    head = f"---\ntitle: {rng.choice(NAMES)} {i}\ntags: [{rng.choice(NAMES)}]\n---\n"
    return f"{head}{heading}{words}\n{fence}{' '.join(links)}\n"


def make_vault(vault: Path, rng: random.Random, count: int) -> list[str]:
    ids = [f"{rng.choice(FOLDERS)}{rng.choice(NAMES)}-{i % 37}.md" for i in range(count)]
    ids = list(dict.fromkeys(ids))
    for i, note_id in enumerate(ids):
        write_file(vault / note_id, note_text(rng, i, ids))
    return ids


def index_dump(cache: Path) -> dict[str, Any]:
    """What an index holds, by note id (rowids and racy digests are the build's own business)."""
    found = list(cache.rglob(INDEX_FILE))
    assert len(found) == 1, found
    conn = sqlite3.connect(f"file:{found[0]}?mode=ro", uri=True)
    try:
        notes = {
            row[0]: row[1:]
            for row in conn.execute(
                "SELECT id, folder, key, name_key, rkey, mtime_ns, size, problem, title, title_key, tags, created, "
                "frontmatter, body_at, search FROM notes"
            )
        }
        links = sorted(
            conn.execute(
                "SELECT n.id, l.seq, l.target, l.tkey, l.nkey, l.resolved FROM links l JOIN notes n ON n.rowid = l.src"
            )
        )
        tags = sorted(conn.execute("SELECT n.id, t.tag FROM note_tags t JOIN notes n ON n.rowid = t.note"))
        aliases = sorted(conn.execute("SELECT n.id, a.key FROM note_aliases a JOIN notes n ON n.rowid = a.note"))
        search = {
            row[0]: row[1:]
            for row in conn.execute(
                "SELECT n.id, s.head, s.headings, s.links, s.body FROM search_fts s JOIN notes n ON n.rowid = s.rowid"
            )
        }
        headings = sorted(conn.execute("SELECT n.id, h.key FROM note_headings h JOIN notes n ON n.rowid = h.note"))
        short = sorted(
            conn.execute("SELECT n.id, s.head, s.headings FROM search_heads s JOIN notes n ON n.rowid = s.rowid")
        )
        assert short == sorted((note_id, *fields[:2]) for note_id, fields in search.items())
        meta = sorted(key for (key,) in conn.execute("SELECT key FROM meta") if not key.startswith("snapshot"))
        return {
            "notes": notes,
            "links": links,
            "tags": tags,
            "aliases": aliases,
            "search": search,
            "headings": headings,
            "short": short,
            "meta": meta,
        }
    finally:
        conn.close()


def run_amem(tmp_path: Path, vault: Path, cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "AMEM_VAULT": str(vault)}
    program = str(amem_bin(tmp_path / "bin") / "amem")
    done = subprocess.run([program, *args], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return done


def kill_cold_build(
    tmp_path: Path, vault: Path, cache: Path, probe_sql: str, ready: Callable[[tuple[Any, ...]], bool]
) -> tuple[Any, ...]:
    """Start a cold build (`amem index` into the empty `cache`), read its index with `probe_sql` until
    `ready` says so of the row, and SIGKILL it then; that row."""
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "AMEM_VAULT": str(vault)}
    program = str(amem_bin(tmp_path / "bin") / "amem")
    proc = subprocess.Popen([program, "index"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    row: tuple[Any, ...] | None = None
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            found = list(cache.rglob(INDEX_FILE))
            if found:
                try:
                    probe = sqlite3.connect(f"file:{found[0]}?mode=ro", uri=True, timeout=1)
                    row = probe.execute(probe_sql).fetchone()
                    probe.close()
                except sqlite3.Error:
                    row = None  # not made yet, or being made
                if row is not None and ready(row):
                    return row
            time.sleep(0.005)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    raise AssertionError(f"the build ended (or took two minutes) before it could be killed there: {row}")


def test_a_cold_build_equals_the_index_built_a_few_notes_at_a_time(vault: Path, tmp_path: Path) -> None:
    rng = random.Random(20261202)
    ids = make_vault(vault, rng, 330)
    # Notes that cannot be indexed, among the link targets: a cold build's resolver counted on them.
    for note_id in rng.sample(ids, 12):
        (vault / note_id).write_bytes(b"\xff\xfe not UTF-8 [[alpha-1]]")
    steps = tmp_path / "steps"
    hidden = tmp_path / "hidden"
    shutil.move(vault, hidden)
    vault.mkdir()
    # Built a few notes at a time (each refresh below the bulk threshold), in another order than a scan's.
    for start in range(0, len(ids), 60):
        for note_id in ids[start : start + 60]:
            (vault / note_id).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(hidden / note_id, vault / note_id)
        run_amem(tmp_path, vault, steps, "index")
    cold = tmp_path / "cold"
    built = json.loads(run_amem(tmp_path, vault, cold, "index").stdout)
    assert built["built"] is True and built["refreshed"] == len(ids)
    assert index_dump(cold) == index_dump(steps)
    for query in ["alpha", "用户认证", "café linking", "zeta token"]:
        assert (
            run_amem(tmp_path, vault, cold, "search", query).stdout
            == run_amem(tmp_path, vault, steps, "search", query).stdout
        )


def test_a_cold_build_killed_half_way_is_finished_by_the_next_command_as_a_fresh_build_would_be(
    vault: Path, tmp_path: Path
) -> None:
    rng = random.Random(7)
    ids = make_vault(vault, rng, 330)
    for i in range(2600):  # enough notes for the kill to land between two batches of the first pass
        write_file(vault / f"bulk/n{i}.md", f"# bulk {i}\nsome [[{rng.choice(ids)[:-3]}]] and [[n{(i * 7) % 2600}]]\n")
    cache = tmp_path / "killed"
    (done,) = kill_cold_build(tmp_path, vault, cache, "SELECT count(*) FROM notes", lambda row: row[0] >= 400)
    total = len(ids) + 2600
    assert 400 <= done < total, done  # killed in the first pass, with links resolved to notes not stored yet
    # Before the next command: notes the killed build counted on are gone or no longer readable.
    stored = set(index_dump(cache)["notes"])
    every = ids + [f"bulk/n{i}.md" for i in range(2600)]  # each one a link target
    later = sorted(i for i in every if i not in stored)
    assert len(later) >= 10
    for note_id in later[:5]:
        (vault / note_id).unlink()
    for note_id in later[5:10]:
        (vault / note_id).write_bytes(b"\xff not UTF-8")
    run_amem(tmp_path, vault, cache, "search", "alpha")
    fresh = tmp_path / "fresh"
    run_amem(tmp_path, vault, fresh, "index")
    assert index_dump(cache) == index_dump(fresh)


def test_a_cold_build_killed_in_its_second_pass_is_finished_by_the_next_command_as_a_fresh_build_would_be(
    vault: Path, tmp_path: Path
) -> None:
    """The second pass writes the search rows a few thousand a transaction: killed after one of them, the
    next command writes the rest (reading those notes again) and the index equals a fresh build's."""
    from amem.index.batch import COLD_SEARCH_BATCH

    rng = random.Random(11)
    ids = make_vault(vault, rng, 200)
    total = COLD_SEARCH_BATCH * 2 + 200  # three transactions of the second pass
    for i in range(total - len(ids)):
        write_file(vault / f"bulk/n{i}.md", f"# bulk {i}\nsome [[{rng.choice(ids)[:-3]}]] and [[n{(i * 7) % 900}]]\n")
    cache = tmp_path / "killed"
    written, left = kill_cold_build(
        tmp_path,
        vault,
        cache,
        "SELECT total(search = 0), total(search != 0) FROM notes",
        lambda row: row[0] >= COLD_SEARCH_BATCH and row[1] > 0,
    )
    assert written >= COLD_SEARCH_BATCH and left, (written, left)  # a transaction of search rows in, others not

    run_amem(tmp_path, vault, cache, "search", "bulk")
    fresh = tmp_path / "fresh"
    run_amem(tmp_path, vault, fresh, "index")
    assert index_dump(cache) == index_dump(fresh)


# --- the cold build's resolver -----------------------------------------------------------------------

note_ids = st.lists(
    st.builds(
        lambda folder, name, ext: f"{folder}{name}{ext}",
        st.sampled_from(["", "a/", "A/", "a/b/", "c/a/", "x/y/z/"]),
        st.sampled_from(["note", "Note", "NOTE", "café", "cafe\u0301", "用户", "n.v2"]),
        st.sampled_from([".md", ".MD", ".markdown"]),
    ),
    max_size=30,
    unique=True,
)


@settings(max_examples=200, deadline=None)
@given(note_ids, st.data())
def test_the_compact_resolver_resolves_as_the_link_resolver_does(ids: list[str], data: st.DataObject) -> None:
    extensions = (".md", ".markdown")
    full, compact = LinkResolver(ids, extensions), CompactResolver(ids, extensions)
    gone = data.draw(st.lists(st.sampled_from(ids), unique=True) if ids else st.just([]))
    for note_id in gone:
        full.remove(note_id)
        compact.remove(note_id)
    targets = [t for i in ids for t in (i, i.rsplit(".", 1)[0], i.rsplit("/", 1)[-1], i.upper(), f"b/{i}")]
    for target in targets + ["nowhere", "a/note", "z/note.md"]:
        assert compact.ranked(target) == full.ranked(target), target
        assert compact.ranked_path(target) == full.ranked_path(target), target


# --- the link census ---------------------------------------------------------------------------------

#: Pieces of Markdown around links: embeds and their lookalikes, Markdown links (pointed, to URLs),
#: fences, indented code, inline code, pipes and fragments.
LINK_PIECES = ["[[", "]]", "![[", "!", "[", "]", "(", ")", "](", "a", "b.md", "c d", "|x", "#h", "^b", "`"]
LINK_PIECES += ["```\n", "~~~\n", "\n", "\n\n", "    ", "\t", " ", "é", "<a b.md>", "http://x", "[[a]]", "[x](a.md)"]


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(LINK_PIECES), max_size=50).map("".join))
def test_the_link_census_counts_the_links_that_the_link_spans_find(body: str) -> None:
    census = link_census(None, body, (".md",), limit=None)
    links = extract_links(body, (".md",))
    assert census.listed == links
    assert census.total == len(links)
    assert census.distinct == list(dict.fromkeys(links))
    written = Counter(links)
    assert list(census.counts) == [written[link] for link in census.distinct]


# --- one read of each note, and the worker that reads ahead ------------------------------------------


def test_a_cold_build_reads_each_note_once(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from amem.config import load_config
    from amem.index.index import VaultIndex
    from amem.notes.ids import open_regular as real

    ids = make_vault(vault, random.Random(3), 400)
    opened: Counter[str] = Counter()

    def counting(path: str) -> Any:
        opened[os.path.relpath(path, vault)] += 1
        return real(path)

    # Every way the index opens a note (the first pass, and the second pass's reading again).
    monkeypatch.setattr("amem.index.note_reader.open_regular", counting)
    monkeypatch.setattr("amem.index.batch.open_regular", counting)
    index = VaultIndex(load_config())
    try:
        assert index.refresh().added == len(ids)
    finally:
        index.close()
    assert set(opened) == set(ids)
    assert set(opened.values()) == {1}, opened.most_common(3)


def big_vault(vault: Path, count: int) -> list[str]:
    """A vault of more notes than a cold build reads in a worker process, each a link target."""
    rng = random.Random(11)
    ids = make_vault(vault, rng, 330)
    for i in range(count):
        write_file(vault / f"bulk/n{i}.md", f"# bulk {i}\nsome [[{rng.choice(ids)[:-3]}]] and [[n{(i * 7) % count}]]\n")
    return ids + [f"bulk/n{i}.md" for i in range(count)]


def worker_of(pid: int, deadline: float) -> int | None:
    """The pid of the note-reading worker process that process `pid` started, once it runs."""
    while time.monotonic() < deadline:
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid and b"amem.index.note_reader" in cmdline:
                return int(entry)
        time.sleep(0.005)
    return None


def stored_notes(cache: Path) -> int:
    found = list(cache.rglob(INDEX_FILE))
    if not found:
        return 0
    try:
        probe = sqlite3.connect(f"file:{found[0]}?mode=ro", uri=True, timeout=1)
        try:
            return int(probe.execute("SELECT count(*) FROM notes").fetchone()[0])
        finally:
            probe.close()
    except sqlite3.Error:
        return 0


def rowids(cache: Path) -> list[tuple[int, str]]:
    found = list(cache.rglob(INDEX_FILE))
    conn = sqlite3.connect(f"file:{found[0]}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT rowid, id FROM notes ORDER BY rowid").fetchall()
    finally:
        conn.close()


@pytest.mark.parametrize("pattern", ["worker at hand", "worker never at hand", "worker at hand one time in three"])
def test_a_cold_build_with_its_worker_equals_one_without_it_whichever_process_reads_which_notes(
    vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pattern: str
) -> None:
    from amem.config import load_config
    from amem.index import batch, note_reader
    from amem.index.index import VaultIndex
    from amem.index.note_reader import WorkerReads

    every = big_vault(vault, 2400)
    # Link targets that cannot be indexed, in the batches read from the end as well as from the start.
    for note_id in every[::97]:
        (vault / note_id).write_bytes(b"\xff\xfe not UTF-8 [[alpha-1]]")
    answers = {
        "worker at hand": [True],
        "worker never at hand": [False],
        "worker at hand one time in three": [True, False, False],
    }[pattern]
    asked = Counter[bool]()
    read_here = Counter[str]()

    def ready(self: WorkerReads) -> bool:
        answer = answers[sum(asked.values()) % len(answers)]
        asked[answer] += 1
        return answer

    real_read = note_reader.read_note

    def counting(how: Any, note_id: str, stat: tuple[int, int]) -> Any:
        read_here[note_id] += 1
        return real_read(how, note_id, stat)

    def build(cache: Path, worker_from: int) -> None:
        monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
        monkeypatch.setattr(batch, "WORKER_FROM", worker_from)
        index = VaultIndex(load_config())
        try:
            assert index.refresh().added == len(every)
        finally:
            index.close()

    worker_from = batch.WORKER_FROM
    build(tmp_path / "alone", 10**9)
    monkeypatch.setattr(WorkerReads, "ready", ready)
    monkeypatch.setattr(batch, "read_note", counting)
    build(tmp_path / "with-worker", worker_from)
    assert index_dump(tmp_path / "with-worker") == index_dump(tmp_path / "alone")
    assert rowids(tmp_path / "with-worker") == rowids(tmp_path / "alone")  # search ranks ties by rowid
    assert set(read_here.values()) <= {1}  # none read twice here
    if pattern == "worker at hand":
        assert not read_here
    elif pattern == "worker never at hand":
        assert len(read_here) > len(every) // 2  # it reads from the end as the worker reads from the start
    else:
        assert 0 < len(read_here) < len(every)


@pytest.mark.parametrize("when", ["at its start", "half way"])
def test_a_cold_build_whose_worker_is_killed_carries_on_and_equals_a_build_without_it(
    vault: Path, tmp_path: Path, when: str
) -> None:
    every = big_vault(vault, 2400)
    cache = tmp_path / "killed"
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "AMEM_VAULT": str(vault)}
    program = str(amem_bin(tmp_path / "bin") / "amem")
    proc = subprocess.Popen([program, "index"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    worker = worker_of(proc.pid, deadline)
    assert worker is not None, "the cold build started no worker"
    if when == "half way":
        while time.monotonic() < deadline and stored_notes(cache) < 400 and proc.poll() is None:
            time.sleep(0.01)
        assert 400 <= stored_notes(cache) < len(every)  # the worker is held back by the pipe: still there
    os.kill(worker, signal.SIGKILL)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    assert json.loads(out)["refreshed"] == len(every)
    fresh = tmp_path / "fresh"
    run_amem(tmp_path, vault, fresh, "index")
    assert index_dump(cache) == index_dump(fresh)
    assert "complete" in index_dump(cache)["meta"]


def process_state(pid: int) -> str | None:
    """The state letter of process `pid` (`Z`: exited, not yet reaped), None when there is none."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def test_a_cold_build_killed_with_its_worker_running_leaves_no_worker_behind(vault: Path, tmp_path: Path) -> None:
    big_vault(vault, 2400)
    cache = tmp_path / "killed"
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "AMEM_VAULT": str(vault)}
    program = str(amem_bin(tmp_path / "bin") / "amem")
    proc = subprocess.Popen([program, "index"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    worker = worker_of(proc.pid, time.monotonic() + 60)
    assert worker is not None, "the cold build started no worker"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process_state(worker) not in (None, "Z"):
        time.sleep(0.01)
    assert process_state(worker) in (None, "Z"), "the worker runs on without its build"  # gone, or a zombie
    fresh = tmp_path / "fresh"
    run_amem(tmp_path, vault, cache, "index")
    run_amem(tmp_path, vault, fresh, "index")
    assert index_dump(cache) == index_dump(fresh)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.text(st.characters(blacklist_characters="\0", blacklist_categories=["Cs"]), min_size=1)
            | st.sampled_from(["caf\udce9.md", "a/\udcff b.md"]),  # names that are not UTF-8, as os.scandir gives them
            st.tuples(st.integers(0, 2**62), st.integers(0, 2**40)),
        ),
        max_size=250,
    )
)
def test_the_notes_a_worker_receives_packed_are_the_notes_given(notes: list[tuple[str, tuple[int, int]]]) -> None:
    from amem.index.note_reader import CHUNK, pack, unpacked

    chunks = list(unpacked(*pack(notes)))
    assert [note for chunk in chunks for note in chunk] == notes
    assert all(len(chunk) == CHUNK for chunk in chunks[:-1])


# --- the links of a cold build, indexed once ---------------------------------------------------------


def schema_of(conn: sqlite3.Connection) -> list[tuple[str, str, str, str]]:
    return conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name").fetchall()


def test_a_cold_build_stores_its_links_unindexed_and_indexes_them_once_with_the_schemas_own_indexes(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from amem.config import load_config
    from amem.index import fts
    from amem.index.batch import BATCH, _Batch
    from amem.index.index import VaultIndex
    from amem.index.schema import TABLES, statements

    ids = make_vault(vault, random.Random(5), 1300)
    batches = -(-len(ids) // BATCH)
    assert batches >= 2
    seen: list[int] = []
    real = _Batch._store_links

    def counting(self: _Batch, *args: Any) -> Any:
        seen.append(self.conn.execute("SELECT count(*) FROM sqlite_master WHERE name LIKE 'links_%'").fetchone()[0])
        return real(self, *args)

    monkeypatch.setattr(_Batch, "_store_links", counting)
    index = VaultIndex(load_config())
    try:
        assert index.refresh().added == len(ids)
        built = schema_of(index.conn)
        links = index.conn.execute("SELECT count(*) FROM links").fetchone()[0]
    finally:
        index.close()
    assert links > len(ids) and seen == [0] * batches  # each batch's links stored with no index to keep
    # The indexes it made at its end are the schema's, as an index created empty holds them.
    fresh = sqlite3.connect(":memory:")
    for statement in statements(TABLES + fts.SCHEMA):
        fresh.execute(statement)
    assert built == schema_of(fresh)
    assert [name for _, name, _, _ in built if name.startswith("links_")] == [
        "links_nkey",
        "links_resolved",
        "links_src",
        "links_target",
        "links_tkey",
    ]
    # A refresh that is no cold build keeps them as they are.
    write_file(vault / "new.md", "# New\n\n[[alpha-1]] and [[nowhere]]\n")
    seen.clear()
    index = VaultIndex(load_config())
    try:
        assert index.refresh().added == 1
        assert schema_of(index.conn) == built
    finally:
        index.close()
    assert seen == [5]


def test_a_cold_build_stopped_with_its_links_unindexed_is_taken_as_current_and_finished_with_them(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from amem.config import load_config
    from amem.index.batch import _Batch
    from amem.index.index import VaultIndex

    make_vault(vault, random.Random(6), 1300)
    real = _Batch.write
    calls: list[int] = []

    def stopping(self: _Batch, batch: list[str]) -> None:
        calls.append(len(batch))
        if len(calls) == 2:
            raise KeyboardInterrupt  # as Ctrl-C in its second batch
        real(self, batch)

    monkeypatch.setattr(_Batch, "write", stopping)
    index = VaultIndex(load_config())
    with pytest.raises(KeyboardInterrupt):
        index.refresh()
    index.close()
    monkeypatch.setattr(_Batch, "write", real)
    index = VaultIndex(load_config())
    try:
        conn = index.conn  # opened: not thrown away for the links indexes it lacks
        assert conn.execute("SELECT count(*) FROM notes").fetchone()[0] == calls[0]
        assert conn.execute("SELECT count(*) FROM sqlite_master WHERE name LIKE 'links_%'").fetchone()[0] == 0
        index.refresh()
        finished = schema_of(conn)
    finally:
        index.close()
    cache = Path(os.environ["XDG_CACHE_HOME"])
    finished_dump = index_dump(cache)
    shutil.rmtree(cache)
    index = VaultIndex(load_config())
    try:
        index.refresh()
        assert schema_of(index.conn) == finished
    finally:
        index.close()
    assert index_dump(cache) == finished_dump


def test_a_cold_build_of_several_batches_resolves_its_links_as_if_the_unreadable_notes_were_not_there(
    vault: Path,
) -> None:
    from amem.config import load_config
    from amem.index.batch import BATCH
    from amem.index.index import VaultIndex
    from amem.notes.links import resolve_stored

    rng = random.Random(9)
    ids = make_vault(vault, rng, 1300)
    assert len(ids) > 2 * BATCH
    unreadable = set(rng.sample(ids, 30))  # link targets, found unreadable batch after batch
    for note_id in unreadable:
        (vault / note_id).write_bytes(b"\xff\xfe not UTF-8 [[alpha-1]]")
    index = VaultIndex(load_config())
    try:
        index.refresh()
        stored = index.conn.execute("SELECT DISTINCT target, resolved FROM links").fetchall()
    finally:
        index.close()
    resolver = LinkResolver([i for i in ids if i not in unreadable], (".md",))
    assert len(stored) > 100
    assert {target: resolved for target, resolved in stored} == {
        target: resolve_stored(resolver, target) for target, _ in stored
    }
