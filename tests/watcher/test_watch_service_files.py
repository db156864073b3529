"""The systemd user unit and the launchd agent shipped in docs/service: their command lines, run as the
service manager would run them (with the installed `amem`), are ones `amem watch` accepts and runs until
SIGTERM, which it answers with a clean exit."""

from __future__ import annotations

import configparser
import os
import plistlib
import shlex
import signal
import subprocess
from pathlib import Path

import pytest

from ..installed import amem_bin
from .agentmemory_standin import StandInServer
from .conftest import wait_until

SERVICE = Path(__file__).resolve().parents[2] / "docs" / "service"


def unit_command(home: Path) -> list[str]:
    unit = configparser.ConfigParser(interpolation=None, strict=False)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read(SERVICE / "amem-watch.service")
    assert unit["Install"]["WantedBy"] == "default.target"
    service = unit["Service"]
    assert service["Restart"] == "on-failure" and service["KillSignal"] == "SIGTERM"
    return [word.replace("%h", str(home)) for word in shlex.split(service["ExecStart"])]


def agent_command(home: Path) -> tuple[list[str], dict[str, str]]:
    with open(SERVICE / "org.amem.watch.plist", "rb") as handle:
        agent = plistlib.load(handle)
    assert agent["Label"] == "org.amem.watch" and agent["KeepAlive"] == {"SuccessfulExit": False}
    args = [arg.replace("/Users/you", str(home)) for arg in agent["ProgramArguments"]]
    return args, dict(agent.get("EnvironmentVariables", {}))


def run_until_sigterm(argv: list[str], home: Path, env_extra: dict[str, str], tmp_path: Path) -> str:
    program = Path(argv[0])
    assert program.name == "amem" and argv[1] == "watch"
    # The installed amem where the service file expects it.
    amem_bin(tmp_path / "bin")
    program.parent.mkdir(parents=True, exist_ok=True)
    program.symlink_to(tmp_path / "bin" / "amem")
    roots = [arg for arg in argv[2:] if arg.startswith(str(home))]
    assert roots, "the command line names the roots to watch"
    for root in roots:
        Path(root).mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **env_extra}
    err = tmp_path / "service.stderr"
    with open(err, "wb") as stderr:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=stderr, env=env)
        try:
            wait_until(lambda: "observations go to" in err.read_text() or proc.poll() is not None)
            assert proc.poll() is None, err.read_text()
            (Path(roots[0]) / "note.md").write_text("hello from the service\n")
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=30) == 0, err.read_text()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return err.read_text()


@pytest.mark.parametrize("manager", ["systemd", "launchd"])
def test_the_service_files_run_amem_watch(tmp_path: Path, manager: str) -> None:
    home = tmp_path / "home"
    env: dict[str, str]
    if manager == "systemd":
        argv, env = unit_command(home), {}
    else:
        argv, env = agent_command(home)
    # The files point at the server's default address; the test's stand-in listens on a port of its own.
    assert "http://localhost:3111" in argv
    server = StandInServer().start()
    try:
        argv = [server.url if arg == "http://localhost:3111" else arg for arg in argv]
        log = run_until_sigterm(argv, home, env, tmp_path)
        assert f"watching {home}/code/project" in log
        assert f"observations go to server {server.url}" in log
        wait_until(lambda: server.stored(), message="the change delivered before the exit")
    finally:
        server.stop()
