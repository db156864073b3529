"""`amem list --since`: the notes changed in a period (by file mtime, from the index), newest first."""

from __future__ import annotations

import json
import os
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import write_file
from tests.installed import amem_bin, path_with

HOUR = 3600
DAY = 24 * HOUR


def _aged(vault: Path, note_id: str, seconds_ago: float) -> None:
    path = write_file(vault / note_id, f"# {note_id}\n\nbody\n")
    moment = time.time() - seconds_ago
    os.utime(path, (moment, moment))


@pytest.fixture
def aged(vault: Path) -> Path:
    _aged(vault, "a-fresh.md", 10 * 60)  # 10 minutes
    _aged(vault, "b-hours.md", 5 * HOUR)
    _aged(vault, "c-yesterday.md", 30 * HOUR)
    _aged(vault, "notes/d-days.md", 4 * DAY)
    _aged(vault, "e-weeks.md", 20 * DAY)
    return vault


def ids(result: Any) -> list[str]:
    return [note["id"] for note in result.json["notes"]]


@pytest.mark.parametrize(
    ("since", "expected"),
    [
        ("30m", ["a-fresh.md"]),
        ("12h", ["a-fresh.md", "b-hours.md"]),
        ("2d", ["a-fresh.md", "b-hours.md", "c-yesterday.md"]),
        ("1w", ["a-fresh.md", "b-hours.md", "c-yesterday.md", "notes/d-days.md"]),
        ("52w", ["a-fresh.md", "b-hours.md", "c-yesterday.md", "notes/d-days.md", "e-weeks.md"]),
    ],
)
def test_since_a_duration_lists_what_changed_newest_first(
    aged: Path, amem: Any, since: str, expected: list[str]
) -> None:
    result = amem("list", "--since", since)
    assert result.exit_code == 0, result.stderr
    assert ids(result) == expected  # newest first: the ages above are in that order
    assert result.json["total"] == len(expected) and result.json["truncated"] is False


def test_since_an_iso_date_or_time(aged: Path, amem: Any) -> None:
    three_days_ago = datetime.now(UTC) - timedelta(days=3)
    stamp = three_days_ago.replace(microsecond=0).isoformat()
    assert ids(amem("list", "--since", stamp)) == ["a-fresh.md", "b-hours.md", "c-yesterday.md"]
    naive = three_days_ago.astimezone().replace(tzinfo=None, microsecond=0).isoformat()
    assert ids(amem("list", "--since", naive)) == ["a-fresh.md", "b-hours.md", "c-yesterday.md"]
    zulu = stamp.replace("+00:00", "Z")
    assert ids(amem("list", "--since", zulu)) == ["a-fresh.md", "b-hours.md", "c-yesterday.md"]
    a_month_ago = (datetime.now().astimezone() - timedelta(days=30)).date().isoformat()
    assert len(ids(amem("list", "--since", a_month_ago))) == 5
    assert ids(amem("list", "--since", "2999-01-01")) == []
    assert len(ids(amem("list", "--since", "0001-01-01"))) == 5


def test_since_with_sort_limit_prefix_and_total(aged: Path, amem: Any) -> None:
    by_id = amem("list", "--since", "1w", "--sort", "id")
    assert ids(by_id) == ["a-fresh.md", "b-hours.md", "c-yesterday.md", "notes/d-days.md"]
    limited = amem("list", "--since", "1w", "--limit", "2")
    assert ids(limited) == ["a-fresh.md", "b-hours.md"]
    assert limited.json["total"] == 4 and limited.json["truncated"] is True  # total counts after the filter
    assert ids(amem("list", "notes/", "--since", "1w")) == ["notes/d-days.md"]
    assert ids(amem("list"))[0] == "a-fresh.md" and len(ids(amem("list"))) == 5  # without --since: all, by id


@pytest.mark.parametrize("bad", ["", "2", "d", "-2d", "2x", "2 days", "yesterday", "2026-13-01", "1.5h"])
def test_a_bad_since_is_a_usage_error(aged: Path, amem: Any, bad: str) -> None:
    result = amem("list", "--since", bad)
    assert result.exit_code == 2 and result.error["code"] == "usage", result.stderr
    assert "--since" in result.error["message"] and result.stdout == ""


def test_since_sees_a_write_made_after_the_index_was_built(aged: Path, isolated_env: Path) -> None:
    env = {**os.environ, "PATH": path_with(amem_bin(isolated_env.parent / "bin"))}

    def sh(script: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["sh", "-c", script], cwd=isolated_env, env=env, capture_output=True, text=True, timeout=60
        )

    assert [n["id"] for n in json.loads(sh("amem list --since 30m").stdout)["notes"]] == ["a-fresh.md"]
    done = sh("echo fresh | amem write e-weeks >/dev/null && amem list --since 30m")
    assert done.returncode == 0, done.stderr
    assert [n["id"] for n in json.loads(done.stdout)["notes"]] == ["e-weeks.md", "a-fresh.md"]
