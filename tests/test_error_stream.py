"""On failure stderr is one JSON object (SPEC §9): warnings met before the failure (an unknown config key,
malformed frontmatter) are folded into it as `warnings`; on success they stay plain lines. When neither
stdout nor stderr can be written, the exit code still says what failed. Run through the installed `amem`."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import write_file
from tests.installed import amem_bin, path_with


@pytest.fixture
def env(tmp_path: Path, vault: Path) -> dict[str, str]:
    write_file(vault / "ok.md", "a plain note\n")
    write_file(vault / "broken.md", "---\na: [\n---\nbroken frontmatter\n")
    write_file(tmp_path / "config.yaml", "bogusKey: 1\n")
    return dict(os.environ, PATH=path_with(amem_bin(tmp_path / "bin")), AMEM_CONFIG=str(tmp_path / "config.yaml"))


def sh(env: dict[str, str], script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["sh", "-c", script], env=env, capture_output=True, text=True, timeout=60)


def one_error(result: subprocess.CompletedProcess[str]) -> dict[str, object]:
    document = json.loads(result.stderr)  # the whole of stderr, one JSON document
    assert set(document) == {"error"}
    error: dict[str, object] = document["error"]
    return error


def test_a_config_warning_is_folded_into_the_error(env: dict[str, str]) -> None:
    result = sh(env, "amem read nothing-here")
    assert result.returncode == 3
    error = one_error(result)
    assert error["code"] == "not_found"
    assert any("bogusKey" in warning for warning in error["warnings"])  # type: ignore[attr-defined]


def test_frontmatter_warnings_are_folded_when_the_output_cannot_be_written(env: dict[str, str]) -> None:
    result = sh(env, "amem read broken >/dev/full")
    assert result.returncode == 10
    error = one_error(result)
    assert error["code"] == "io"
    warnings: list[str] = error["warnings"]  # type: ignore[assignment]
    assert any("malformed frontmatter" in w for w in warnings) and any("bogusKey" in w for w in warnings)


def test_on_success_warnings_stay_plain_lines(env: dict[str, str]) -> None:
    result = sh(env, "amem read broken")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["id"] == "broken.md"
    lines = result.stderr.splitlines()
    assert lines and all(line.startswith("amem: warning: ") for line in lines)
    assert any("malformed frontmatter" in line for line in lines) and any("bogusKey" in line for line in lines)


def test_an_error_without_warnings_has_no_warnings_field(env: dict[str, str], tmp_path: Path) -> None:
    empty = write_file(tmp_path / "empty.yaml", "")
    result = sh(dict(env, AMEM_CONFIG=str(empty)), "amem read nothing-here")
    assert result.returncode == 3
    assert "warnings" not in one_error(result)


@pytest.mark.parametrize(("script", "code"), [("amem read ok >/dev/full 2>&-", 10), ("amem read nothing-here 2>&-", 3)])
def test_with_stderr_closed_the_exit_still_names_the_failure(env: dict[str, str], script: str, code: int) -> None:
    result = sh(env, script + "; echo $? >&2")  # the shell's stderr is open; amem's is closed
    assert result.stderr.strip() == str(code)


def test_a_keeper_prints_its_warnings_once_it_is_keeping(env: dict[str, str], tmp_path: Path) -> None:
    log = tmp_path / "keeper-stderr.log"
    with log.open("w") as errors:
        proc = subprocess.Popen(["amem", "index", "--watch"], env=env, stdout=subprocess.PIPE, stderr=errors, text=True)
    try:
        assert proc.stdout is not None
        assert json.loads(proc.stdout.readline())["notes"] == 2
        deadline = time.monotonic() + 30
        while "bogusKey" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "amem: warning: unknown config key 'bogusKey'" in log.read_text()
    finally:
        proc.kill()
        proc.wait(timeout=30)
