"""The vault sink: observations appended to observations/<YYYY-MM-DD>.md, searchable with no server."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from amem.cli import cli
from amem.config import load_config
from amem.watcher.sinks import daily_note_id, render_markdown

from ..conftest import write_file
from .conftest import RunningWatcher, wait_until

Make = Callable[..., RunningWatcher]


def test_observations_are_appended_to_the_daily_note(make_watcher: Make, tree: Path) -> None:
    w = make_watcher(tree, ("vault",))
    write_file(tree / "src" / "payments.py", "def charge():\n    return 'ok'\n")
    write_file(tree / ".env", "API_TOKEN=abc123secret\nMODE=dev\n")
    w.wait_for("src/payments.py")
    w.wait_for(".env")
    (tree / "src" / "payments.py").unlink()
    w.wait_for("src/payments.py", "file_delete")
    vault = Path(load_config().vault_root)
    today = datetime.now().astimezone().date().isoformat()
    note = vault / "observations" / f"{today}.md"

    def written() -> str:
        text = note.read_text() if note.exists() else ""
        return text if "file_delete" in text else ""

    text = wait_until(written, message="the daily note")
    assert "**file_change** `src/payments.py`: 30 bytes" in text
    assert "def charge():" in text
    assert "**file_delete** `src/payments.py`" in text
    assert "API_TOKEN=[REDACTED]" in text and "abc123secret" not in text
    assert text.startswith("---\ncreated: ")
    assert w.stop().sinks["vault"] == {"delivered": 3, "failed": 0}


@pytest.mark.skipif(importlib.util.find_spec("amem.commands.search") is None, reason="amem search not built")
def test_amem_search_finds_the_file_name(make_watcher: Make, tree: Path) -> None:
    w = make_watcher(tree, ("vault",))
    write_file(tree / "docs" / "zanzibar-rollout.md", "# Rollout plan\n\nShip it.\n")
    w.wait_for("docs/zanzibar-rollout.md")
    w.stop()
    result = CliRunner().invoke(cli, ["search", "zanzibar"], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    hits = json.loads(result.stdout)["hits"]
    assert [hit["id"] for hit in hits] and hits[0]["id"].startswith("observations/")


def test_the_markdown_fences_previews_that_contain_fences() -> None:
    observation = {
        "sessionId": "s",
        "project": "p",
        "timestamp": "2026-09-10T01:06:57.000Z",
        "data": {
            "changeKind": "file_change",
            "files": ["README.md"],
            "size": 20,
            "truncated": False,
            "content": "README.md (20 bytes)\n\n```sh\nmake\n```\n[[link]]",
        },
    }
    text = render_markdown(observation)
    assert "\n````text\n```sh\nmake\n```\n[[link]]\n````" in text


def test_the_daily_note_follows_the_configured_time_zone() -> None:
    from datetime import timedelta, timezone

    assert daily_note_id("2026-09-10T20:30:00.000Z", timezone(timedelta(hours=8))) == "observations/2026-09-11.md"
    assert daily_note_id("2026-09-10T20:30:00.000Z", UTC) == "observations/2026-09-10.md"


@pytest.mark.parametrize("leads_out", ["note", "folder"])
def test_the_vault_sink_never_reads_or_writes_through_a_link_leading_out(
    make_watcher: Make, tree: Path, tmp_path: Path, leads_out: str
) -> None:
    vault = Path(load_config().vault_root)
    outside = write_file(tmp_path / "outside" / "secret.md", "zqxsecret outside the vault\n")
    today = datetime.now().astimezone().date().isoformat()
    if leads_out == "note":
        (vault / "observations").mkdir(parents=True)
        (vault / "observations" / f"{today}.md").symlink_to(outside)
    else:
        vault.mkdir(parents=True)
        (vault / "observations").symlink_to(outside.parent)
    w = make_watcher(tree, ("vault",))
    write_file(tree / "src" / "a.py", "print(1)\n")
    w.wait_for("src/a.py")
    summary = w.stop()
    assert summary.sinks["vault"]["delivered"] == 0 and summary.sinks["vault"]["failed"] >= 1
    assert outside.read_text() == "zqxsecret outside the vault\n"
    assert sorted(p.name for p in outside.parent.iterdir()) == ["secret.md"]
    result = CliRunner().invoke(cli, ["search", "zqxsecret"], catch_exceptions=False)
    assert "zqxsecret" not in result.stdout
