"""`amem edit`: find/replace, a section, a prepend; under the note's lock, version-guarded, atomic; the
frontmatter kept byte for byte but `updated`; nothing written on any error."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from amem.digest import sha1_hex
from amem.notes.parse import parse_note
from tests.conftest import write_file
from tests.gitrepo import git, init_repo, set_identity
from tests.installed import amem_bin, path_with

STAMP = re.compile(r"^updated: \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d$")

NOTE = """---
title: Auth   # the title people search for
tags: [auth, "security"]
created: 2026-01-02
updated: 2026-01-03T10:00:00+00:00
'quoted key': 1
---
# Auth

Tokens expire after 24 hours.

## Status

Rotating keys weekly.

### Detail

Old detail.

## Next

Nothing yet.
"""


def _without_updated(text: str) -> list[str]:
    return [line for line in text.split("\n") if not line.startswith("updated:")]


def _head(text: str) -> str:
    return text[: text.index("\n---", 3) + 5]


def test_find_replace_changes_only_the_text_and_the_updated_line(amem: Any, vault: Path) -> None:
    path = write_file(vault / "auth.md", NOTE)
    result = amem("edit", "auth", "--find", "24 hours", "--replace", "12 hours")
    assert result.exit_code == 0, result.stderr
    after = path.read_text()
    assert result.json == {"id": "auth.md", "version": sha1_hex(after.encode()), "bytes": len(after), "replaced": 1}
    assert after.replace("12 hours", "24 hours").split("\n")[5:] == NOTE.split("\n")[5:]
    # the frontmatter: every line as written (comment, quotes, order), the updated line edited in place
    assert _without_updated(_head(after)) == _without_updated(_head(NOTE))
    updated = [line for line in _head(after).split("\n") if line.startswith("updated:")]
    assert len(updated) == 1 and STAMP.match(updated[0]) and updated[0] != "updated: 2026-01-03T10:00:00+00:00"
    assert _head(after).split("\n").index(updated[0]) == 4


def test_find_must_occur_once_and_errors_say_how_many(amem: Any, vault: Path) -> None:
    path = write_file(vault / "n.md", "# N\n\nTODO one\nTODO two\n")
    before = path.read_bytes()
    none = amem("edit", "n", "--find", "DONE", "--replace", "x")
    assert none.exit_code == 2 and none.error["code"] == "usage" and none.error["matches"] == 0
    assert "0 times" in none.error["message"]
    several = amem("edit", "n", "--find", "TODO", "--replace", "DONE")
    assert several.exit_code == 2 and several.error["matches"] == 2 and "2 times" in several.error["message"]
    overlapping = amem("edit", "n", "--find", "O", "--replace", "0")
    assert overlapping.exit_code == 2 and overlapping.error["matches"] == 4
    assert path.read_bytes() == before
    every = amem("edit", "n", "--find", "TODO", "--replace", "DONE", "--all")
    assert every.exit_code == 0 and every.json["replaced"] == 2
    assert parse_note(path.read_text()).body == "# N\n\nDONE one\nDONE two\n"
    assert amem("edit", "n", "--find", "TODO", "--replace", "x", "--all").error["matches"] == 0


def test_find_spans_lines_and_a_crlf_note_stays_crlf_with_its_bom(amem: Any, vault: Path) -> None:
    text = "\ufeff---\r\ntags: [a]\r\n---\r\nfirst line\r\nsecond line\r\nthird\r\n"
    path = write_file(vault / "w.md", text)
    result = amem("edit", "w", "--find", "line\nsecond", "--replace", "LINE\nSECOND\nINSERTED")
    assert result.exit_code == 0, result.stderr
    data = path.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf---\r\ntags: [a]\r\nupdated: ")
    assert data.endswith(b"\r\n---\r\nfirst LINE\r\nSECOND\r\nINSERTED line\r\nthird\r\n")
    assert b"\n" not in data.replace(b"\r\n", b"")


def test_an_updated_line_is_added_in_the_blocks_own_line_ending(amem: Any, vault: Path) -> None:
    # the block is CRLF, the body LF: the new line follows the block
    path = write_file(vault / "m.md", "---\r\ntitle: M\r\n---\r\nbody\nmore\n")
    assert amem("edit", "m", "--find", "more", "--replace", "less").exit_code == 0
    data = path.read_bytes().decode()
    assert re.fullmatch(r"---\r\ntitle: M\r\nupdated: [^\r\n]+\r\n---\r\nbody\nless\n", data), data
    # a note without frontmatter gets `updated` as any write gives it
    bare = write_file(vault / "bare.md", "just text\n")
    assert amem("edit", "bare", "--prepend", "top").exit_code == 0
    assert re.fullmatch(r"---\nupdated: [^\n]+\n---\ntop\n\njust text\n", bare.read_text())


def test_a_quoted_updated_key_is_stamped_in_place_not_repeated(amem: Any, vault: Path) -> None:
    path = write_file(vault / "q.md", '---\n"updated": "2024-01-01" # when\ntags: [a]\n---\nold\n')
    assert amem("edit", "q", "--find", "old", "--replace", "new").exit_code == 0
    assert re.fullmatch(r'---\n"updated": "[^"\n]+" # when\ntags: \[a\]\n---\nnew\n', path.read_text()), (
        path.read_text()
    )


def test_section_replaces_up_to_the_next_heading_of_its_level(amem: Any, vault: Path) -> None:
    path = write_file(vault / "auth.md", NOTE)
    result = amem("edit", "auth", "--section", "status", "Keys rotate daily.")
    assert result.exit_code == 0 and result.json["replaced"] == 1
    body = parse_note(path.read_text()).body
    expected = "# Auth\n\nTokens expire after 24 hours.\n\n## Status\n\nKeys rotate daily.\n\n## Next\n\nNothing yet.\n"
    assert body == expected
    # `#`s fix the level; without them any level matches
    assert amem("edit", "auth", "--section", "### Status", "x").error["matches"] == 0
    assert amem("edit", "auth", "--section", "## STATUS", "Two.").exit_code == 0
    assert amem("edit", "auth", "--section", "  next  ", "Last.").exit_code == 0
    assert parse_note(path.read_text()).body.endswith("## Status\n\nTwo.\n\n## Next\n\nLast.\n")


def test_section_ignores_headings_in_fenced_code_and_refuses_missing_or_repeated(amem: Any, vault: Path) -> None:
    text = "# Doc\n\n## Setup\n\n```sh\n## Setup\n# not a heading\n```\n\nstep one\n\n# End\n"
    path = write_file(vault / "doc.md", text)
    result = amem("edit", "doc", "--section", "Setup", "```sh\nmake\n```")
    assert result.exit_code == 0, result.stderr
    assert parse_note(path.read_text()).body == "# Doc\n\n## Setup\n\n```sh\nmake\n```\n\n# End\n"
    before = path.read_bytes()
    missing = amem("edit", "doc", "--section", "Install", "x")
    assert missing.exit_code == 2 and missing.error["matches"] == 0 and "Install" in missing.error["message"]
    write_file(vault / "twice.md", "## A\n\none\n\n## a\n\ntwo\n")
    twice = amem("edit", "twice", "--section", "a", "x")
    assert twice.exit_code == 2 and twice.error["matches"] == 2 and "2 times" in twice.error["message"]
    assert path.read_bytes() == before and (vault / "twice.md").read_text() == "## A\n\none\n\n## a\n\ntwo\n"


def test_prepend_goes_after_the_frontmatter(amem: Any, vault: Path) -> None:
    path = write_file(vault / "auth.md", NOTE)
    result = amem("edit", "auth", "--prepend", "- Read this first.")
    assert result.exit_code == 0, result.stderr
    after = path.read_text()
    assert parse_note(after).body == "- Read this first.\n\n" + parse_note(NOTE).body
    assert _without_updated(_head(after)) == _without_updated(_head(NOTE))


def test_content_comes_from_the_argument_or_stdin(amem: Any, vault: Path) -> None:
    path = write_file(vault / "auth.md", NOTE)
    assert amem("edit", "auth", "--section", "Next", "-", input="From a pipe.\n").exit_code == 0
    assert parse_note(path.read_text()).body.endswith("## Next\n\nFrom a pipe.\n")
    assert amem("edit", "auth", "--prepend", input="Piped top.").exit_code == 0
    assert parse_note(path.read_text()).body.startswith("Piped top.\n\n# Auth\n")
    misplaced = amem("edit", "auth", "--find", "top", "--replace", "x", "extra")
    assert misplaced.exit_code == 2 and misplaced.error["code"] == "usage"


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--find", "a"],
        ["--replace", "a"],
        ["--find", "a", "--replace", "b", "--prepend"],
        ["--section", "Next", "--prepend", "x"],
        ["--prepend", "x", "--all"],
        ["--find", "", "--replace", "b"],
        ["--prepend", "   "],
    ],
)
def test_exactly_one_operation_else_usage_and_nothing_written(amem: Any, vault: Path, args: list[str]) -> None:
    path = write_file(vault / "auth.md", NOTE)
    result = amem("edit", "auth", *args, input="")
    assert result.exit_code == 2 and result.error["code"] == "usage", result.stderr
    assert path.read_text() == NOTE


def test_a_missing_note_is_not_found_and_nothing_is_created(amem: Any, vault: Path) -> None:
    write_file(vault / "other.md", "x\n")
    result = amem("edit", "notes/nope", "--prepend", "x")
    assert result.exit_code == 3 and result.error["code"] == "not_found"
    assert not (vault / "notes").exists()
    empty = sha1_hex(b"")
    assert amem("edit", "nope", "--prepend", "x", "--base-version", empty).error["code"] == "not_found"
    assert sorted(p.name for p in vault.iterdir()) == ["other.md"]


def test_the_version_guard(amem: Any, vault: Path) -> None:
    path = write_file(vault / "auth.md", NOTE)
    stale = sha1_hex(b"something else")
    result = amem("edit", "auth", "--find", "24", "--replace", "12", "--base-version", stale)
    assert result.exit_code == 4 and result.error["code"] == "conflict"
    assert sha1_hex(NOTE.encode()) in result.error["message"]
    assert path.read_text() == NOTE
    ok = amem("edit", "auth", "--find", "24", "--replace", "12", "--base-version", sha1_hex(NOTE.encode()))
    assert ok.exit_code == 0
    again = amem("edit", "auth", "--find", "12", "--replace", "6", "--base-version", ok.json["version"])
    assert again.exit_code == 0 and "6 hours" in path.read_text()
    assert amem("edit", "auth", "--prepend", "x", "--base-version", "nope").error["code"] == "usage"


def test_commit_commits_exactly_the_edit(amem: Any, vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    set_identity(monkeypatch)
    init_repo(vault)
    write_file(vault / "auth.md", NOTE)
    write_file(vault / "staged.md", "staged\n")
    git(vault, "add", "auth.md")
    git(vault, "commit", "-q", "-m", "start")
    git(vault, "add", "staged.md")
    result = amem("edit", "auth", "--find", "24", "--replace", "12", "--commit")
    assert result.exit_code == 0, result.stderr
    assert result.json["commit"] == git(vault, "rev-parse", "HEAD")
    assert git(vault, "log", "-1", "--format=%s") == "amem: edit auth.md"
    assert git(vault, "show", "--name-only", "--format=", "HEAD") == "auth.md"
    assert git(vault, "diff", "--cached", "--name-only") == "staged.md"


def test_a_note_that_is_not_utf8_is_refused(amem: Any, vault: Path) -> None:
    path = write_file(vault / "bin.md", b"caf\xe9 au lait\n")
    result = amem("edit", "bin", "--find", "au", "--replace", "x")
    assert result.exit_code == 2 and result.error["code"] == "usage"
    assert path.read_bytes() == b"caf\xe9 au lait\n"


def test_the_installed_amem_edits_from_a_pipe_and_fails_as_json(isolated_env: Path, vault: Path) -> None:
    write_file(vault / "auth.md", NOTE)
    env = {**os.environ, "PATH": path_with(amem_bin(isolated_env.parent / "bin"))}

    def sh(script: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["sh", "-c", script], cwd=isolated_env, env=env, capture_output=True, text=True, timeout=60
        )

    done = sh("echo 'Keys rotate hourly.' | amem edit auth --section Status")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["replaced"] == 1
    assert "## Status\n\nKeys rotate hourly.\n\n## Next" in (vault / "auth.md").read_text()
    failed = sh("amem edit auth --find nowhere --replace x")
    assert failed.returncode == 2 and failed.stdout == ""
    assert json.loads(failed.stderr)["error"]["matches"] == 0 and "Traceback" not in failed.stderr
    assert str(isolated_env) not in failed.stderr


APPENDER = """
import sys
from amem.config import load_config
from amem.ops.write import write_note
config = load_config()
for i in range(int(sys.argv[2])):
    write_note(config, "shared/log", f"# entry {sys.argv[1]}-{i}\\nfrom worker {sys.argv[1]}")
"""

EDITOR = """
import sys
from amem.config import load_config
from amem.ops.edit import Edit, edit_note
config = load_config()
for i in range(int(sys.argv[1])):
    edit_note(config, "shared/log", Edit(find=f"counter {i} end", replace=f"counter {i + 1} end"))
"""


@pytest.mark.slow
def test_edits_racing_appends_lose_nothing(isolated_env: Path, vault: Path) -> None:
    write_file(vault / "shared" / "log.md", "---\ncreated: 2026-01-01\n---\n# Log\n\ncounter 0 end\n")
    appenders = [subprocess.Popen([sys.executable, "-c", APPENDER, str(w), "40"], cwd=isolated_env) for w in range(4)]
    editors = [subprocess.Popen([sys.executable, "-c", EDITOR, "60"], cwd=isolated_env)]
    for proc in appenders + editors:
        assert proc.wait(timeout=240) == 0
    text = (vault / "shared" / "log.md").read_text()
    entries = {line for line in text.splitlines() if line.startswith("# entry ")}
    assert len(entries) == 160
    assert "counter 60 end" in text and text.count("counter ") == 1
    assert parse_note(text).frontmatter["created"].startswith("2026-01-01")


@pytest.mark.parametrize("block", ["bad: [o\n", "- a list\n- not a mapping\n"])
def test_a_frontmatter_block_that_does_not_parse_is_left_as_written(amem: Any, vault: Path, block: str) -> None:
    path = write_file(vault / "odd.md", f"---\n{block}---\nbody text\n")  # "o" in the block too
    assert amem("edit", "odd", "--prepend", "top").exit_code == 0
    assert path.read_text() == f"---\n{block}---\ntop\n\nbody text\n"
    assert amem("edit", "odd", "--find", "o", "--replace", "0", "--all").json["replaced"] == 2  # the body's only
    assert path.read_text().startswith(f"---\n{block}---\n")


def test_frontmatter_that_a_line_edit_cannot_stamp_is_kept_with_a_warning(amem: Any, vault: Path) -> None:
    text = "---\n{title: t,\n  tags: [a]}\n---\nbody text\n"
    path = write_file(vault / "flow.md", text)
    result = amem("edit", "flow", "--find", "body", "--replace", "the")
    assert result.exit_code == 0 and "updated" in result.stderr
    assert path.read_text() == text.replace("body", "the")
