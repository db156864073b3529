"""The console script's fast path (`amem.index.keeper_fast`): with a live keeper, `amem search`, `read` and
`list` are answered before Click, the config loader or any command module loads. What it prints, on both
streams, and its exit code are the command's own, byte for byte; it answers only a plain command line and a
config of defaults, environment and `--vault` (never a config file), and on anything else, or any failure,
the command runs through Click as it always did, asking the keeper at most once in all. Without a keeper,
`read` and `list` of a plain command line run in the process before Click (any config), with the same
output; a failure goes through Click."""

from __future__ import annotations

import errno
import fcntl
import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amem import __version__, interrupt
from amem.config import KEYS, load_config
from amem.errors import AmemError
from amem.index import keeper_ask, keeper_fast
from amem.index.keeper_ask import NO_KEEPER, answer_settings, config_view
from amem.index.keeper_client import INFO_FILE, LOCK_FILE
from tests.conftest import write_file
from tests.installed import amem_bin
from tests.keeperproc import KeeperProcess, start_keeper, wait_until_stopped
from tests.test_keeper_answers import WORDS, example_folder, small_vault, vaults

#: The console script's own entry (`amem.__main__.main`) in a fresh interpreter, writing the modules it
#: loaded to the file its first argument names, however it ends.
PROBE = """
import sys
modules = sys.argv[1]
sys.argv = ["amem", *sys.argv[2:]]
try:
    from amem.__main__ import main
    main()
finally:
    with open(modules, "w") as out:
        out.write(",".join(sorted(sys.modules)))
"""

pytestmark = pytest.mark.usefixtures("short_cache")


class Ran(NamedTuple):
    code: int
    stdout: str
    stderr: str
    #: answered before Click loaded
    fast: bool
    #: answered by a keeper (no SQLite, no index in the process)
    by_keeper: bool


_probes = itertools.count()


def console(tmp_path: Path, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> Ran:
    """`amem ARGS` through the console script's entry, in a subprocess of its own."""
    modules = tmp_path / f"modules-{next(_probes)}"
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(modules), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )
    loaded = set(modules.read_text().split(","))
    by_keeper = "amem.index.keeper_ask" in loaded and "sqlite3" not in loaded and "amem.index.index" not in loaded
    return Ran(done.returncode, done.stdout, done.stderr, "click" not in loaded, by_keeper)


def alone(tmp_path: Path, *args: str, cwd: Path | None = None) -> Ran:
    """`amem ARGS` answered in its own process (AMEM_NO_KEEPER=1), by the installed console script."""
    program = str(amem_bin(tmp_path / "bin") / "amem")
    env = {**os.environ, NO_KEEPER: "1"}
    done = subprocess.run([program, *args], capture_output=True, text=True, timeout=120, env=env, cwd=cwd)
    return Ran(done.returncode, done.stdout, done.stderr, False, False)


def assert_same(fast: Ran, own: Ran) -> None:
    assert (fast.code, fast.stdout, fast.stderr) == (own.code, own.stdout, own.stderr)
    assert "Traceback" not in fast.stderr


# --- the fast path answers, and its answer is the command's own ---------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["search", "auth", "token"],
        ["search", "auth", "--limit", "1", "token"],
        ["search", "--limit=2", "--tag", "auth", "--tag=auth", "token"],
        ["search", "--exact-title", "keys"],
        ["search", "--folder", "notes", "--explain", "--no-semantic", "--", "--limit", "-"],
        ["search", "认证"],
        ["read", "notes/auth", "--depth", "2"],
        ["read", "Keys", "--max-chars=10"],
        ["read", "--depth", "0", "daily/today.md"],
        ["list"],
        ["list", "notes/", "--sort", "modified", "--limit", "1"],
        ["list", "--since", "1d", "--tag", "auth"],
    ],
)
def test_with_a_keeper_the_console_script_answers_before_click_loads(
    tmp_path: Path, vault: Path, keeper: KeeperProcess, args: list[str]
) -> None:
    small_vault(vault)
    fast = console(tmp_path, *args)
    assert fast.fast and fast.by_keeper, fast.stderr
    assert_same(fast, alone(tmp_path, *args))


def test_the_global_vault_option_and_a_vault_of_the_project_are_found(
    tmp_path: Path, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    inner = project / ".amem" / "memory"
    small_vault(inner)
    (project / "src" / "deep").mkdir(parents=True)
    monkeypatch.delenv("AMEM_VAULT")
    monkeypatch.chdir(project)
    started = start_keeper()
    try:
        for where, args in (
            (project / "src" / "deep", ["search", "token"]),  # the project's vault, found from below
            (tmp_path, ["--vault", str(inner), "list"]),
            (project, ["--vault=.amem/memory", "read", "notes/keys"]),
        ):
            fast = console(tmp_path, *args, cwd=where)
            assert fast.fast and fast.by_keeper, (args, fast.stderr)
            assert_same(fast, alone(tmp_path, *args, cwd=where))
    finally:
        started.stop(signal.SIGKILL)


def test_an_operations_own_error_is_the_commands_own(tmp_path: Path, vault: Path, keeper: KeeperProcess) -> None:
    small_vault(vault)
    for args in (["read", "no/such"], ["read", "../outside"], ["list", "--since", "someday"]):
        fast = console(tmp_path, *args)
        own = alone(tmp_path, *args)
        assert own.code != 0
        assert not fast.by_keeper  # refused by the keeper, answered through Click
        assert_same(fast, own)


#: Command lines the fast path leaves to Click: help, completion, options it does not take as given (an
#: unknown one, one given twice, a value Click converts or refuses, a short option), a missing argument.
DECLINED = [
    ["search", "--help"],
    ["search", "-h", "x"],
    ["--help"],
    ["--version"],
    ["search"],
    ["search", "x", "--limit", "0"],
    ["search", "x", "--limit", "+3"],
    ["search", "x", "--limit", "3", "--limit", "4"],
    ["search", "x", "--semantic", "--no-semantic"],
    ["search", "x", "--explain=yes"],
    ["search", "x", "--limit"],
    ["search", "x", "--nope"],
    ["search", "x", "--folder", "-x"],
    ["read"],
    ["read", "a", "b"],
    ["read", "x", "--depth", "-1"],
    ["list", "a", "b"],
    ["list", "--sort", "Modified"],
    ["--vault", "", "list"],
    ["--config", "none.yaml", "list"],
    ["search", "x", "--vault", "elsewhere"],
    ["help", "search"],
]


@pytest.mark.parametrize("args", DECLINED, ids=" ".join)
def test_what_the_fast_path_cannot_tell_exactly_goes_through_click(
    tmp_path: Path, vault: Path, keeper: KeeperProcess, args: list[str]
) -> None:
    small_vault(vault)
    fast = console(tmp_path, *args)
    assert not fast.fast
    assert_same(fast, alone(tmp_path, *args))


@pytest.mark.parametrize("where", ["project", "user"])
def test_with_a_config_file_the_keeper_is_asked_with_the_files_config(
    tmp_path: Path, vault: Path, keeper: KeeperProcess, where: str
) -> None:
    small_vault(vault)
    folder = Path.cwd() / ".amem" if where == "project" else Path(os.environ["XDG_CONFIG_HOME"]) / "amem"
    write_file(folder / "config.yaml", "maxSearchResults: 1\nnoSuchKey: 1\n")
    fast = console(tmp_path, "search", "token")
    assert fast.fast and fast.by_keeper, fast.stderr  # asked with the file's config, before Click loads
    assert len(json.loads(fast.stdout)["hits"]) == 1  # the file's value holds
    assert "noSuchKey" in fast.stderr  # and its warning is said
    assert_same(fast, alone(tmp_path, "search", "token"))


@pytest.mark.parametrize(
    "env",
    [
        {NO_KEEPER: "1"},
        {"_AMEM_COMPLETE": "bash_complete", "COMP_WORDS": "amem search", "COMP_CWORD": "1"},
        {"AMEM_CONFIG": "elsewhere.yaml"},
        {"AMEM_SEMANTIC_MODEL": "./model"},
        {"AMEM_TZ": "Nowhere/Atlantis"},
        {"AGENTMEMORY_FS_WATCH_IGNORE": "(unclosed"},
    ],
    ids=lambda env: next(iter(env)),
)
def test_an_environment_the_fast_path_does_not_judge_is_the_config_loaders_to_judge(
    tmp_path: Path, vault: Path, keeper: KeeperProcess, env: dict[str, str]
) -> None:
    small_vault(vault)
    fast = console(tmp_path, "search", "token", env=env)
    # the loader takes AMEM_SEMANTIC_MODEL's folder (the search says the model is not there): the command
    # then runs in the process; the loader refuses the others, and Click's path reports it
    assert fast.fast == ("AMEM_SEMANTIC_MODEL" in env)
    program = str(amem_bin(tmp_path / "bin") / "amem")
    own = subprocess.run(
        [program, "search", "token"], capture_output=True, text=True, env={**os.environ, **env, NO_KEEPER: "1"}
    )
    assert (fast.code, fast.stdout, fast.stderr) == (own.returncode, own.stdout, own.stderr)


def test_an_environment_it_judges_is_judged_as_the_config_does(
    tmp_path: Path, vault: Path, keeper: KeeperProcess
) -> None:
    small_vault(vault)
    for env in (
        {"AMEM_TZ": "Asia/Shanghai"},
        {"AMEM_TZ": " +05:30 "},
        {"AMEM_TZ": "utc"},
        {"AGENTMEMORY_FS_WATCH_IGNORE": "^build/, \\.tmp$"},
        {"AGENTMEMORY_URL": "http://h:1", "AGENTMEMORY_FS_WATCH_ALLOW_BINARY": "yes", "AMEM_PROFILE": "p"},
    ):
        fast = console(tmp_path, "search", "token", env=env)
        assert fast.fast, (env, fast.stderr)
        program = str(amem_bin(tmp_path / "bin") / "amem")
        own = subprocess.run(
            [program, "search", "token"], capture_output=True, text=True, env={**os.environ, **env, NO_KEEPER: "1"}
        )
        assert (fast.code, fast.stdout, fast.stderr) == (own.returncode, own.stdout, own.stderr), env


@st.composite
def command_lines(draw: st.DrawFn, folder: str, names: list[str]) -> tuple[list[str], bool]:
    """A command line as a user may spell it (options before, between and after the arguments, `=` or
    not, the global --vault, `--`), and whether the fast path may answer it: now and then it holds an
    option only Click may judge."""
    kind = draw(st.sampled_from(["search", "read", "list"]))
    options: list[list[str]] = []
    if kind == "search":
        positional = draw(st.lists(st.sampled_from(WORDS), min_size=0, max_size=3))
        options = draw(
            st.lists(
                st.sampled_from(
                    [
                        ["--limit", "2"],
                        ["--limit=1"],
                        ["--tag", "auth"],
                        ["--tag=ops"],
                        ["--folder", folder + "/sub"],
                        ["--exact-title", draw(st.sampled_from([*WORDS, *names]))],
                        ["--explain"],
                        ["--no-semantic"],
                    ]
                ),
                max_size=3,
                unique_by=lambda o: o[0].split("=")[0] if o[0] != "--tag" and not o[0].startswith("--tag=") else id(o),
            )
        )
    elif kind == "read":
        target = draw(st.sampled_from([*names, "nothing", "auth", "KEYS", "c"]))
        positional = [f"{folder}/{target}" if draw(st.booleans()) else target]
        options = draw(st.lists(st.sampled_from([["--depth", "0"], ["--depth=3"], ["--max-chars", "5"]]), max_size=1))
    else:
        positional = draw(st.lists(st.sampled_from([folder + "/", folder + "/sub", "", "z"]), max_size=1))
        options = draw(
            st.lists(
                st.sampled_from([["--tag", "auth"], ["--sort", "created"], ["--sort=id"], ["--limit", "1"]]),
                max_size=2,
                unique_by=lambda o: o[0].split("=")[0],
            )
        )
    plain = draw(st.integers(0, 9)) > 0
    if not plain:
        options.append(draw(st.sampled_from([["--limit", "0"], ["--bogus"], ["-h"], ["--depth", "x"]])))
    words = [word for option in options for word in option]
    cut = draw(st.integers(0, len(positional)))
    line = [*positional[:cut], *words, *positional[cut:]]
    if kind == "search" and draw(st.booleans()) and positional:
        line = [*words, "--", *positional]
    prefix = ["--vault", os.environ["AMEM_VAULT"]] if draw(st.booleans()) else []
    return [*prefix, kind, *line], plain


def assert_a_random_line_alike(
    tmp_path: Path, vault: Path, data: st.DataObject, notes: dict[str, str], commands: tuple[str, ...]
) -> None:
    """A random command line of a random vault prints what the command prints; a plain one of `commands`
    that succeeds is answered before Click, and any other line is not."""
    folder = example_folder(vault, notes)
    args, plain = data.draw(command_lines(folder, sorted(notes)))
    fast = console(tmp_path, *args)
    own = alone(tmp_path, *args)
    assert_same(fast, own)
    answered = plain and (args[2] if args[0] == "--vault" else args[0]) in commands
    if answered and own.code == 0:
        assert fast.fast, (args, fast.stderr)
    if not answered:
        assert not fast.fast, args


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data(), vaults())
def test_the_fast_path_equals_the_commands_own_over_random_vaults_and_command_lines(
    tmp_path: Path, vault: Path, keeper: KeeperProcess, data: st.DataObject, notes: dict[str, str]
) -> None:
    assert_a_random_line_alike(tmp_path, vault, data, notes, ("search", "read", "list"))


# --- without a keeper: read and list run in the process, still before Click ------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["read", "notes/auth", "--depth", "2"],
        ["read", "Keys", "--max-chars=10"],
        ["read", "bad"],  # a note that is not UTF-8: its warning, after the result
        ["--vault", "VAULT", "read", "daily/today.md"],
        ["list"],
        ["list", "notes/", "--sort", "modified", "--limit", "1"],
        ["list", "--since", "1d", "--tag", "auth"],
        ["search", "auth", "token"],
        ["search", "--limit=1", "--tag", "auth", "token", "--explain"],
        ["search", "--exact-title", "keys", "--no-semantic"],
        ["search", "认证", "--folder", "daily"],
        ["search", "--semantic", "token"],
    ],
)
def test_without_a_keeper_read_list_and_search_run_in_the_process_before_click_loads(
    tmp_path: Path, vault: Path, args: list[str]
) -> None:
    small_vault(vault)
    args = [str(vault) if arg == "VAULT" else arg for arg in args]
    fast = console(tmp_path, *args)
    assert fast.fast and not fast.by_keeper, fast.stderr
    assert_same(fast, alone(tmp_path, *args))


@pytest.mark.parametrize(
    "args",
    [
        ["read", "nothing"],  # no such note: the command's own error
        ["read", "../outside"],
        ["list", "--since", "yesterday-ish"],
        ["list", "../up"],
        ["search", "token", "--folder", "../up"],
    ],
)
def test_without_a_keeper_what_fails_goes_through_click_and_fails_as_the_command_does(
    tmp_path: Path, vault: Path, args: list[str]
) -> None:
    small_vault(vault)
    fast = console(tmp_path, *args)
    assert not fast.fast
    assert_same(fast, alone(tmp_path, *args))


def test_without_a_keeper_a_config_file_is_read_as_the_command_reads_it(tmp_path: Path, vault: Path) -> None:
    small_vault(vault)
    write_file(Path(os.environ["XDG_CONFIG_HOME"]) / "amem/config.yaml", "maxLinkDepth: 0\nnoSuchKey: 1\n")
    fast = console(tmp_path, "read", "notes/auth")
    assert fast.fast, fast.stderr
    assert json.loads(fast.stdout)["linkedNotes"] == []  # the file's value holds
    assert "noSuchKey" in fast.stderr  # and its warning is said
    assert_same(fast, alone(tmp_path, "read", "notes/auth"))
    write_file(Path(os.environ["XDG_CONFIG_HOME"]) / "amem/config.yaml", "maxLinkDepth: deep\n")
    broken = console(tmp_path, "read", "notes/auth")
    assert not broken.fast
    assert_same(broken, alone(tmp_path, "read", "notes/auth"))


def test_without_a_keeper_a_read_remembers_what_it_saw_as_the_command_does(tmp_path: Path, vault: Path) -> None:
    small_vault(vault)
    first = console(tmp_path, "read", "notes/keys")
    assert first.fast and json.loads(first.stdout)["modifiedExternally"] is False
    write_file(vault / "notes/keys.md", "# Keys\n\nChanged by another program.\n")
    changed = console(tmp_path, "read", "notes/keys")
    assert changed.fast and json.loads(changed.stdout)["modifiedExternally"] is True
    assert json.loads(alone(tmp_path, "read", "notes/keys").stdout)["modifiedExternally"] is False  # now seen


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data(), vaults())
def test_without_a_keeper_the_fast_path_equals_the_commands_own_over_random_vaults_and_command_lines(
    tmp_path: Path, vault: Path, data: st.DataObject, notes: dict[str, str]
) -> None:
    assert_a_random_line_alike(tmp_path, vault, data, notes, keeper_fast.IN_PROCESS)


def test_without_a_keeper_a_full_or_gone_stdout_fails_as_the_command_does(tmp_path: Path, vault: Path) -> None:
    small_vault(vault)
    assert console(tmp_path, "read", "notes/auth").fast
    assert_stdout_failures_alike(tmp_path, ["read", "notes/auth"])


def test_without_a_keeper_a_swallowed_ctrl_c_ends_the_read_before_it_runs(
    vault: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    small_vault(vault)
    interrupt.install()
    monkeypatch.setattr(interrupt, "_swallowed", True)
    from amem.__main__ import _run_here

    assert keeper_fast.answer(["read", "notes/auth"], _run_here) == 130
    out, err = capsys.readouterr()
    assert out == ""
    assert json.loads(err) == {"error": {"code": "interrupted", "message": "interrupted (Ctrl-C)"}}


def test_without_a_keeper_a_build_shows_its_progress_on_a_terminal_as_the_command_does(
    vault: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import io

    from amem.__main__ import _run_here

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    for n in range(300):
        write_file(vault / f"n{n}.md", f"# Note {n}\n\nalpha {n}\n")
    write_file(vault / "bad.md", b"# Bad\n\nalpha \xff\n")
    clock = iter(range(0, 10**6, 5))
    monkeypatch.setattr("amem.report.time.monotonic", lambda: float(next(clock)))  # each look: 5 s later
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert keeper_fast.answer(["search", "alpha"], _run_here) == 0
    assert json.loads(capsys.readouterr().out)["total"] == 300
    said = terminal.getvalue()
    assert "amem: indexing 301/301" in said  # the cold build's progress, as it goes
    assert said.rstrip("\n").endswith("amem: warning: skipped note 'bad.md': it is not UTF-8 text")  # then


# --- the fallback: whatever the keeper does, the command answers right, asking once -----------------


def test_a_stopped_keeper_costs_one_timeout_and_a_right_answer(tmp_path: Path, vault: Path) -> None:
    small_vault(vault)
    expected = alone(tmp_path, "search", "token")
    started = start_keeper()
    try:
        started.proc.send_signal(signal.SIGSTOP)
        wait_until_stopped(started.proc.pid)
        fast = console(tmp_path, "search", "token")
        started.proc.send_signal(signal.SIGCONT)
    finally:
        started.stop(signal.SIGKILL)
    assert fast.fast and not fast.by_keeper  # answered in this process once the keeper did not answer
    assert_same(fast, expected)


class FakeKeeper:
    """A keeper's lock, keeper.json and socket, held by this process: every request is counted and
    answered with an error, as a refusing keeper does."""

    def __init__(self, cache: Path) -> None:
        cache.mkdir(parents=True, exist_ok=True)
        self.lock = os.open(cache / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self.lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(cache / "fake.sock"))
        self.listener.listen(8)
        described = {"pid": 1, "socket": "fake.sock", "answers": keeper_ask.ANSWERS, "amem": __version__}
        (cache / INFO_FILE).write_text(json.dumps(described))
        self.requests: list[dict[str, Any]] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with conn:
                data = b""
                while not data.endswith(b"\n"):
                    piece = conn.recv(65536)
                    if not piece:
                        break
                    data += piece
                self.requests.append(json.loads(data))
                conn.sendall(b'{"error": "refused", "code": "not_found"}\n')

    def close(self) -> None:
        self.listener.close()
        os.close(self.lock)


@pytest.fixture
def fake_keeper(vault: Path) -> Any:
    vault.mkdir(parents=True, exist_ok=True)
    fake = FakeKeeper(load_config().cache_dir)
    try:
        yield fake
    finally:
        fake.close()


def test_a_refused_request_is_not_asked_again_by_the_command(
    vault: Path, fake_keeper: FakeKeeper, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(keeper_ask, "asked", False)
    assert keeper_fast.answer(["search", "token", "--limit", "3"]) is None
    assert len(fake_keeper.requests) == 1
    config = load_config()
    sent = fake_keeper.requests[0]
    args = {"query": "token", "limit": 3, "exactTitle": None, "tags": [], "folder": None, "explain": False}
    # the very request the command's own path sends
    assert sent == {
        "v": 1,
        "op": "search",
        "amem": __version__,
        "settings": answer_settings(config),
        "tz": os.environ.get("TZ"),
        "config": config_view(config),
        "args": args,
    }
    assert keeper_ask.ask(config, "search", args) is None
    assert len(fake_keeper.requests) == 1  # the command answers itself without asking again


def test_with_a_config_file_a_refused_request_is_answered_here_and_not_asked_again(
    vault: Path, fake_keeper: FakeKeeper, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from amem.__main__ import _run_here

    small_vault(vault)
    write_file(Path(os.environ["XDG_CONFIG_HOME"]) / "amem/config.yaml", "maxSearchResults: 1\n")
    monkeypatch.setattr(keeper_ask, "asked", False)
    assert keeper_fast.answer(["search", "token"], _run_here) == 0
    assert len(json.loads(capsys.readouterr().out)["hits"]) == 1  # answered here, with the file's value
    assert len(fake_keeper.requests) == 1 and fake_keeper.requests[0]["config"]["maxSearchResults"] == 1
    assert keeper_ask.ask(load_config(), "search", {"query": "token"}) is None
    assert len(fake_keeper.requests) == 1


def test_a_ctrl_c_swallowed_while_amem_loaded_ends_the_run_before_it_asks(
    vault: Path, fake_keeper: FakeKeeper, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    interrupt.install()
    monkeypatch.setattr(interrupt, "_swallowed", True)
    assert keeper_fast.answer(["search", "token"]) == 130
    out, err = capsys.readouterr()
    assert out == ""
    assert json.loads(err) == {"error": {"code": "interrupted", "message": "interrupted (Ctrl-C)"}}
    assert fake_keeper.requests == []


def output_of(tmp_path: Path, args: list[str], stdout: int, *, no_keeper: bool) -> tuple[int, str]:
    env = {**os.environ, **({NO_KEEPER: "1"} if no_keeper else {})}
    program = str(amem_bin(tmp_path / "bin") / "amem")
    done = subprocess.run([program, *args], stdout=stdout, stderr=subprocess.PIPE, text=True, env=env, timeout=120)
    return done.returncode, done.stderr


def assert_stdout_failures_alike(tmp_path: Path, args: list[str]) -> None:
    """A full stdout and one whose reader went away fail the fast path as they fail the command."""
    with open("/dev/full", "w") as full:
        assert output_of(tmp_path, args, full.fileno(), no_keeper=False) == output_of(
            tmp_path, args, full.fileno(), no_keeper=True
        )
    results = []
    for no_keeper in (False, True):
        read, write = os.pipe()
        os.close(read)  # the reader went away before the answer came
        try:
            results.append(output_of(tmp_path, args, write, no_keeper=no_keeper))
        finally:
            os.close(write)
    assert results[0] == results[1]
    assert results[0][0] == 1


def test_a_full_or_gone_stdout_fails_as_the_command_does(tmp_path: Path, vault: Path, keeper: KeeperProcess) -> None:
    small_vault(vault)
    assert_stdout_failures_alike(tmp_path, ["search", "token"])


def test_on_a_terminal_the_answer_is_indented_as_the_command_prints_it(
    tmp_path: Path, vault: Path, keeper: KeeperProcess
) -> None:
    small_vault(vault)
    outputs = []
    for no_keeper in (False, True):
        leader, follower = os.openpty()
        try:
            code, _ = output_of(tmp_path, ["read", "notes/auth"], follower, no_keeper=no_keeper)
            os.close(follower)
            chunks = []
            while True:
                try:
                    piece = os.read(leader, 65536)
                except OSError as exc:  # EIO: the terminal's other side is closed
                    assert exc.errno == errno.EIO
                    break
                if not piece:
                    break
                chunks.append(piece)
        finally:
            os.close(leader)
        outputs.append((code, b"".join(chunks)))
    assert outputs[0] == outputs[1]
    assert outputs[0][1].startswith(b"{\r\n  ")


# --- the config it reads is the config loader's --------------------------------------------------------


def test_every_variable_the_config_reads_is_known_to_the_fast_path() -> None:
    assert {name for key in KEYS for name in key.env} == keeper_fast.ENVIRONMENT


@st.composite
def environments(draw: st.DrawFn, root: Path) -> tuple[dict[str, str], str | None, bool | None, Path]:
    env: dict[str, str] = {}
    choice = draw(st.sampled_from(["unset", "absolute", "relative", "home", "blank", "dotted"]))
    env["AMEM_VAULT"] = {
        "unset": "",
        "absolute": str(root / "v"),
        "relative": "v",
        "home": "~/v",
        "blank": "  ",
        "dotted": "./a/../v/",
    }[choice]
    env["XDG_CACHE_HOME"] = draw(st.sampled_from([str(root / "c"), "relative/c", "", str(root / "c") + "/"]))
    env["XDG_CONFIG_HOME"] = draw(st.sampled_from([str(root / "conf"), "", "rel"]))
    env["AMEM_TZ"] = draw(
        st.sampled_from(["", "UTC", "z", "+08:00", "-0330", "+24:00", "+05:61", "Europe/Paris", "No/Where"])
    )
    env["AMEM_SEMANTIC_MODEL"] = draw(st.sampled_from(["", "static", "minilm", " minilm ", "./m"]))
    env["AGENTMEMORY_FS_WATCH_IGNORE"] = draw(st.sampled_from(["", "a,b", "(", " , "]))
    env["AGENTMEMORY_FS_WATCH_ALLOW_BINARY"] = draw(st.sampled_from(["", "yes", "nonsense"]))
    flag = draw(st.sampled_from([None, "v", str(root / "v"), "~/v", "sub/../v"]))
    semantic = draw(st.sampled_from([None, True, False]))
    cwd = draw(st.sampled_from([root / "w", root / "w" / "deep", root / "p" / "deep", root / "g" / "deep"]))
    return env, flag, semantic, cwd


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_the_fast_paths_config_is_the_config_loaders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: st.DataObject
) -> None:
    root = tmp_path / "r"
    home = Path(os.environ["HOME"])
    for folder in (root / "w" / "deep", root / "p" / ".amem" / "memory", root / "p" / "deep", root / "g" / ".git"):
        folder.mkdir(parents=True, exist_ok=True)
    (root / "g" / "deep").mkdir(exist_ok=True)
    for base in (root / "w", root / "w" / "deep", root / "p", root / "p" / "deep", root / "g" / "deep", root, home):
        (base / "v").mkdir(exist_ok=True)
    env, flag, semantic, cwd = data.draw(environments(root))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(cwd)
    plain = keeper_fast.plain_config(flag, semantic)
    try:
        config = load_config(vault=flag, flags={"semantic": semantic})
    except AmemError:
        assert plain is None
        return
    model = env["AMEM_SEMANTIC_MODEL"].strip()
    judged = model in ("", "static", "minilm") and os.path.isdir(config.vault_root)
    if not judged:
        return  # declined or not, whatever it answers is checked by the keeper's settings
    assert plain is not None, env
    assert Path(plain.cache) == config.cache_dir
    assert plain.settings == answer_settings(config)
    assert plain.view == config_view(config)


def test_every_option_the_fast_path_takes_is_the_commands_own_of_the_same_kind() -> None:
    # The fast path parses a command line itself: an option it takes must be one the command declares, with
    # the value Click would accept, or the fast path would answer a line Click refuses (or read it
    # otherwise). An option it does not take only sends the command through Click.
    import importlib

    import click

    for name, options in keeper_fast.OPTIONS.items():
        command = importlib.import_module(f"amem.commands.{name}").command
        declared = {
            opt: (param, opt in param.secondary_opts)
            for param in command.params
            if isinstance(param, click.Option)
            for opt in (*param.opts, *param.secondary_opts)
        }
        for option, kind in options.items():
            assert option in declared, f"amem {name} has no {option}"
            param, secondary = declared[option]
            if kind in ("on", "off"):
                assert param.is_bool_flag and secondary == (kind == "off"), (name, option)
            elif kind == "flag":
                assert param.is_flag and not param.secondary_opts, (name, option)
            elif kind == "texts":
                assert param.multiple and not param.is_flag, (name, option)
            elif kind in ("count", "number"):
                assert isinstance(param.type, click.IntRange), (name, option)
                assert param.type.min == (1 if kind == "count" else 0), (name, option)
                assert param.type.max == keeper_fast.MAX_INTEGER and not param.type.clamp, (name, option)
            elif kind == "sort":
                assert isinstance(param.type, click.Choice), (name, option)
                assert tuple(param.type.choices) == keeper_fast.SORTS, (name, option)
            else:
                assert kind == "text" and not param.is_flag and not param.multiple, (name, option)
        arguments = [p for p in command.params if isinstance(p, click.Argument)]
        fewest, most = keeper_fast.ARGUMENTS[name]
        taken = sum(max(a.nargs, 0) for a in arguments if a.required)
        assert fewest >= taken, name
        if most is not None:
            assert all(a.nargs > 0 for a in arguments) and most <= sum(a.nargs for a in arguments), name
