"""A mistyped command suggests the nearest one, and `amem help [COMMAND]` prints the help as `--help`
does (SPEC §9), as git users type them; through the installed `amem`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from amem.cli import COMMANDS
from tests.installed import amem_bin, path_with


@pytest.fixture
def env(tmp_path: Path, vault: Path) -> dict[str, str]:
    return dict(os.environ, PATH=path_with(amem_bin(tmp_path / "bin")), COLUMNS="100")


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["amem", *args], env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(
    ("typed", "meant"), [("serch", "search"), ("wirte", "write"), ("hisotry", "history"), ("hlep", "help")]
)
def test_a_mistyped_command_suggests_the_nearest(env: dict[str, str], typed: str, meant: str) -> None:
    result = run(env, typed, "x")
    assert result.returncode == 2 and result.stdout == ""
    error = json.loads(result.stderr)["error"]
    assert error["code"] == "usage"
    assert f"did you mean {meant}?" in error["message"].lower(), error["message"]


def test_a_command_far_from_any_gets_no_guess(env: dict[str, str]) -> None:
    error = json.loads(run(env, "zzzzqqq").stderr)["error"]
    assert error["code"] == "usage" and "zzzzqqq" in error["message"] and "did you mean" not in error["message"].lower()


def test_help_prints_what_help_option_prints(env: dict[str, str]) -> None:
    result = run(env, "help")
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout == run(env, "--help").stdout


@pytest.mark.parametrize("name", COMMANDS)
def test_help_command_prints_that_commands_help(env: dict[str, str], name: str) -> None:
    result = run(env, "help", name)
    assert result.returncode == 0, result.stderr
    assert result.stdout == run(env, name, "--help").stdout
    assert result.stdout.startswith(f"Usage: amem {name} ")


def test_help_of_a_mistyped_command_is_a_usage_error_with_a_guess(env: dict[str, str]) -> None:
    result = run(env, "help", "serch")
    assert result.returncode == 2
    assert "did you mean search?" in json.loads(result.stderr)["error"]["message"].lower()


def test_help_is_not_listed_as_a_command_but_completes(env: dict[str, str]) -> None:
    completion = dict(env, COMP_WORDS="amem help se", COMP_CWORD="2", _AMEM_COMPLETE="bash_complete")
    result = subprocess.run(["amem"], env=completion, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert {line.split(",", 1)[1] for line in result.stdout.splitlines()} == {"search"}
    top = dict(env, COMP_WORDS="amem he", COMP_CWORD="1", _AMEM_COMPLETE="bash_complete")
    result = subprocess.run(["amem"], env=top, capture_output=True, text=True, timeout=60)
    assert {line.split(",", 1)[1] for line in result.stdout.splitlines()} == {"help"}


def test_the_missing_mcp_extra_names_both_ways_to_install_it(env: dict[str, str]) -> None:
    probe = "import sys\nsys.modules['mcp'] = None\nfrom amem.cli import main\nsys.argv = ['amem', 'mcp']\nmain()\n"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, env=env)
    assert result.returncode == 2
    message = json.loads(result.stderr)["error"]["message"]
    assert 'pip install "amem[mcp]"' in message and 'pip install ".[mcp]"' in message
