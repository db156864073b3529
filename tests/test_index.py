"""The persistent index: incremental refreshes (quick and thorough) agree with a fresh build."""

from __future__ import annotations

import os
import random
import sqlite3
import time
from pathlib import Path

import pytest

from amem.config import Config
from amem.index.index import VaultIndex
from tests.conftest import write_file

PAST = time.time() - 3600


def age(vault: Path) -> None:
    """Move every note's and folder's mtime an hour back, as in a vault nobody touched this second."""
    for path in [vault, *vault.rglob("*")]:
        os.utime(path, (PAST, PAST), follow_symlinks=False)


def snapshot(index: VaultIndex) -> tuple[object, ...]:
    conn = index.conn
    notes = conn.execute("SELECT id, title, frontmatter, problem FROM notes ORDER BY id").fetchall()
    links = conn.execute(
        "SELECT n.id, l.seq, l.target, l.resolved FROM links l JOIN notes n ON n.rowid = l.src ORDER BY n.id, l.seq"
    ).fetchall()
    return tuple(notes), tuple(links)


def fresh(config: Config, tmp_path: Path) -> tuple[object, ...]:
    other = VaultIndex(config)
    other.path = tmp_path / f"fresh-{random.random()}.sqlite"
    other.refresh()
    try:
        return snapshot(other)
    finally:
        other.close()


def test_quick_refresh_sees_creates_deletes_and_renames_in_old_folders(config: Config) -> None:
    v = config.vault_root
    write_file(v / "a/one.md", "[[two]]")
    write_file(v / "b/two.md", "two")
    age(v)
    index = VaultIndex(config)
    index.refresh(thorough=False)
    assert index.ids() == ["a/one.md", "b/two.md"]
    age(v)
    index.refresh(thorough=False)
    (v / "b/two.md").rename(v / "a/two.md")
    write_file(v / "c/d/three.md", "[[one]]")
    index.refresh(thorough=False)
    assert index.ids() == ["a/one.md", "a/two.md", "c/d/three.md"]
    assert index.backlinks("a/one.md") == ["c/d/three.md"]
    assert index.backlinks("a/two.md") == ["a/one.md"]
    (v / "c/d/three.md").unlink()
    (v / "c/d").rmdir()
    index.refresh(thorough=False)
    assert index.ids() == ["a/one.md", "a/two.md"]


def test_in_place_edit_of_a_recent_note_is_seen_by_the_quick_refresh(config: Config) -> None:
    v = config.vault_root
    path = write_file(v / "n.md", "aaaa")
    index = VaultIndex(config)
    index.refresh(thorough=False)
    stat = path.stat()
    with open(path, "r+") as handle:  # same size, and the same mtime: invisible to (mtime, size)
        handle.write("[[x]]"[:4])
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    write_file(v / "x.md", "x")
    index.refresh(thorough=False)
    assert index.conn.execute("SELECT COUNT(*) FROM links").fetchone()[0] == 0  # "[[x]" is no link
    with open(path, "r+") as handle:
        handle.write("[[x]]")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    index.refresh(thorough=False)
    assert index.backlinks("x.md") == ["n.md"]


def test_thorough_refresh_sees_in_place_edits_in_unchanged_folders(config: Config) -> None:
    v = config.vault_root
    write_file(v / "sub/n.md", "nothing")
    write_file(v / "t.md", "target")
    age(v)
    index = VaultIndex(config)
    index.refresh()
    index.refresh()
    with open(v / "sub/n.md", "w") as handle:  # in place: the folder's mtime does not move
        handle.write("now [[t]]")
    os.utime(v / "sub", (PAST, PAST))
    index.refresh()
    assert index.backlinks("t.md") == ["sub/n.md"]


def test_unreadable_and_non_utf8_notes_are_skipped_and_named_in_the_result_not_on_stderr(
    config: Config, capsys: pytest.CaptureFixture[str]
) -> None:
    write_file(config.vault_root / "bad.md", b"\xff\xfe")
    write_file(config.vault_root / "good.md", "fine")
    index = VaultIndex(config)
    stats = index.refresh()
    assert index.ids() == ["good.md"]
    assert stats.warnings == ["skipped note 'bad.md': it is not UTF-8 text"]
    assert capsys.readouterr().err == ""  # the caller decides whether it matters


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads every file")
def test_a_problem_is_forgotten_once_its_cause_is_gone_even_with_the_same_mtime(config: Config, tmp_path: Path) -> None:
    locked = write_file(config.vault_root / "locked.md", "# Locked\nfindme [[other]]\n")
    write_file(config.vault_root / "other.md", "other")
    age(config.vault_root)
    before = os.stat(locked)
    locked.chmod(0)
    index = VaultIndex(config)
    try:
        assert index.refresh().warnings == ["skipped note 'locked.md': cannot read it (Permission denied)"]
    finally:
        locked.chmod(0o644)
    assert os.stat(locked).st_mtime_ns == before.st_mtime_ns
    assert index.refresh().warnings == []
    assert index.ids() == ["locked.md", "other.md"]
    assert index.backlinks("other.md") == ["locked.md"]
    assert snapshot(index) == fresh(config, tmp_path)


def test_a_non_utf8_note_fixed_in_place_with_the_same_size_and_mtime_is_indexed(config: Config) -> None:
    path = write_file(config.vault_root / "n.md", b"caf\xe9")
    age(config.vault_root)
    before = os.stat(path)
    index = VaultIndex(config)
    assert index.refresh().warnings
    path.write_bytes(b"cafe")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert index.refresh().warnings == []
    assert index.ids() == ["n.md"]


def test_symlinks_to_outside_the_vault_are_never_indexed(config: Config, tmp_path: Path) -> None:
    outside = write_file(tmp_path / "outside" / "secret.md", "secret words")
    write_file(tmp_path / "outside" / "more.md", "more secret words")
    v = config.vault_root
    write_file(v / "inside.md", "inside")
    (v / "leak.md").symlink_to(outside)
    (v / "folder").symlink_to(tmp_path / "outside", target_is_directory=True)
    (v / "alias.md").symlink_to(v / "inside.md")
    index = VaultIndex(config)
    index.refresh()
    assert index.ids() == ["alias.md", "inside.md"]
    index.update(["leak.md", "folder/secret.md"])
    assert index.ids() == ["alias.md", "inside.md"]


def test_temporary_files_of_atomic_writes_are_never_notes(config: Config) -> None:
    v = config.vault_root
    write_file(v / "a.md", "a")
    write_file(v / ".a.md.1f2e.amem-tmp", "half written")
    write_file(v / "b.md.amem-tmp", "half written")
    config = config._replace(extensions=(".md", ".amem-tmp"))
    index = VaultIndex(config)
    index.refresh()
    assert index.ids() == ["a.md"]


def test_hidden_and_excluded_folders(config: Config, monkeypatch: pytest.MonkeyPatch) -> None:
    v = config.vault_root
    for note in (
        "a.md",
        "archive/x.md",
        "deep/archive/y.md",
        ".hidden/h.md",
        ".git/g.md",
        "node_modules/m.md",
        ".obsidian/o.md",
        "notes.txt",
    ):
        write_file(v / note, "x")
    index = VaultIndex(config)
    index.refresh()
    assert index.ids() == ["a.md"]
    index = VaultIndex(config._replace(index_hidden_dirs=True, exclude_dirs=()))
    index.refresh()
    assert index.ids() == [".hidden/h.md", "a.md", "archive/x.md", "deep/archive/y.md"]


@pytest.mark.parametrize(
    "damage",
    [
        "DROP TABLE notes",
        "DROP TABLE seen",
        "DROP TABLE links",
        "DROP TABLE search_fts",
        "DROP TABLE search_heads",
        "DROP INDEX notes_key",
        "DROP TABLE meta; CREATE TABLE meta (k TEXT, v TEXT, extra INTEGER)",
        "ALTER TABLE meta RENAME TO old_meta",
        "DELETE FROM meta",
        "ALTER TABLE notes ADD COLUMN surprise TEXT",
    ],
)
def test_a_damaged_schema_is_detected_and_rebuilt(config: Config, damage: str) -> None:
    import sqlite3

    write_file(config.vault_root / "a.md", "[[b]]")
    write_file(config.vault_root / "b.md", "b")
    index = VaultIndex(config)
    index.refresh()
    index.close()
    conn = sqlite3.connect(index.path)
    conn.executescript(damage)
    conn.close()
    for _ in range(2):  # and it stays repaired
        index = VaultIndex(config)
        index.refresh(thorough=False)
        assert index.backlinks("b.md") == ["a.md"]
        assert index.stats()["notes"] == 2
        index.close()


#: The digest of the schema each SCHEMA_VERSION names (the first 16 hex digits of the SHA-256 of its text).
SCHEMAS = {
    13: "a549c1db51ac9ef9",
    14: "342039add78ddc95",
    15: "cb9e748bf413da98",
    16: "8168540555a8d69e",
    17: "8168540555a8d69e",
}


def test_a_changed_schema_comes_with_a_new_version() -> None:
    """An index whose settings name this version is taken as built by this schema: a schema changed without a
    new version would leave every index built before in place, without what the change added. So the
    schema's text is pinned to its version here, and a change of the one without the other fails."""
    import hashlib

    from amem.index import fts, schema

    digest = hashlib.sha256((schema.TABLES + fts.SCHEMA).encode("utf-8")).hexdigest()[:16]
    assert SCHEMAS.get(schema.SCHEMA_VERSION) == digest, (schema.SCHEMA_VERSION, digest)
    assert max(SCHEMAS) == schema.SCHEMA_VERSION


def test_an_index_of_the_version_before_is_built_again_with_the_short_fields_table(config: Config) -> None:
    """Version 13's index had no `search_heads`: it is built again, and a title's phrase is found."""
    import json

    from amem.index.schema import fingerprint
    from amem.search.query import search

    write_file(config.vault_root / "a.md", "# Alpha Beta\nbody\n")
    write_file(config.vault_root / "b.md", "# B\nalpha and beta\n")
    index = VaultIndex(config)
    index.refresh()
    settings = json.loads(index._settings())
    index.close()
    conn = sqlite3.connect(index.path)
    conn.execute("DROP TABLE search_heads")
    master = conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()
    old = json.dumps([13, *settings[1:]])
    conn.execute("UPDATE meta SET value = ? WHERE key = 'settings'", (old,))
    conn.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (fingerprint(master),))
    conn.commit()
    conn.close()
    result = search(config, "alpha beta")
    assert [hit["id"] for hit in result["hits"]] == ["a.md", "b.md"]
    conn = sqlite3.connect(index.path)
    assert conn.execute("SELECT count(*) FROM search_heads").fetchone() == (2,)
    conn.close()


def test_update_rechecks_exactly_the_named_notes(config: Config, tmp_path: Path) -> None:
    v = config.vault_root
    write_file(v / "a.md", "alpha [[b]]")
    write_file(v / "b.md", "beta")
    write_file(v / "c.md", "gamma")
    age(v)
    index = VaultIndex(config)
    index.refresh()
    write_file(v / "a.md", "alpha changed, no link")
    write_file(v / "new.md", "[[c]]")
    (v / "b.md").unlink()
    write_file(v / "c.md", "gamma changed but not named")
    stats = index.update(["a.md", "b.md", "new.md", "never-existed.md", "../outside.md", ".git/x.md"])
    assert (stats.added, stats.changed, stats.removed) == (1, 1, 1)
    assert index.ids() == ["a.md", "c.md", "new.md"]
    assert index.backlinks("c.md") == ["new.md"]
    index.update(["c.md"])
    assert snapshot(index) == fresh(config, tmp_path)


def test_update_of_an_index_that_had_to_be_started_again_walks_the_vault(config: Config) -> None:
    v = config.vault_root
    for name in ("a", "b", "c"):
        write_file(v / f"{name}.md", f"{name} words")
    index = VaultIndex(config)
    index.refresh()
    index.close()
    with sqlite3.connect(index.path) as conn:
        conn.execute("DROP TABLE links")  # another layout: the next open builds the index from nothing
    index = VaultIndex(config)
    try:
        index.update(["a.md"])
        assert index.ids() == ["a.md", "b.md", "c.md"]
    finally:
        index.close()


def test_stats_counts_notes_terms_and_bytes(config: Config) -> None:
    write_file(config.vault_root / "a.md", "one two three")
    write_file(config.vault_root / "b.md", "three four")
    index = VaultIndex(config)
    index.refresh()
    stats = index.stats()
    assert stats["notes"] == 2 and stats["terms"] >= 5 and stats["bytes"] > 0


def test_resolver_lookups_by_key_return_every_spelling(config: Config) -> None:
    from amem.index.batch import IndexResolver as _IndexResolver
    from amem.notes.links import link_key

    for note_id in ("Internal links.md", "internal LINKS.md", "docs/Internal Links.md", "Cafe\u0301.md"):
        write_file(config.vault_root / note_id, "x")
    index = VaultIndex(config)
    index.refresh()
    resolver = _IndexResolver(index.conn, config.extensions)
    key = link_key("internal links.md")
    assert sorted(resolver.find_exact([key])) == ["Internal links.md", "internal LINKS.md"]
    assert resolver.find_suffix([key]) == ["docs/Internal Links.md"]
    assert sorted(resolver.find_basename([key])) == [
        "Internal links.md",
        "docs/Internal Links.md",
        "internal LINKS.md",
    ]
    assert resolver.find_exact([link_key("Caf\u00e9.md")]) == ["Cafe\u0301.md"]
    # ranking prefers the spelling as written within the tier
    assert resolver.resolve("internal LINKS") == "internal LINKS.md"
    assert resolver.resolve("Internal Links") == "Internal links.md"


def test_corrupt_index_is_rebuilt(config: Config) -> None:
    write_file(config.vault_root / "a.md", "[[b]]")
    write_file(config.vault_root / "b.md", "b")
    index = VaultIndex(config)
    index.refresh()
    index.close()
    index.path.write_bytes(b"this is not a database" * 100)
    for suffix in ("-wal", "-shm"):
        Path(f"{index.path}{suffix}").unlink(missing_ok=True)
    index = VaultIndex(config)
    index.refresh()
    assert index.backlinks("b.md") == ["a.md"]


@pytest.mark.parametrize("thorough", [True, False])
def test_random_edits_leave_the_index_equal_to_a_fresh_build(config: Config, tmp_path: Path, thorough: bool) -> None:
    rng = random.Random(7 if thorough else 8)
    v = config.vault_root
    names = [f"{folder}{name}.md" for folder in ("", "a/", "a/b/", "c/") for name in ("x", "y", "z")]
    index = VaultIndex(config)
    for step in range(60):
        present = sorted(p.relative_to(v).as_posix() for p in v.rglob("*.md")) if v.exists() else []
        action = rng.choice(["create", "edit", "edit", "delete", "rename"]) if present else "create"
        if action == "create":
            created = rng.choice(names)
            write_file(v / created, f"note {step} links [[{rng.choice(names)[:-3].split('/')[-1]}]]")
        elif action == "edit":
            path = v / rng.choice(present)
            text = path.read_text()
            # Same-size edits made by replacing the file, as editors and amem do.
            new = text.replace("x", "y", 1) if "x" in text else text.replace("y", "x", 1)
            tmp = path.with_suffix(".tmp")
            tmp.write_text(new)
            os.replace(tmp, path)
        elif action == "delete":
            (v / rng.choice(present)).unlink()
        else:
            source = v / rng.choice(present)
            target = v / rng.choice(names)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(source, target)
        index.refresh(thorough=thorough)
        assert snapshot(index) == fresh(config, tmp_path), (step, action)


def test_a_locked_index_is_reported_not_discarded(config: Config, monkeypatch: pytest.MonkeyPatch) -> None:
    import sqlite3

    from amem.errors import InternalError

    write_file(config.vault_root / "a.md", "a")
    index = VaultIndex(config)
    index.refresh()
    index.close()
    holder = sqlite3.connect(index.path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another process in the middle of a long write
    write_file(config.vault_root / "b.md", "b")
    real_connect = sqlite3.connect
    monkeypatch.setattr(sqlite3, "connect", lambda *a, **k: real_connect(*a, **{**k, "timeout": 0.2}))
    try:
        with pytest.raises(InternalError, match="locked"):
            VaultIndex(config).refresh()
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert index.path.exists()
    index = VaultIndex(config)
    index.refresh()
    assert index.ids() == ["a.md", "b.md"]


@pytest.mark.parametrize("links", [1, 250])  # queries per link, and the in-memory resolver of a bulk refresh
def test_links_resolve_ignoring_case_and_normalisation(config: Config, links: int) -> None:
    vault = config.vault_root
    write_file(vault / "docs/Internal links.md", "# Internal links\n")
    write_file(vault / "Caf\u00e9.md", "# NFC name\n")
    write_file(vault / "linker.md", "[[internal links]] [[cafe\u0301]]\n" * links)
    index = VaultIndex(config)
    index.refresh()
    assert index.backlinks("docs/Internal links.md") == ["linker.md"]
    assert index.backlinks("Caf\u00e9.md") == ["linker.md"]
    assert index.resolve("DOCS/INTERNAL LINKS") == "docs/Internal links.md"

    # A note spelled exactly as the link is written takes its links over, and gives them back when it goes.
    write_file(vault / "internal links.md", "# exact\n")
    index.refresh()
    assert index.backlinks("internal links.md") == ["linker.md"]
    assert index.backlinks("docs/Internal links.md") == []
    (vault / "internal links.md").unlink()
    index.refresh()
    assert index.backlinks("docs/Internal links.md") == ["linker.md"]
    index.close()
