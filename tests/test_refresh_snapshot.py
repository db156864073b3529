"""What a warm refresh stores of every note's (mtime, size): a refresh after k changes writes in proportion to
k, not to the vault; searches, reads and keeper updates mixed over random edits leave the index equal to a
fresh build; a refresh killed at any moment is finished by the next search; the semantic fingerprint
changes with every change of a note."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amem.config import Config
from amem.index.index import VaultIndex
from amem.index.schema import FILE as INDEX_FILE
from amem.semantic.vectors import index_fingerprint
from tests.conftest import write_file
from tests.installed import amem_bin

PAST = time.time() - 3600


def age(vault: Path, when: float = PAST) -> None:
    """Every note's and folder's mtime an hour back, as in a vault nobody touched this second."""
    for path in [vault, *vault.rglob("*")]:
        os.utime(path, (when, when), follow_symlinks=False)


def run(env: dict[str, str], *args: str) -> Any:
    program = str(amem_bin(Path(env["HOME"]) / "bin") / "amem")
    done = subprocess.run([program, *args], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def user_env(root: Path) -> dict[str, str]:
    """A user of their own: home, cache and vault under `root`."""
    home = root / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AMEM_", "XDG_"))}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), XDG_CONFIG_HOME=str(home / ".config"))
    env.update(XDG_STATE_HOME=str(home / ".state"), AMEM_VAULT=str(root / "vault"))
    return env


def index_file(env: dict[str, str]) -> Path:
    (found,) = Path(env["XDG_CACHE_HOME"]).glob(f"amem/vaults/*/{INDEX_FILE}")
    return found


def page_images(path: Path) -> list[bytes]:
    """The database's pages as they are on disk (amem's last connection has checkpointed its WAL)."""
    assert not Path(f"{path}-wal").exists() or Path(f"{path}-wal").stat().st_size == 0
    data = path.read_bytes()
    size = int.from_bytes(data[16:18], "big") or 65536
    return [data[i : i + size] for i in range(0, len(data), size)]


def pages_written_by_one_rewrite(root: Path, notes: int) -> int:
    """The pages of the index a search changes after one note of a warm vault of `notes` notes changed."""
    env = user_env(root)
    vault = Path(env["AMEM_VAULT"])
    for i in range(notes):
        write_file(vault / f"f{i % 20}/note-{i}.md", f"# note {i}\nalpha beta {i}\n")
    age(vault)
    run(env, "search", "alpha")  # the build
    run(env, "search", "alpha")  # warm
    before = page_images(index_file(env))
    note = vault / "f3/note-3.md"
    note.write_text("# note 3\nalpha beta gamma, rewritten in place\n", encoding="utf-8")
    os.utime(note, (PAST + 60, PAST + 60))  # old enough that its (mtime, size) is trusted
    assert run(env, "search", "gamma")["hits"][0]["id"] == "f3/note-3.md"
    after = page_images(index_file(env))
    return sum(1 for i, page in enumerate(after) if i >= len(before) or before[i] != page)


def test_a_search_after_one_rewrite_writes_as_much_in_a_big_vault_as_in_a_small_one(tmp_path: Path) -> None:
    small = pages_written_by_one_rewrite(tmp_path / "small", 300)
    big = pages_written_by_one_rewrite(tmp_path / "big", 4000)
    # The stored (mtime, size) of 4,000 notes takes some 40 pages: rewritten whole, the big vault's count
    # would pass the small one's by as many. A deeper B-tree costs a page or two more.
    assert big <= small + 6, (small, big)


# --- mixed refreshes equal a fresh build -------------------------------------------------------------------


def rows(index: VaultIndex) -> tuple[object, ...]:
    conn = index.conn
    notes = conn.execute("SELECT id, mtime_ns, size, title, frontmatter, problem FROM notes ORDER BY id").fetchall()
    links = conn.execute(
        "SELECT n.id, l.seq, l.target, l.resolved FROM links l JOIN notes n ON n.rowid = l.src ORDER BY n.id, l.seq"
    ).fetchall()
    terms = conn.execute("SELECT rowid, head, body FROM search_fts ORDER BY rowid").fetchall()
    by_rowid = dict(conn.execute("SELECT rowid, id FROM notes"))
    return tuple(notes), tuple(links), tuple(sorted((by_rowid.get(r), h, b) for r, h, b in terms))


def fresh_rows(config: Config, tmp_path: Path) -> tuple[object, ...]:
    other = VaultIndex(config)
    other.path = tmp_path / f"fresh-{random.random()}.sqlite"
    other.refresh()
    try:
        return rows(other)
    finally:
        other.close()


def edit(rng: random.Random, vault: Path, names: list[str], step: int) -> tuple[str, str]:
    """One random change, as users and editors make them; returns (action, note)."""
    present = sorted(p.relative_to(vault).as_posix() for p in vault.rglob("*.md"))
    action = rng.choice(["create", "rewrite", "rewrite", "replace", "delete", "rename"]) if present else "create"
    note = rng.choice(present) if present else rng.choice(names)
    path = vault / note
    if action == "create":
        note = rng.choice(names)
        write_file(vault / note, f"note {step} alpha [[{rng.choice(names)[:-3].rsplit('/', 1)[-1]}]]\n")
    elif action == "rewrite":  # in place: the folder's mtime does not move
        path.write_text(path.read_text() + f"alpha {step}\n")
    elif action == "replace":  # a new file renamed over it, as amem and most editors save
        tmp = path.with_name(f".{path.name}.new")
        tmp.write_text(f"replaced {step} beta\n")
        os.replace(tmp, path)
    elif action == "delete":
        path.unlink()
    else:
        note = rng.choice([name for name in names if name != note])
        (vault / note).parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, vault / note)
    # Old enough that (mtime, size) is trusted, each step a second later: the racy digests are another test's.
    when = PAST + step
    for touched in [vault / note, *(vault / note).parents]:
        if touched.exists() and vault in [touched, *touched.parents]:
            os.utime(touched, (when, when))
    return action, note


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_searches_reads_and_updates_mixed_over_random_edits_equal_a_fresh_build(
    config: Config, tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    v = config.vault_root
    names = [f"{folder}{name}.md" for folder in ("", "a/", "a/b/", "c/") for name in ("x", "y", "z", "w")]
    for name in names[::2]:
        write_file(v / name, f"first {name} alpha\n")
    age(v)
    index = VaultIndex(config)
    index.refresh()
    for step in range(80):
        action, note = edit(rng, v, names, step)
        how = rng.choice(["search", "search", "read", "update"])
        if how == "update":
            index.update([note])
        index.refresh(thorough=how == "search")
        if how == "search":  # a read or an update does not see an in-place rewrite elsewhere; a search does
            assert rows(index) == fresh_rows(config, tmp_path), (step, action, note, how)
    index.refresh()
    assert rows(index) == fresh_rows(config, tmp_path)
    index.close()


def test_a_search_sees_a_rewrite_a_read_missed_after_the_read_stored_other_changes(config: Config) -> None:
    v = config.vault_root
    for name in ("a/one.md", "a/two.md", "b/three.md"):
        write_file(v / name, f"{name} alpha\n")
    age(v)
    index = VaultIndex(config)
    index.refresh()
    (v / "a/one.md").write_text("one rewritten in place, gamma\n")  # a/ keeps its mtime
    os.utime(v / "a/one.md", (PAST + 5, PAST + 5))
    write_file(v / "b/four.md", "four delta\n")  # b/ moves: a read lists it again
    os.utime(v / "b/four.md", (PAST + 6, PAST + 6))
    os.utime(v / "b", (PAST + 6, PAST + 6))
    index.refresh(thorough=False)
    assert "b/four.md" in index.ids()
    assert index.conn.execute("SELECT size FROM notes WHERE id = 'a/one.md'").fetchone()[0] != 30
    index.refresh()
    assert index.conn.execute("SELECT size FROM notes WHERE id = 'a/one.md'").fetchone()[0] == 30
    index.close()


# --- the semantic fingerprint -------------------------------------------------------------------------


def test_the_fingerprint_changes_with_every_change_of_a_note_and_only_then(config: Config) -> None:
    rng = random.Random(5)
    v = config.vault_root
    names = [f"{folder}{name}.md" for folder in ("", "a/", "c/") for name in ("x", "y", "z")]
    for name in names:
        write_file(v / name, f"first {name}\n")
    age(v)
    index = VaultIndex(config)
    index.refresh()
    seen = {index_fingerprint(index.conn)}
    for step in range(40):
        edit(rng, v, names, step + 1)
        index.refresh()
        fingerprint = index_fingerprint(index.conn)
        assert fingerprint is not None and fingerprint not in seen, step
        seen.add(fingerprint)
        index.refresh()  # nothing changed
        assert index_fingerprint(index.conn) == fingerprint, step
    index.close()


# --- a refresh killed at any moment ------------------------------------------------------------------------


def killed_refresh(env: dict[str, str], when: str, changed: int) -> bool:
    """Start `amem search` after `changed` notes changed and SIGKILL it: `mid` once some batches are in but
    the snapshot is not yet stored again, `stored` as soon as the snapshot is stored again (its search
    terms still to write). True when the process was still running then."""
    program = str(amem_bin(Path(env["HOME"]) / "bin") / "amem")
    db = index_file(env)
    probe = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    proc = subprocess.Popen([program, "search", "alpha"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                delta = probe.execute("SELECT count(*) FROM meta WHERE key LIKE 'snapshot-delta-%'").fetchone()[0]
                done = probe.execute("SELECT count(*) FROM notes WHERE title LIKE 'changed%'").fetchone()[0]
            except sqlite3.Error:
                continue
            if (when == "mid" and not delta and 0 < done < changed) or (when == "stored" and delta and done):
                break
            time.sleep(0.005)
    finally:
        running = proc.poll() is None
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        probe.close()
    return running


@pytest.mark.parametrize("when", ["mid", "stored"])
def test_a_search_killed_while_it_refreshes_is_finished_by_the_next_one(tmp_path: Path, when: str) -> None:
    env = user_env(tmp_path)
    vault = Path(env["AMEM_VAULT"])
    total = 2400
    for i in range(total):
        write_file(vault / f"f{i % 9}/n{i}.md", f"# note {i}\nalpha {i} [[n{(i * 7) % total}]]\n")
    age(vault)
    run(env, "search", "alpha")
    rng = random.Random(when)
    changed = sorted(rng.sample(range(total), 1500))
    for i in changed:  # rewritten in place, grown: only a scan of every note sees them
        (vault / f"f{i % 9}/n{i}.md").write_text(f"---\ntitle: changed {i}\n---\nalpha omega {i}\n")
    for i in range(0, total, 97):
        (vault / f"f{i % 9}/n{i}.md").unlink(missing_ok=True)  # and some gone
    age(vault, PAST + 60)
    assert killed_refresh(env, when, len(changed))  # killed while it ran, at that moment
    gone = set(range(0, total, 97))
    expect = sorted(f"f{i % 9}/n{i}.md" for i in changed if i not in gone)
    found = run(env, "search", "omega", "--limit", "5000")
    assert sorted(hit["id"] for hit in found["hits"]) == expect
    assert found["total"] == len(expect)
    assert run(env, "search", "alpha", "--limit", "1")["total"] == total - len(gone)
    conn = sqlite3.connect(index_file(env))
    titles = dict(conn.execute("SELECT id, title FROM notes"))
    stale = [i for i in changed if i not in gone and titles.get(f"f{i % 9}/n{i}.md") != f"changed {i}"]
    ids = {row[0] for row in conn.execute("SELECT id FROM notes")}
    conn.close()
    assert stale == []
    assert ids == {p.relative_to(vault).as_posix() for p in vault.rglob("*.md")}


@pytest.mark.parametrize("changed", [False, True])
def test_a_build_stores_its_scans_digest_only_if_no_note_changed_between_the_scan_and_its_read(
    config: Config, monkeypatch: pytest.MonkeyPatch, changed: bool
) -> None:
    from amem.index import attached, snapshot
    from amem.index import index as index_module
    from amem.index import scan as scan_module

    vault = Path(config.vault_root)
    for i in range(300):  # past the bulk threshold: the build's own resolver, as at any size
        write_file(vault / f"f{i % 7}/note-{i}.md", f"# note {i}\nalpha [[note-{(i * 3) % 300}]]\n")
    age(vault)
    scans: list[Any] = []
    real_scan = scan_module.scan_vault

    def scan_then_edit(config: Config, others: bool = False) -> Any:
        scan = real_scan(config, others)
        scans.append(snapshot.scan_sum(scan))
        if changed:  # after the scan, before the build reads it
            write_file(vault / "f3/note-3.md", "# note 3\nalpha, longer now than when it was scanned\n")
        return scan

    monkeypatch.setattr(index_module, "scan_vault", scan_then_edit)
    monkeypatch.setattr(attached, "scan_vault", scan_then_edit)  # a thorough refresh's
    index = VaultIndex(config)
    try:
        assert index.refresh().added == 300
        stored = snapshot.stored_sum(index.conn)
        assert stored == (None if changed else scans[0])
        assert index.refresh().changed == 0  # what it stored of the edited note is what it read
    finally:
        index.close()


_STATS = st.tuples(st.integers(0, 3), st.integers(0, 3))


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.sampled_from("abcdefgh"), _STATS), st.dictionaries(st.sampled_from("abcdefgh"), _STATS))
def test_the_changed_notes_are_those_new_gone_or_of_another_mtime_or_size(
    files: dict[str, tuple[int, int]], known: dict[str, tuple[int, int]]
) -> None:
    """What a refresh reads again: every note the scan and the stored state disagree on, sorted."""
    from amem.index.snapshot import changed_ids

    expected = sorted(k for k in files.keys() | known.keys() if files.get(k) != known.get(k))
    assert changed_ids(files, known) == expected
