"""Failures a user can act on: the file system refusing is an `io` error with its own exit code, a
result that cannot be printed says what was written, Ctrl-C is `interrupted`, and stderr holds exactly
one JSON object, never a host path."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from amem.digest import sha1_hex

from .conftest import write_file
from .installed import amem_bin, path_with

#: Without these capabilities root meets file modes as every other user does.
_UNPRIVILEGED = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]


@pytest.fixture
def env(isolated_env: Path, vault: Path, tmp_path: Path) -> dict[str, str]:
    return dict(os.environ, PATH=path_with(amem_bin(tmp_path / "bin")))


def shell(command: str, env: dict[str, str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True, timeout=60, **kwargs)


def one_error(stderr: str) -> dict[str, Any]:
    """The one JSON object stderr must hold, and nothing else."""
    assert stderr.endswith("}\n") and stderr.count("\n") == 1, repr(stderr)
    error: dict[str, Any] = json.loads(stderr)["error"]
    return error


def unprivileged(args: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return args
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: file modes do not apply")
    return [*_UNPRIVILEGED, *args]


# --- the file system refuses ---------------------------------------------------------------------------


def test_writing_to_a_read_only_vault_is_an_io_error(vault: Path, env: dict[str, str]) -> None:
    write_file(vault / "n.md", "n\n")
    subprocess.run(["amem", "search", "n"], env=env, check=True, capture_output=True)  # the cache exists
    vault.chmod(0o555)
    try:
        result = subprocess.run(unprivileged(["amem", "write", "new", "x"]), env=env, capture_output=True, text=True)
    finally:
        vault.chmod(0o755)
    assert result.returncode == 10, result.stderr
    error = one_error(result.stderr)
    assert error["code"] == "io" and "Permission denied" in error["message"]
    assert str(vault) not in error["message"]
    assert sorted(p.name for p in vault.iterdir()) == ["n.md"]


def test_reading_a_note_amem_may_not_read_is_an_io_error(vault: Path, env: dict[str, str]) -> None:
    note = write_file(vault / "secret.md", "s\n")
    note.chmod(0o000)
    try:
        result = subprocess.run(unprivileged(["amem", "read", "secret"]), env=env, capture_output=True, text=True)
    finally:
        note.chmod(0o644)
    assert result.returncode == 10, result.stderr
    error = one_error(result.stderr.split("\n", result.stderr.count("\n") - 1)[-1])
    assert error["code"] == "io" and error["message"] == 'cannot read note "secret.md": Permission denied'


@pytest.mark.parametrize("command", [["read", "n"], ["search", "n"], ["write", "n", "x"]])
def test_a_cache_folder_that_cannot_be_made_is_an_io_error_naming_its_variable(
    amem: Any, vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    write_file(vault / "n.md", "n\n")
    blocker = write_file(tmp_path / "not-a-folder", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    result = amem(*command)
    assert result.exit_code == 10, result.stderr
    error = one_error(result.stderr)
    assert error["code"] == "io" and "the cache folder" in error["message"] and "XDG_CACHE_HOME" in error["message"]
    assert str(tmp_path) not in result.stderr


# --- output that cannot be written ---------------------------------------------------------------------


def test_a_closed_stdout_is_an_io_error(vault: Path, env: dict[str, str]) -> None:
    write_file(vault / "n.md", "n\n")
    result = shell("amem search n >&-", env)
    assert result.returncode == 10
    assert one_error(result.stderr)["code"] == "io"


@pytest.mark.parametrize("redirect", ["> /dev/full", ">&-"])
def test_a_write_whose_result_cannot_be_printed_says_what_it_wrote(
    vault: Path, env: dict[str, str], redirect: str
) -> None:
    result = shell(f"amem write n 'only once' {redirect}", env)
    assert result.returncode == 10
    error = one_error(result.stderr)
    data = (vault / "n.md").read_bytes()
    assert error["code"] == "io" and error["written"] == {"id": "n.md", "version": sha1_hex(data)}
    assert "wrote note" in error["message"]
    assert data.decode().count("only once") == 1


# --- Ctrl-C --------------------------------------------------------------------------------------------


def test_ctrl_c_exits_130_with_one_interrupted_error(vault: Path, env: dict[str, str]) -> None:
    # A SIGINT that comes before the interpreter has started amem kills it as it kills any program (-2, a
    # traceback of the import machinery): on a loaded machine the start can take longer than the wait, which
    # then doubles and the run is redone. Once amem answers (JSON on stderr), the answer must be this one.
    for wait in (1.5, 3, 6, 12, 24):
        proc = subprocess.Popen(
            ["amem", "write", "n", "-"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
        )
        time.sleep(wait)  # started and waiting for stdin
        proc.send_signal(signal.SIGINT)
        # stdin stays open until amem has ended: closing it at once could hand amem an end of input before
        # the signal lands on a loaded machine (an empty append, a usage error), which is not what is tested.
        proc.wait(timeout=30)
        stdout, stderr = proc.communicate(timeout=30)
        if stderr.startswith("{"):  # amem's own answer: the interrupt reached amem
            break
        # Python's own end, before amem ran (-2 and a traceback of the import machinery): nothing written.
        assert not (vault / "n.md").exists()
    assert proc.returncode == 130, stderr
    assert stdout == ""
    assert one_error(stderr)["code"] == "interrupted"
    assert not (vault / "n.md").exists()


def test_a_ctrl_c_that_lands_just_before_the_stdin_read_still_interrupts_it() -> None:
    # A blocking read is interrupted only by a signal that comes while it waits; one that lands just before
    # it starts (or in another thread) leaves Python's handler waiting for the read to return, which on a
    # pipe kept open is never. The helper thread trips SIGINT as the kernel would there: the main thread
    # is not woken. The read of the content must still end, with the interrupt.
    script = (
        "import _thread, signal, threading\n"
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "from amem.commands import content_of\n"
        "threading.Timer(0.5, _thread.interrupt_main).start()\n"
        "try:\n"
        "    content_of('-')\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted')\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        proc.wait(timeout=20)  # stdin stays open (communicate() would close it)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail("the interrupt did not end the read of stdin")
    stdout, stderr = proc.communicate()
    assert stdout == "interrupted\n", stderr


#: Two ways Python drops a Ctrl-C while amem starts: its handler ran inside a weakref callback (the import
#: machinery's module locks have one), where it cannot be raised ("Exception ignored in …"); or the
#: interpreter printed it while it looked at the script's path, before the script ran, and went on.
DROPPED = {
    "in a weakref callback": (
        "class Lock: pass\n"
        "def callback(_): raise KeyboardInterrupt\n"
        "lock = Lock(); ref = weakref.ref(lock, callback); del lock\n"
    ),
    "by the interpreter": "sys.last_value = KeyboardInterrupt()\n",
}


@pytest.mark.parametrize("dropped", sorted(DROPPED))
def test_a_ctrl_c_that_python_dropped_during_start_up_still_ends_the_run(
    vault: Path, env: dict[str, str], dropped: str
) -> None:
    # amem then waited for stdin, the user's Ctrl-C gone.
    where = DROPPED[dropped]
    before, after = (where, "") if dropped == "by the interpreter" else ("", where)
    script = (
        "import signal, sys, weakref\n"
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        f"{before}"
        "from amem.interrupt import install\n"
        "install()\n"
        f"{after}"
        "sys.argv = ['amem', 'write', 'n', '-']\n"
        "from amem.cli import main\n"
        "main()\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    try:
        proc.wait(timeout=20)  # stdin stays open
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail("the interrupt was swallowed: amem waited for stdin")
    stdout, stderr = proc.communicate()
    assert proc.returncode == 130, stderr
    assert stdout == ""
    assert one_error(stderr)["code"] == "interrupted"  # and no "Exception ignored" before it
    assert not (vault / "n.md").exists()


# --- stderr is one JSON object ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args", [["read"], ["read", "--no-such-option"], ["write", "n", "--foo"], ["search", "--limit", "zero", "x"]]
)
def test_usage_errors_are_one_json_object(amem: Any, vault: Path, args: list[str]) -> None:
    result = amem(*args)
    assert result.exit_code == 2
    error = one_error(result.stderr)
    assert error["code"] == "usage" and "(usage: " in error["message"] and f"{args[0]} --help" in error["message"]


def test_bare_amem_prints_help_on_stdout_and_one_usage_error(amem: Any) -> None:
    result = amem()
    assert result.exit_code == 2
    assert result.stdout.startswith("Usage: ") and "Commands:" in result.stdout
    error = one_error(result.stderr)
    assert error["code"] == "usage" and "Commands:" not in error["message"]


# --- a damaged lock folder is rebuilt --------------------------------------------------------------------


def test_a_damaged_lock_folder_is_rebuilt_not_a_repeated_failure(amem: Any, vault: Path, isolated_env: Path) -> None:
    assert amem("write", "n", "one").exit_code == 0
    cache = Path(os.environ["XDG_CACHE_HOME"]) / "amem" / "vaults"
    (lock,) = cache.glob("*/locks/*.lock")
    lock.unlink()
    lock.mkdir()  # a folder where the lock file belongs
    (lock / "junk").write_text("x")
    assert amem("write", "n", "two").exit_code == 0
    locks = lock.parent
    shutil.rmtree(locks)
    locks.write_text("a file where the lock folder belongs")
    result = amem("write", "n", "three")
    assert result.exit_code == 0, result.stderr
    assert amem("write", "n", "four").exit_code == 0
    assert all(word in (vault / "n.md").read_text() for word in ("one", "two", "three", "four"))
    (cache_dir,) = cache.iterdir()
    shutil.rmtree(cache_dir)
    cache_dir.write_text("a file where the vault's cache folder belongs")
    for args in (["write", "n", "five"], ["read", "n"], ["search", "five"]):
        result = amem(*args)
        assert result.exit_code == 0, (args, result.stderr)
    assert "five" in (vault / "n.md").read_text()


def test_a_note_that_becomes_readable_again_is_found_with_its_mtime_unchanged(vault: Path, env: dict[str, str]) -> None:
    """chmod 000 then 644 changes no mtime: the index must not remember the problem after its cause is gone."""
    note = write_file(vault / "locked.md", "# Locked\nfindme\n")
    write_file(vault / "other.md", "other\n")
    stamp = os.stat(note)
    note.chmod(0o000)
    try:
        hidden = subprocess.run(unprivileged(["amem", "search", "findme"]), env=env, capture_output=True, text=True)
    finally:
        note.chmod(0o644)
    os.utime(note, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert hidden.returncode == 0, hidden.stderr
    assert json.loads(hidden.stdout)["total"] == 0
    assert "cannot read it" in hidden.stderr and str(vault) not in hidden.stderr
    found = subprocess.run(unprivileged(["amem", "search", "findme"]), env=env, capture_output=True, text=True)
    assert found.returncode == 0 and found.stderr == "", found.stderr
    assert [hit["id"] for hit in json.loads(found.stdout)["hits"]] == ["locked.md"]


def test_a_ctrl_c_that_comes_out_wrapped_is_still_an_interrupt(capsys: pytest.CaptureFixture[str]) -> None:
    """A SIGINT landing while an import runs a class body comes out as the RuntimeError of __set_name__
    (seen as `unexpected RuntimeError` with exit 1): amem still reports the user's interrupt."""
    from amem.outcome import run_translating_errors

    def import_interrupted() -> None:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as exc:
            raise RuntimeError("Error calling __set_name__ on 'cached_property' instance") from exc

    assert run_translating_errors(import_interrupted) == 130
    assert json.loads(capsys.readouterr().err)["error"]["code"] == "interrupted"
