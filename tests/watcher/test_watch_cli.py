"""`amem watch` as users run it: options and their precedence, exit codes (CliRunner), and a few runs of
the installed program in a subprocess (SIGTERM, SIGKILL and restart, stdout closed by its reader)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from amem.cli import cli
from amem.config import load_config
from amem.errors import UsageError
from amem.paths import state_home

from ..conftest import write_file
from .agentmemory_standin import StandInServer
from .conftest import wait_until, watch_options
from .test_watch_server import free_port, spooled


def invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, ["watch", *args], catch_exceptions=False)


def error_of(stderr: str) -> dict[str, Any]:
    error: dict[str, Any] = json.loads([line for line in stderr.splitlines() if line.startswith("{")][-1])["error"]
    return error


# --- precedence: flags > environment > config files > defaults ---------------------------------------


def test_environment_lists_are_trimmed_and_cli_roots_replace_them(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("AGENTMEMORY_FS_WATCH_DIRS", f" {tmp_path}/a , {tmp_path}/b ,, ")
    monkeypatch.setenv("AGENTMEMORY_FS_WATCH_IGNORE", r" foo$ , ^bar/ ")
    options = watch_options()
    assert options.roots == (f"{tmp_path}/a", f"{tmp_path}/b")
    assert options.ignore == ("foo$", "^bar/")
    from_args = watch_options([str(tmp_path / "c")])
    assert from_args.roots == (str(tmp_path / "c"),)


def test_env_regexes_are_used_as_regexes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from amem.fswatch.rules import IgnoreRules

    monkeypatch.setenv("AGENTMEMORY_FS_WATCH_IGNORE", r"foo$,^bar/")
    options = watch_options([str(tmp_path)])
    rules = IgnoreRules(str(tmp_path), patterns=options.ignore)
    assert rules.is_path_ignored("x/foo") and not rules.is_path_ignored("x/foo.md")
    assert rules.is_path_ignored("bar/x.md") and not rules.is_path_ignored("x/bar/y.md")


def test_project_name_beats_project_and_blank_is_unset(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AGENTMEMORY_PROJECT", "old-alias")
    monkeypatch.setenv("AGENTMEMORY_PROJECT_NAME", "  canonical  ")
    assert watch_options([str(tmp_path)]).project == "canonical"
    monkeypatch.setenv("AGENTMEMORY_PROJECT_NAME", "   ")
    assert watch_options([str(tmp_path)]).project == "old-alias"
    monkeypatch.setenv("AGENTMEMORY_PROJECT", "")
    monkeypatch.setenv("AGENTMEMORY_URL", "  ")
    monkeypatch.setenv("AGENTMEMORY_SESSION_ID", " ")
    options = watch_options([str(tmp_path)])
    assert options.project is None and options.session_id is None
    assert options.sinks == ("vault",) and options.url == "http://localhost:3111"


def test_default_sink_follows_the_url(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    dirs = [str(tmp_path)]
    assert watch_options(dirs).sinks == ("vault",)
    assert watch_options(dirs, url="http://h:1/").sinks == ("server",)
    assert watch_options(dirs, url="http://h:1/").url == "http://h:1"
    monkeypatch.setenv("AGENTMEMORY_URL", "http://env:3111/")
    options = watch_options(dirs)
    assert options.sinks == ("server",) and options.url == "http://env:3111"
    assert watch_options(dirs, sinks=["stdout", "vault", "stdout"]).sinks == ("stdout", "vault")


def test_config_file_watch_keys_and_flags_over_them(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    config_file = write_file(
        tmp_path / "amem.yaml",
        (
            "watch:\n  dirs: [src]\n  ignore: ['\\.tmp$']\n  allowBinary: true\n  url: http://cfg:1\n"
            "  secret: cfg-secret\n  project: cfg-project\n  sessionId: cfg-session\n  debounceMs: 900\n"
            "  sinks: [stdout]\n"
        ),
    )
    monkeypatch.setenv("AMEM_CONFIG", str(config_file))
    monkeypatch.setenv("AGENTMEMORY_SECRET", "env-secret")
    options = watch_options()
    assert options.roots == (str(tmp_path / "src"),)  # relative to the config file
    assert options.ignore == (r"\.tmp$",)
    assert options.allow_binary is True and options.debounce_ms == 900
    assert options.url == "http://cfg:1" and options.secret == "env-secret"
    assert options.project == "cfg-project" and options.session_id == "cfg-session"
    assert options.sinks == ("stdout",)
    flagged = watch_options(
        ["d"],
        url="http://flag:2",
        secret="flag-secret",
        project="flag-p",
        session_id="flag-s",
        ignore=[r"\.bak$"],
        allow_binary=False,
        debounce_ms=50,
        sinks=["server"],
        no_gitignore=True,
    )
    assert flagged.url == "http://flag:2" and flagged.secret == "flag-secret"
    assert flagged.project == "flag-p" and flagged.session_id == "flag-s"
    assert flagged.ignore == (r"\.tmp$", r"\.bak$")  # ignore lists add up
    assert flagged.allow_binary is False and flagged.debounce_ms == 50
    assert flagged.sinks == ("server",) and flagged.use_gitignore is False


def test_allow_binary_from_the_environment_and_the_flags(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    dirs = [str(tmp_path)]
    assert watch_options(dirs).allow_binary is False
    monkeypatch.setenv("AGENTMEMORY_FS_WATCH_ALLOW_BINARY", "1")
    assert watch_options(dirs).allow_binary is True
    assert watch_options(dirs, allow_binary=False).allow_binary is False
    monkeypatch.setenv("AGENTMEMORY_FS_WATCH_ALLOW_BINARY", "0")
    assert watch_options(dirs).allow_binary is False


def test_amem_own_folders_are_always_excluded(tmp_path: Path) -> None:
    config = load_config()
    options = watch_options([str(tmp_path)])
    assert str(config.vault_root) in options.excluded
    assert str(state_home() / "amem") in options.excluded


# --- exit codes -------------------------------------------------------------------------------------


def test_no_roots_is_a_usage_error() -> None:
    result = invoke()
    assert result.exit_code == UsageError.exit_code == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("{")  # one JSON object, no banner
    error = error_of(result.stderr)
    assert "usage: " in error["message"] and "[DIR]..." in error["message"]
    assert error["code"] == "usage" and "AGENTMEMORY_FS_WATCH_DIRS" in error["message"]
    assert result.stdout == ""


def test_no_attachable_root_exits_with_the_watch_error(tmp_path: Path) -> None:
    a_file = write_file(tmp_path / "file.txt", "x")
    result = invoke(str(tmp_path / "missing"), str(a_file))
    assert result.exit_code == 9
    error = error_of(result.stderr)
    assert error["code"] == "watch"
    assert error["message"].startswith("could not watch any of the configured roots: ")
    assert f"{tmp_path / 'missing'}: no such directory" in error["message"]
    assert f"{a_file}: not a directory" in error["message"]
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "args", [["--ignore", "(unclosed", "."], ["--sink", "bogus", "."], ["--debounce-ms", "-1", "."], ["--nope", "."]]
)
def test_bad_options_are_usage_errors(args: list[str]) -> None:
    result = invoke(*args)
    assert result.exit_code == 2
    assert error_of(result.stderr)["code"] == "usage"


def test_help_describes_every_option() -> None:
    result = invoke("--help")
    assert result.exit_code == 0
    for option in (
        "--sink",
        "--url",
        "--secret",
        "--project",
        "--session-id",
        "--ignore",
        "--allow-binary",
        "--no-allow-binary",
        "--debounce-ms",
        "--no-gitignore",
    ):
        assert option in result.stdout


def test_a_full_run_in_process_until_sigint(tmp_path: Path, standin: StandInServer) -> None:
    root = tmp_path / "root"
    root.mkdir()

    def drive() -> None:
        # The watcher has started once it is watching: a write is then observed and delivered.
        deadline = time.monotonic() + 10
        while not standin.stored() and time.monotonic() < deadline:
            write_file(root / "cli.md", f"written at {time.monotonic()}")
            time.sleep(0.3)
        os.kill(os.getpid(), signal.SIGINT)

    thread = threading.Thread(target=drive, daemon=True)
    thread.start()
    result = invoke(
        str(root),
        "--url",
        standin.url,
        "--sink",
        "server",
        "--sink",
        "stdout",
        "--debounce-ms",
        "50",
        "--project",
        "cli-run",
    )
    thread.join()
    assert result.exit_code == 0
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert lines and all(o["data"]["files"] == ["cli.md"] and o["project"] == "cli-run" for o in lines)
    assert f"amem: watching {root} (project cli-run" in result.stderr
    assert "observations go to server " in result.stderr and ", stdout;" in result.stderr
    assert "amem: watch stopped: " in result.stderr and " observed; server: " in result.stderr


#: `amem watch` whose stop Event takes its first wait's SIGINT while the main thread holds the Event's own
#: lock: where a signal lands when it comes just as the watcher begins to wait (its handler runs in that
#: thread). A handler that took the same lock would wait for itself for ever.
SIGINT_INSIDE_THE_WAIT = """
import os, signal, threading
import amem.watcher.service as service


class SignalledInsideWait(threading.Event):
    fired = False

    def wait(self, timeout=None):
        if not SignalledInsideWait.fired:
            SignalledInsideWait.fired = True
            with self._cond:
                os.kill(os.getpid(), signal.SIGINT)
                for _ in range(1000):  # the handler runs here, between two of these steps
                    pass
        return super().wait(timeout)


init = service.Watcher.__init__


def init_signalled(self, *args, **kwargs):
    init(self, *args, **kwargs)
    self.stop_requested = SignalledInsideWait()


service.Watcher.__init__ = init_signalled
from amem.cli import main

main()
"""


def test_a_sigint_that_lands_as_the_watcher_begins_to_wait_stops_it(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-c", SIGINT_INSIDE_THE_WAIT, "watch", str(root), "--sink", "stdout"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:  # wedged: no watcher outlives its test
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, stderr
    assert "amem: watch stopped: 0 observed; stdout: 0 delivered" in stderr


# --- the installed program in a subprocess ----------------------------------------------------------


class AmemProcess:
    def __init__(self, *args: str, tmp_path: Path, name: str) -> None:
        self.err_path = tmp_path / f"{name}.stderr"
        self.out_path = tmp_path / f"{name}.stdout"
        self._err = open(self.err_path, "wb")  # noqa: SIM115 - closed in wait()
        self._out = open(self.out_path, "wb")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "amem", "watch", *args], stdout=self._out, stderr=self._err, env=dict(os.environ)
        )
        wait_until(
            lambda: "observations go to" in self.stderr or self.proc.poll() is not None, message="the watcher to start"
        )
        assert self.proc.poll() is None, self.stderr

    @property
    def stderr(self) -> str:
        return self.err_path.read_text()

    @property
    def stdout(self) -> str:
        return self.out_path.read_text()

    def signal(self, number: int) -> int:
        self.proc.send_signal(number)
        return self.wait()

    def wait(self) -> int:
        try:
            code = self.proc.wait(timeout=20)
        finally:
            self._err.close()
            self._out.close()
        return code

    def kill_if_running(self) -> None:
        """After a failed assertion: no watcher outlives its test."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.wait()


def test_sigkill_while_the_server_is_down_then_restart_delivers_everything(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    server = StandInServer(port=free_port())
    args = (str(root), "--url", server.url, "--debounce-ms", "50")
    first = AmemProcess(*args, tmp_path=tmp_path, name="first")
    second: AmemProcess | None = None
    try:
        for i in range(10):
            write_file(root / f"k{i}.md", f"kill test {i}")
        wait_until(lambda: len(spooled(server.url)) == 10, message="10 spooled observations")
        wait_until(lambda: "cannot deliver" in first.stderr, message="the outage to be reported")
        assert first.signal(signal.SIGKILL) == -signal.SIGKILL
        server.start()
        second = AmemProcess(*args, tmp_path=tmp_path, name="second")
        wait_until(lambda: len(server.stored()) == 10, message="the 10 observations delivered")
        assert sorted(r["files"][0] for r in server.stored()) == [f"k{i}.md" for i in range(10)]
        wait_until(lambda: not spooled(server.url), message="the spool to empty")
        assert second.signal(signal.SIGTERM) == 0
        assert "resending 10 spooled observation(s)" in second.stderr
        assert "watch stopped: 0 observed; server: 10 delivered, 0 spooled, 0 failed" in second.stderr
    finally:
        server.stop()
        for process in (first, second):
            if process is not None:
                process.kill_if_running()


def test_sigterm_flushes_pending_changes_and_exits_0(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    watcher = AmemProcess(str(root), "--sink", "stdout", "--debounce-ms", "60000", tmp_path=tmp_path, name="t")
    # No wait: the kernel queues the event before write() returns, and a stopping watcher reads what is queued.
    write_file(root / "pending.md", "flushed on exit")
    assert watcher.signal(signal.SIGTERM) == 0
    [line] = watcher.stdout.splitlines()
    assert json.loads(line)["data"]["content"] == "pending.md (15 bytes)\n\nflushed on exit"
    assert "watch stopped: 1 observed; stdout: 1 delivered" in watcher.stderr
    assert "Traceback" not in watcher.stderr


def test_stdout_reader_going_away_stops_the_watcher(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    err = tmp_path / "pipe.stderr"
    with open(err, "wb") as err_handle:
        proc = subprocess.Popen(
            [sys.executable, "-m", "amem", "watch", str(root), "--sink", "stdout", "--debounce-ms", "50"],
            stdout=subprocess.PIPE,
            stderr=err_handle,
        )
        wait_until(lambda: "observations go to" in err.read_text(), message="the watcher to start")
        write_file(root / "one.md", "1")
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert json.loads(first)["data"]["files"] == ["one.md"]
        proc.stdout.close()  # like `| head -1`
        for i in range(3):
            write_file(root / f"more{i}.md", "more")
            time.sleep(0.1)
        assert proc.wait(timeout=20) == 0
    assert "Traceback" not in err.read_text() and "Exception ignored" not in err.read_text()
