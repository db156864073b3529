"""amem read: note record, linked notes to depth with cycles, backlinks, modifiedExternally."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from amem.config import Config
from amem.errors import InvalidId, NotFound
from amem.notes.parse import version_of
from amem.ops.read import read_note
from amem.ops.write import write_note
from amem.report import CollectingReporter
from tests.conftest import write_file


@pytest.fixture
def linked(config: Config) -> Config:
    v = config.vault_root
    write_file(v / "a.md", "---\ntitle: Alpha\ntags: [x]\n---\nSee [[b]] and [[sub/c|C]] and [[missing]].\n")
    write_file(v / "b.md", "# Bravo\nBack to [[a#Top]]. ```[[not-a-link]]```\n")
    write_file(v / "sub/c.md", "Charlie goes to [[d]]\n")
    write_file(v / "d.md", "Delta loops to [[sub/c]] and [[a]]\n")
    return config


def test_read_record(linked: Config) -> None:
    note = read_note(linked, "a")
    assert note["id"] == "a.md"
    assert note["title"] == "Alpha"
    assert note["frontmatter"] == {"title": "Alpha", "tags": ["x"]}
    assert note["body"].startswith("See [[b]]")
    assert [(x["target"], x["alias"], x["resolved"]) for x in note["links"]] == [
        ("b", None, "b.md"),
        ("sub/c", "C", "sub/c.md"),
        ("missing", None, None),
    ]
    assert note["version"] == version_of((linked.vault_root / "a.md").read_bytes())
    assert note["backlinks"] == ["b.md", "d.md"]
    assert note["mtime"][:4].isdigit() and note["mtime"][-6] in "+-"
    assert note["modifiedExternally"] is False


def test_linked_notes_to_depth_one_by_default(linked: Config) -> None:
    note = read_note(linked, "a")
    assert [n["id"] for n in note["linkedNotes"]] == ["b.md", "sub/c.md"]
    assert all(n["linkedNotes"] == [] for n in note["linkedNotes"])
    assert set(note["linkedNotes"][0]) == {
        "id",
        "title",
        "frontmatter",
        "body",
        "links",
        "linksTruncated",
        "version",
        "linkedNotes",
    }


def test_linked_notes_deeper_and_cycles_stop(linked: Config) -> None:
    note = read_note(linked, "a", depth=5)
    c = note["linkedNotes"][1]
    assert c["id"] == "sub/c.md"
    d = c["linkedNotes"][0]
    assert d["id"] == "d.md"
    assert d["linkedNotes"] == []  # d links back to sub/c and a: both already in the tree
    b = note["linkedNotes"][0]
    assert b["linkedNotes"] == []  # b links back to a


def test_depth_zero_follows_nothing(linked: Config) -> None:
    assert read_note(linked, "a", depth=0)["linkedNotes"] == []


def test_missing_note_is_not_found_without_host_path(config: Config) -> None:
    with pytest.raises(NotFound) as info:
        read_note(config, "x")
    assert info.value.message == 'cannot read note "x.md": no such note'
    assert not config.vault_root.exists()


def test_read_of_excluded_note_still_works(config: Config) -> None:
    write_file(config.vault_root / "archive/old.md", "archived [[a]]")
    write_file(config.vault_root / "a.md", "alpha")
    assert read_note(config, "archive/old")["body"] == "archived [[a]]"
    assert read_note(config, "a")["backlinks"] == []  # archived notes are not indexed


def test_read_through_symlink_to_outside_is_refused(config: Config, tmp_path: Path) -> None:
    secret = write_file(tmp_path / "secret.md", "top secret")
    config.vault_root.mkdir()
    os.symlink(secret, config.vault_root / "s.md")
    with pytest.raises(InvalidId):
        read_note(config, "s")


def test_modified_externally(config: Config) -> None:
    write_note(config, "n", "by amem")
    assert read_note(config, "n")["modifiedExternally"] is False
    assert read_note(config, "n")["modifiedExternally"] is False
    with open(config.vault_root / "n.md", "a") as handle:
        handle.write("edited in another editor\n")
    assert read_note(config, "n")["modifiedExternally"] is True
    assert read_note(config, "n")["modifiedExternally"] is False  # amem has seen it now
    write_note(config, "n", "amem again")
    assert read_note(config, "n")["modifiedExternally"] is False


def test_first_read_of_a_note_amem_never_saw_is_not_external(config: Config) -> None:
    write_file(config.vault_root / "n.md", "made elsewhere")
    assert read_note(config, "n")["modifiedExternally"] is False


def test_malformed_frontmatter_reads_as_body_with_warning(config: Config, amem: Any) -> None:
    write_file(config.vault_root / "m.md", "---\nk: [\n---\nbody")
    reporter = CollectingReporter()
    note = read_note(config, "m", reporter=reporter)
    assert note["frontmatter"] == {} and note["body"] == "---\nk: [\n---\nbody"
    assert any("malformed frontmatter" in warning for warning in reporter.warnings)
    assert "amem: warning: " in (err := amem("read", "m").stderr) and "malformed frontmatter" in err


def test_backlinks_follow_creates_and_deletes(config: Config) -> None:
    write_file(config.vault_root / "t.md", "target")
    assert read_note(config, "t")["backlinks"] == []
    write_file(config.vault_root / "x/src.md", "to [[t]]")
    assert read_note(config, "t")["backlinks"] == ["x/src.md"]
    # a closer note named like the target takes over the resolution
    write_file(config.vault_root / "x/t.md", "closer")
    assert read_note(config, "t")["backlinks"] == ["x/src.md"]  # exact id `t` still wins over basename
    (config.vault_root / "x/src.md").unlink()
    assert read_note(config, "t")["backlinks"] == []


def test_resolution_changes_when_a_better_match_appears(config: Config) -> None:
    write_file(config.vault_root / "deep/down/foo.md", "deep")
    write_file(config.vault_root / "src.md", "[[foo]]")
    assert read_note(config, "src")["links"][0]["resolved"] == "deep/down/foo.md"
    write_file(config.vault_root / "foo.md", "top")
    assert read_note(config, "src")["links"][0]["resolved"] == "foo.md"
    assert read_note(config, "foo")["backlinks"] == ["src.md"]
    assert read_note(config, "deep/down/foo")["backlinks"] == []
    (config.vault_root / "foo.md").unlink()
    assert read_note(config, "deep/down/foo")["backlinks"] == ["src.md"]


def test_non_utf8_note_reads_with_replacement(config: Config, amem: Any) -> None:
    write_file(config.vault_root / "bin.md", b"caf\xe9")
    reporter = CollectingReporter()
    assert read_note(config, "bin", reporter=reporter)["body"] == "caf\ufffd"
    assert any("not valid UTF-8" in warning for warning in reporter.warnings)
    assert "not valid UTF-8" in amem("read", "bin").stderr


def test_symlink_loop_is_a_clear_error_without_host_path(config: Config) -> None:
    config.vault_root.mkdir()
    os.symlink("loop.md", config.vault_root / "loop.md")
    with pytest.raises(NotFound) as info:
        read_note(config, "loop")
    assert info.value.message == 'cannot read note "loop.md": Too many levels of symbolic links'
