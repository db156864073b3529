"""amem write: append and overwrite rules, optimistic concurrency, atomicity, symlinks and refusals."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Any

import pytest

from amem.config import Config
from amem.errors import Conflict, InvalidId, IoError, NotFound, UsageError
from amem.notes.parse import parse_note, version_of
from amem.ops import write as write_module
from amem.ops.write import write_note

STAMP = re.compile(r"^## \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}[+-]\d{2}:\d{2}$", re.M)


@pytest.fixture
def config(vault: Path, monkeypatch: pytest.MonkeyPatch) -> Config:
    from amem.config import load_config

    monkeypatch.setenv("AMEM_TZ", "+08:00")
    return load_config()


@pytest.fixture
def frozen_clock(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Control the second amem stamps, to test same-second and next-second appends deterministically."""
    from datetime import datetime, timedelta, timezone

    state = {"now": datetime(2026, 11, 29, 20, 15, 3, tzinfo=timezone(timedelta(hours=8)))}
    monkeypatch.setattr(write_module, "now", lambda tz: state["now"])

    def advance(seconds: int) -> None:
        state["now"] += timedelta(seconds=seconds)

    return advance


def read_text(config: Config, note_id: str) -> str:
    return (config.vault_root / note_id).read_text(encoding="utf-8")


def test_append_to_new_note_creates_vault_and_stamps_created(config: Config, frozen_clock: Any) -> None:
    result = write_note(config, "notes/x", "hello")
    assert result == {
        "id": "notes/x.md",
        "mode": "append",
        "bytes": len(read_text(config, "notes/x.md").encode()),
        "version": version_of((config.vault_root / "notes/x.md").read_bytes()),
        "created": True,
    }
    assert read_text(config, "notes/x.md") == (
        "---\ncreated: 2026-11-29T20:15:03+08:00\n---\n## 2026-11-29T20:15:03+08:00\n\nhello\n"
    )


def test_append_to_existing_note_stamps_updated_and_keeps_frontmatter(config: Config, frozen_clock: Any) -> None:
    path = config.vault_root / "n.md"
    path.parent.mkdir(parents=True)
    path.write_text("---\n# my comment\ntitle: Keep me\ntags: [a, b]\n---\nOld body\n")
    frozen_clock(0)
    result = write_note(config, "n", "more")
    assert result["created"] is False
    text = read_text(config, "n.md")
    assert text == (
        "---\n# my comment\ntitle: Keep me\ntags: [a, b]\nupdated: 2026-11-29T20:15:03+08:00\n---\n"
        "Old body\n\n## 2026-11-29T20:15:03+08:00\n\nmore\n"
    )


def test_two_appends_in_one_second_share_a_heading(config: Config, frozen_clock: Any) -> None:
    write_note(config, "n", "one")
    write_note(config, "n", "two")
    text = read_text(config, "n.md")
    assert len(STAMP.findall(text)) == 1
    assert text.endswith("## 2026-11-29T20:15:03+08:00\n\none\n\ntwo\n")
    frozen_clock(1)
    write_note(config, "n", "three")
    assert len(STAMP.findall(read_text(config, "n.md"))) == 2


def test_twenty_appends_leave_exactly_one_blank_line_between_blocks(config: Config, frozen_clock: Any) -> None:
    for i in range(20):
        frozen_clock(i % 2)
        write_note(config, "n", f"entry {i}\n\n\n")
    text = read_text(config, "n.md")
    assert "\n\n\n" not in text
    assert text.endswith("entry 19\n") and not text.endswith("\n\n")
    body = parse_note(text).body
    blocks = body.split("\n\n")
    assert all(block.strip() for block in blocks)


def test_content_with_its_own_heading_gets_no_timestamp_heading(config: Config, frozen_clock: Any) -> None:
    write_note(config, "n", "first")
    write_note(config, "n", "# Decision\nUse X")
    text = read_text(config, "n.md")
    assert text.endswith("first\n\n# Decision\nUse X\n")
    assert len(STAMP.findall(text)) == 1


def test_append_keeps_crlf_notes_crlf(config: Config, frozen_clock: Any) -> None:
    path = config.vault_root / "w.md"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"---\r\ntitle: W\r\n---\r\nBody\r\n")
    write_note(config, "w", "line")
    data = path.read_bytes()
    assert b"\n" not in data.replace(b"\r\n", b"")
    assert parse_note(data.decode()).frontmatter["title"] == "W"


def test_append_to_malformed_frontmatter_leaves_it_as_written(config: Config, frozen_clock: Any) -> None:
    path = config.vault_root / "bad.md"
    path.parent.mkdir(parents=True)
    path.write_text("---\ntitle: [oops\n---\nBody\n")
    write_note(config, "bad", "more")
    assert read_text(config, "bad.md").startswith("---\ntitle: [oops\n---\nBody\n\n## ")


def test_overwrite_merges_frontmatter_and_stamps_updated(config: Config, frozen_clock: Any) -> None:
    write_note(config, "n", "---\ntags: [keep]\ncreated: 2026-01-01 09:00:00+08:00\n---\nold\n", mode="overwrite")
    frozen_clock(60)
    result = write_note(config, "n", "---\ntitle: New\n---\nnew body\n", mode="overwrite")
    assert result["mode"] == "overwrite" and result["created"] is False
    note = parse_note(read_text(config, "n.md"))
    assert note.frontmatter == {
        "title": "New",
        "tags": ["keep"],
        "created": "2026-01-01T09:00:00+08:00",
        "updated": "2026-11-29T20:16:03+08:00",
    }
    assert note.body == "new body\n"


def test_overwrite_callers_keys_win(config: Config, frozen_clock: Any) -> None:
    write_note(config, "n", "---\ntags: [old]\nstatus: draft\n---\nx", mode="overwrite")
    write_note(config, "n", "---\ntags: [new]\n---\ny", mode="overwrite")
    assert parse_note(read_text(config, "n.md")).frontmatter["tags"] == ["new"]
    assert parse_note(read_text(config, "n.md")).frontmatter["status"] == "draft"


def test_overwrite_of_missing_note_adds_no_lifecycle_keys(config: Config, frozen_clock: Any) -> None:
    write_note(config, "n", "just this", mode="overwrite")
    assert read_text(config, "n.md") == "just this"
    write_note(config, "m", "---\nupdated: 2026-01-01T00:00:00.123456+08:00\nother: x\n---\nbody", mode="overwrite")
    assert parse_note(read_text(config, "m.md")).frontmatter == {"updated": "2026-01-01T00:00:00+08:00", "other": "x"}


def test_unparseable_lifecycle_values_are_kept(config: Config, frozen_clock: Any) -> None:
    write_note(config, "n", "---\ncreated: last tuesday\n---\nx", mode="overwrite")
    write_note(config, "n", "more")
    assert parse_note(read_text(config, "n.md")).frontmatter["created"] == "last tuesday"


def test_overwrite_with_malformed_frontmatter_is_refused(config: Config) -> None:
    write_note(config, "n", "keep", mode="overwrite")
    with pytest.raises(UsageError):
        write_note(config, "n", "---\na: [\n---\nbody", mode="overwrite")
    assert read_text(config, "n.md") == "keep"


def test_stale_base_version_writes_nothing(config: Config) -> None:
    first = write_note(config, "n", "v1")
    write_note(config, "n", "v2", base_version=first["version"])
    before = (config.vault_root / "n.md").read_bytes()
    with pytest.raises(Conflict) as info:
        write_note(config, "n", "v3", base_version=first["version"])
    assert "changed since version" in info.value.message
    assert (config.vault_root / "n.md").read_bytes() == before


def test_base_version_of_missing_note_is_empty_digest(config: Config) -> None:
    write_note(config, "n", "x", base_version=version_of(b""))
    with pytest.raises(Conflict):
        write_note(config, "other", "x", base_version="0" * 40)
    assert not (config.vault_root / "other.md").exists()


def test_write_returns_the_version_for_the_next_write(config: Config) -> None:
    result = write_note(config, "n", "x")
    assert result["version"] == version_of((config.vault_root / "n.md").read_bytes())
    write_note(config, "n", "y", base_version=result["version"])


def test_require_existing_leaves_nothing_behind(config: Config) -> None:
    with pytest.raises(NotFound):
        write_note(config, "deep/new/folder/n", "x", require_existing=True)
    assert not config.vault_root.exists()


def test_permission_bits_survive(config: Config) -> None:
    write_note(config, "n", "x")
    path = config.vault_root / "n.md"
    os.chmod(path, 0o640)
    write_note(config, "n", "y")
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_new_note_honours_umask(config: Config) -> None:
    old = os.umask(0o027)
    try:
        write_note(config, "n", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((config.vault_root / "n.md").stat().st_mode) == 0o640


def test_symlink_inside_vault_is_written_through(config: Config) -> None:
    write_note(config, "real", "base", mode="overwrite")
    os.symlink(config.vault_root / "real.md", config.vault_root / "alias.md")
    write_note(config, "alias", "through the link")
    assert os.path.islink(config.vault_root / "alias.md")
    assert "through the link" in read_text(config, "real.md")


def test_broken_symlink_is_refused(config: Config) -> None:
    config.vault_root.mkdir()
    os.symlink(config.vault_root / "missing.md", config.vault_root / "broken.md")
    with pytest.raises(InvalidId, match="broken symlink"):
        write_note(config, "broken", "x")
    assert not (config.vault_root / "missing.md").exists()


def test_symlink_to_outside_is_refused_and_nothing_written(config: Config, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    config.vault_root.mkdir()
    os.symlink(outside, config.vault_root / "out")
    with pytest.raises(InvalidId):
        write_note(config, "out/x", "x")
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize(
    "raw", ["../escape", "/tmp/escape", "a\\..\\..\\escape", "C:/escape", "x\x00y", "../../escape"]
)
def test_refused_ids_touch_nothing_outside_the_vault(config: Config, tmp_path: Path, raw: str) -> None:
    before = sorted(p.name for p in tmp_path.rglob("*"))
    with pytest.raises(InvalidId):
        write_note(config, raw, "x")
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def test_percent_encoding_is_a_literal_name(config: Config) -> None:
    write_note(config, "%2e%2e/x", "x")
    assert (config.vault_root / "%2e%2e" / "x.md").is_file()


def test_empty_append_is_refused(config: Config) -> None:
    with pytest.raises(UsageError):
        write_note(config, "n", "  \n")
    assert not config.vault_root.exists()


def test_failed_rename_leaves_no_temporary_and_no_new_folder(config: Config, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken_replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("amem.store.write.os.replace", broken_replace)
    with pytest.raises(IoError) as info:
        write_note(config, "new/folder/n", "x")
    assert info.value.message == 'cannot write note "new/folder/n.md": No space left on device'
    assert not config.vault_root.exists()  # the folders this write made are gone again, the vault too


@pytest.mark.parametrize("note_id", ["x.md/y", "x.md/deeper/y"])
def test_a_file_where_a_folder_should_be_is_refused(config: Config, note_id: str) -> None:
    write_note(config, "x", "a note")
    with pytest.raises(InvalidId) as info:
        write_note(config, note_id, "b")
    assert info.value.message.endswith("a folder on its path is a file")
    assert str(config.vault_root) not in info.value.message
    assert [p.name for p in config.vault_root.iterdir()] == ["x.md"]


def test_stale_temporaries_of_a_killed_writer_are_removed(config: Config) -> None:
    write_note(config, "n", "x")
    leftover = config.vault_root / ".n.md.deadbeef.amem-tmp"
    leftover.write_text("half")
    write_note(config, "n", "y")
    assert not leftover.exists()


def test_writing_to_a_folder_is_refused(config: Config) -> None:
    (config.vault_root / "dir.md").mkdir(parents=True)
    with pytest.raises(InvalidId, match="folder"):
        write_note(config, "dir", "x")


def test_a_bom_and_crlf_note_keeps_both(config: Config, frozen_clock: Any) -> None:
    path = config.vault_root / "w.md"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\xef\xbb\xbf---\r\ntitle: W\r\n---\r\nBody\r\n")
    write_note(config, "w", "more")
    data = path.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf---\r\ntitle: W\r\nupdated: 2026-11-29T20:15:03+08:00\r\n---\r\nBody\r\n")
    assert data.count(b"\xef\xbb\xbf") == 1
    write_note(config, "w", "---\ntitle: V\n---\nnew", mode="overwrite")
    assert path.read_bytes().startswith(b"\xef\xbb\xbf---\r\ntitle: V\r\n")
