"""The keeper answers `amem search`, `read` and `list` (issue 22 item 2), with real processes: the command
sends its request over the keeper's socket and prints the answer, which is the one it would have printed
itself (stdout, stderr, exit code), never loading SQLite or the index. Any failure of the keeper (none, a
stale socket, killed mid-request, stopped, of another amem, an answer too long) leaves the command to
answer in its own process, as right as ever; every write made before a command is in its answer; and a
request never reaches outside the vault or asks for unbounded work."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amem import __version__
from amem.config import load_config
from amem.keeperproto.ask import ANSWER_TIMEOUT, MAX_ANSWER, NO_KEEPER, answer_settings, config_view
from amem.keeperproto.client import INFO_FILE, SOCKET_FILE
from tests.conftest import write_file
from tests.installed import amem_bin
from tests.keeperproc import KeeperProcess, start_keeper, wait_until_stopped

#: Runs amem in a fresh interpreter as the console script does, and writes the modules it loaded to the
#: file named by its first argument (stdout, stderr and the exit code stay the command's own).
PROBE = """
import sys
from amem.cli import run
code = run(sys.argv[2:])
with open(sys.argv[1], "w") as out:
    out.write(",".join(sorted(sys.modules)))
sys.exit(code)
"""


class Ran(NamedTuple):
    code: int
    stdout: str
    stderr: str
    #: the command loaded no SQLite and no index: a keeper answered it
    by_keeper: bool


_probes = itertools.count()


def probe(tmp_path: Path, *args: str, **env: str) -> Ran:
    """`amem ARGS` in a subprocess of its own, and whether a keeper answered it."""
    modules = tmp_path / f"modules-{next(_probes)}"
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(modules), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
    )
    loaded = set(modules.read_text().split(",")) if modules.exists() else set()
    assert "amem.cli" in loaded, done.stderr
    by_keeper = "amem.keeperproto.ask" in loaded and "sqlite3" not in loaded and "amem.index.index" not in loaded
    return Ran(done.returncode, done.stdout, done.stderr, by_keeper)


def alone(tmp_path: Path, *args: str) -> Ran:
    """`amem ARGS` answered in its own process (AMEM_NO_KEEPER=1), by the installed console script."""
    program = str(amem_bin(tmp_path / "bin") / "amem")
    done = subprocess.run(
        [program, *args], capture_output=True, text=True, timeout=120, env={**os.environ, NO_KEEPER: "1"}
    )
    return Ran(done.returncode, done.stdout, done.stderr, False)


def assert_same(kept: Ran, own: Ran) -> None:
    assert (kept.code, kept.stdout, kept.stderr) == (own.code, own.stdout, own.stderr)
    assert "Traceback" not in kept.stderr


#: Every test here runs with a cache folder whose path is short enough for the keeper's socket.
pytestmark = pytest.mark.usefixtures("short_cache")


def small_vault(vault: Path) -> None:
    write_file(vault / "notes/auth.md", "---\ntags: [auth]\n---\n# Auth tokens\n\nHow a token is checked. [[keys]]\n")
    write_file(vault / "notes/keys.md", "# Keys\n\nSigning keys rotate; see [[auth]].\n")
    write_file(vault / "daily/today.md", "# Today\n\nauth work, 认证令牌 and a token.\n")
    write_file(vault / "bad.md", b"# Bad\n\nnot utf-8 \xff token\n")


# --- the keeper answers, and its answer is the command's own ------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["search", "auth", "token"],
        ["search", "--exact-title", "keys"],
        ["search", "token", "--tag", "auth", "--limit", "1"],
        ["read", "notes/auth", "--depth", "2"],
        ["read", "Keys", "--max-chars", "10"],
        ["list", "notes/", "--sort", "modified"],
        ["list", "--since", "1d"],
    ],
)
def test_a_keeper_answers_without_the_index_loaded_as_the_command_would(
    tmp_path: Path, vault: Path, keeper: KeeperProcess, args: list[str]
) -> None:
    small_vault(vault)
    kept = probe(tmp_path, *args)
    assert kept.by_keeper, kept.stderr
    assert kept.code == 0, kept.stderr
    assert_same(kept, alone(tmp_path, *args))


def test_an_operations_own_error_is_the_commands_own(tmp_path: Path, vault: Path, keeper: KeeperProcess) -> None:
    small_vault(vault)
    for args in (
        ["read", "no/such"],
        ["read", "../outside"],
        ["list", "--since", "someday"],
        ["search", "x", "--folder", "../up"],
    ):
        kept = probe(tmp_path, *args)
        own = alone(tmp_path, *args)
        assert own.code != 0
        assert_same(kept, own)


_ids = itertools.count()


def example_folder(vault: Path, notes: dict[str, str]) -> str:
    """A folder of its own for one hypothesis example, holding `notes` (the last example's removed)."""
    for old in vault.glob("ex*"):
        shutil.rmtree(old)
    folder = f"ex{next(_ids)}"
    for name, text in notes.items():
        write_file(vault / folder / f"{name}.md", text)
    return folder


WORDS = ["auth", "token", "Token", "keys", "session", "cache", "认证", "令牌", "the", "a", "file", "files", "x"]


@st.composite
def vaults(draw: st.DrawFn) -> dict[str, str]:
    """Up to 8 notes (a folder of their own each time): titles, bodies, tags, links among them."""
    names = draw(st.lists(st.sampled_from(["a", "b", "sub/c", "sub/d", "deep/x/e", "Auth", "keys"]), unique=True))
    notes = {}
    for name in names[:8]:
        words = draw(st.lists(st.sampled_from(WORDS), max_size=12))
        links = draw(st.lists(st.sampled_from(names), max_size=3))
        front = ""
        if draw(st.booleans()):
            tags = draw(st.lists(st.sampled_from(["auth", "ops", "auth/deep"]), max_size=2))
            front = f"---\ntitle: {draw(st.sampled_from(WORDS))} {name}\ntags: [{', '.join(tags)}]\n---\n"
        notes[name] = (
            front + f"# {' '.join(words[:3]) or name}\n\n{' '.join(words)} " + " ".join(f"[[{x}]]" for x in links)
        )
    return notes


@st.composite
def commands(draw: st.DrawFn, folder: str, names: list[str]) -> list[str]:
    kind = draw(st.sampled_from(["search", "title", "read", "list"]))
    if kind == "search":
        args = ["search", *draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=3))]
        args += draw(st.sampled_from([[], ["--limit", "2"], ["--tag", "auth"], ["--folder", folder + "/sub"]]))
    elif kind == "title":
        args = ["search", "--exact-title", draw(st.sampled_from([*WORDS, *names, "a b"]))]
    elif kind == "read":
        target = draw(st.sampled_from([*names, "nothing", "auth", "KEYS", "c"]))
        args = ["read", f"{folder}/{target}" if draw(st.booleans()) else target]
        args += draw(st.sampled_from([[], ["--depth", "0"], ["--depth", "3"], ["--max-chars", "5"]]))
    else:
        args = ["list", draw(st.sampled_from([folder + "/", folder + "/sub", "", "z"]))]
        args += draw(st.sampled_from([[], ["--tag", "auth"], ["--sort", "created"], ["--limit", "1"]]))
    return [a for a in args if a]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data(), vaults())
def test_keeper_answers_equal_the_commands_own_over_random_vaults(
    tmp_path: Path, vault: Path, keeper: KeeperProcess, data: st.DataObject, notes: dict[str, str]
) -> None:
    # A folder of its own for each example (the last one's removed): a note is read first by the keeper,
    # so both reads meet the same last-seen record.
    folder = example_folder(vault, notes)
    args = data.draw(commands(folder, sorted(notes)))
    kept = probe(tmp_path, *args)
    own = alone(tmp_path, *args)
    assert_same(kept, own)
    if own.code == 0:
        assert kept.by_keeper, kept.stderr


# --- the sync token: what was written before is in the answer ---------------------------------------


@pytest.mark.parametrize("writes", [range(0, 13), range(13, 25)], ids=["writes 0-12", "writes 13-24"])
def test_what_was_written_just_before_is_in_the_keepers_answer(
    tmp_path: Path, vault: Path, keeper: KeeperProcess, writes: range
) -> None:
    # The 25 writes in two halves, each beside a keeper of its own, so that both halves can run at once:
    # every write is still followed at once by the commands that must see it.
    program = str(amem_bin(tmp_path / "bin") / "amem")
    write_file(vault / "outside/edit.md", "# Edited\n\nnothing yet\n")
    for i in writes:
        written = subprocess.run(
            [program, "write", f"w/n{i}.md", f"fresh{i} words"], capture_output=True, text=True, timeout=60
        )
        assert written.returncode == 0, written.stderr
        write_file(vault / "outside/edit.md", f"# Edited\n\nrewritten{i} in place\n")  # not by amem
        for word, expected in ((f"fresh{i}", f"w/n{i}.md"), (f"rewritten{i}", "outside/edit.md")):
            kept = probe(tmp_path, "search", word)
            assert kept.by_keeper, kept.stderr
            assert [hit["id"] for hit in json.loads(kept.stdout)["hits"]] == [expected]
        listed = probe(tmp_path, "list", "w/")
        assert json.loads(listed.stdout)["total"] == i - writes.start + 1
        read = probe(tmp_path, "read", "outside/edit")
        assert f"rewritten{i}" in json.loads(read.stdout)["body"]


def test_a_read_through_the_keeper_keeps_modified_externally(
    tmp_path: Path, vault: Path, keeper: KeeperProcess
) -> None:
    program = str(amem_bin(tmp_path / "bin") / "amem")
    subprocess.run([program, "write", "n.md", "# N\n\nfirst"], check=True, capture_output=True, timeout=60)
    assert json.loads(probe(tmp_path, "read", "n").stdout)["modifiedExternally"] is False
    write_file(vault / "n.md", "# N\n\nchanged by hand\n")
    first = probe(tmp_path, "read", "n")
    assert first.by_keeper
    assert json.loads(first.stdout)["modifiedExternally"] is True
    assert json.loads(probe(tmp_path, "read", "n").stdout)["modifiedExternally"] is False  # now seen


# --- the fallback: whatever happens to the keeper, the command answers right ------------------------


def test_a_killed_keepers_stale_socket_is_never_asked(tmp_path: Path, vault: Path) -> None:
    small_vault(vault)
    started = start_keeper()
    started.stop(signal.SIGKILL)
    cache = load_config().cache_dir
    assert (cache / SOCKET_FILE).exists() and (cache / INFO_FILE).exists()  # left behind
    kept = probe(tmp_path, "search", "token")
    assert not kept.by_keeper and kept.code == 0
    assert_same(kept, alone(tmp_path, "search", "token"))


def wait_for_socket_fd(pid: int) -> None:
    """Until the process has a socket open (a client connecting to the keeper)."""
    deadline = time.monotonic() + 30
    while True:
        with_sockets = []
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                with_sockets.append(os.readlink(fd).startswith("socket:"))
            except OSError:
                continue
        if any(with_sockets):
            return
        assert time.monotonic() < deadline
        time.sleep(0.005)


@pytest.mark.parametrize("args", [["search", "token", "auth"], ["read", "notes/auth"], ["list"]])
def test_a_keeper_killed_mid_request_leaves_the_command_to_answer(tmp_path: Path, vault: Path, args: list[str]) -> None:
    small_vault(vault)
    expected = alone(tmp_path, *args)
    started = start_keeper()
    try:
        started.proc.send_signal(signal.SIGSTOP)  # it accepts nothing: the request waits in its queue
        wait_until_stopped(started.proc.pid)
        client = subprocess.Popen(
            [sys.executable, "-m", "amem", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        wait_for_socket_fd(client.pid)
        time.sleep(0.2)  # connected and sent: the connect to a listening socket does not wait
        started.proc.send_signal(signal.SIGKILL)
        out, err = client.communicate(timeout=60)
    finally:
        started.stop(signal.SIGKILL)
    assert (client.returncode, out) == (expected.code, expected.stdout)
    assert err == expected.stderr
    assert "Traceback" not in err


def test_a_stopped_keeper_costs_a_timeout_never_a_wrong_answer(tmp_path: Path, vault: Path) -> None:
    small_vault(vault)
    started = start_keeper()
    try:
        # Stopped first, then the note: a keeper stopped as it indexed would hold the refresh lock, and the
        # search would wait for it (test_index_command holds what that costs).
        started.proc.send_signal(signal.SIGSTOP)
        wait_until_stopped(started.proc.pid)
        write_file(vault / "late.md", "# Late\n\ntoken arrived while the keeper slept\n")
        begun = time.monotonic()
        kept = probe(tmp_path, "search", "token")
        waited = time.monotonic() - begun
        started.proc.send_signal(signal.SIGCONT)
    finally:
        started.stop(signal.SIGKILL)
    assert not kept.by_keeper and kept.code == 0, kept.stderr
    assert "late.md" in [hit["id"] for hit in json.loads(kept.stdout)["hits"]]
    assert waited >= ANSWER_TIMEOUT  # it did ask, and gave up (a floor, not a timing bound)
    assert_same(kept, alone(tmp_path, "search", "token"))


OTHER_VERSION = "import amem, sys; amem.__version__ = '0.0.0+other'; from amem.cli import main; main()"


def test_a_keeper_of_another_amem_is_not_asked(tmp_path: Path, vault: Path) -> None:
    small_vault(vault)
    proc = subprocess.Popen(
        [sys.executable, "-c", OTHER_VERSION, "index", "--watch"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline()
        described = json.loads((load_config().cache_dir / INFO_FILE).read_text())
        assert described["amem"] == "0.0.0+other"
        for args in (["search", "auth"], ["read", "notes/keys"], ["list"]):
            kept = probe(tmp_path, *args)
            assert not kept.by_keeper and kept.code == 0, kept.stderr
            assert_same(kept, alone(tmp_path, *args))
    finally:
        proc.kill()
        proc.wait(timeout=30)


def test_an_answer_too_long_is_the_commands_own_and_what_it_saw_is_kept(
    tmp_path: Path, vault: Path, keeper: KeeperProcess
) -> None:
    program = str(amem_bin(tmp_path / "bin") / "amem")
    # control characters: 6 bytes each in JSON, so the answer outgrows MAX_ANSWER with a sixth of it on disk
    line = "\x01" * 99 + "\n"
    in_json = len(json.dumps(line)) - 2  # 596 bytes: the newline is 2
    big = "# Big\n\n" + line * (MAX_ANSWER // in_json + 100)
    written = subprocess.run([program, "write", "big.md", "-"], input=big, capture_output=True, text=True, timeout=60)
    assert written.returncode == 0, written.stderr
    write_file(vault / "big.md", big + "changed by hand\n")
    kept = probe(tmp_path, "read", "big")
    assert not kept.by_keeper and kept.code == 0, kept.stderr[:500]
    # the keeper read it too, but recorded nothing: its answer never reached the command
    assert json.loads(kept.stdout)["modifiedExternally"] is True
    assert json.loads(alone(tmp_path, "read", "big").stdout)["modifiedExternally"] is False


# --- the keeper's bounds: nothing outside the vault, no unbounded work --------------------------------


def ask_raw(request: dict[str, Any]) -> dict[str, Any]:
    """The keeper's answer to a request made by hand: its first line, with the result's line (when one
    follows) parsed as `result`."""
    cache = load_config().cache_dir
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(30)
        client.connect(str(cache / SOCKET_FILE))
        client.sendall(json.dumps(request).encode() + b"\n")
        data = b""
        while piece := client.recv(1 << 16):  # the keeper closes once it answered
            data += piece
    lines = data.decode().splitlines()
    answer: dict[str, Any] = json.loads(lines[0])
    if len(lines) > 1:
        answer["result"] = json.loads(lines[1])
    return answer


def request(op: str, args: dict[str, Any], **changes: Any) -> dict[str, Any]:
    config = load_config()
    base = {
        "v": 1,
        "op": op,
        "amem": __version__,
        "settings": answer_settings(config),
        "tz": os.environ.get("TZ"),
        "config": config_view(config),
        "args": args,
    }
    return {**base, **changes}


def test_a_request_reads_nothing_outside_the_vault(tmp_path: Path, vault: Path, keeper: KeeperProcess) -> None:
    small_vault(vault)
    secret = tmp_path / "secret.md"
    secret.write_text("# Secret\n\nnot the vault's\n")
    outside = ["../secret", "../secret.md", str(secret), "notes/../../secret.md", "/etc/passwd"]
    for note_id in outside:
        answer = ask_raw(
            request("read", {"id": note_id, "depth": None, "maxChars": None, "lines": None, "section": None})
        )
        assert "result" not in answer and "not the vault" not in json.dumps(answer), (note_id, answer)
    args: dict[str, Any] = {
        "query": "secret",
        "also": [],
        "limit": None,
        "exactTitle": None,
        "tags": [],
        "folder": "../",
        "explain": False,
    }
    assert "result" not in ask_raw(request("search", args))
    # an absolute folder is a prefix of ids inside the vault, as in the command's own process
    assert ask_raw(request("search", {**args, "folder": str(tmp_path)}))["result"]["total"] == 0
    # another vault's settings (the vault is always the keeper's own) or another amem: not answered
    other = json.dumps([str(tmp_path), [".md"], [], False])
    args = {
        "query": "secret",
        "also": [],
        "limit": None,
        "exactTitle": None,
        "tags": [],
        "folder": None,
        "explain": False,
    }
    assert "result" not in ask_raw(request("search", args, settings=other))
    assert "result" not in ask_raw(request("search", args, amem="0.0.0"))
    assert ask_raw(request("search", args))["result"]["total"] == 0  # the same request, in bounds: answered


def test_a_request_cannot_ask_for_unbounded_work(vault: Path, keeper: KeeperProcess) -> None:
    small_vault(vault)
    good = {"query": "token", "also": [], "limit": 5, "exactTitle": None, "tags": [], "folder": None, "explain": False}
    assert ask_raw(request("search", good))["result"]["total"] == 2
    for bad in (
        {**good, "limit": 10**12},
        {**good, "limit": True},
        {**good, "tags": [1]},
        {**good, "extra": 1},
        {k: v for k, v in good.items() if k != "folder"},
    ):
        answer = ask_raw(request("search", bad))
        assert "result" not in answer and "error" in answer, bad
    assert "result" not in ask_raw(
        request("read", {"id": "notes/auth", "depth": 10**10, "maxChars": None, "lines": None, "section": None})
    )
    assert "result" not in ask_raw(request("search", good, config={**config_view(load_config()), "maxLinkDepth": -1}))
    assert ask_raw(request("delete", {"id": "notes/auth"}))["error"] == "bad request"
    nested = request("search", {**good, "tags": [[["x"]]]})
    assert ask_raw(nested)["error"] == "bad request"  # nesting is bounded before it is parsed
    assert (vault / "notes/auth.md").exists()
    assert ask_raw(request("search", good))["result"]["total"] == 2  # still serving


# --- the console script asks before Click loads (amem.shim) ----------------------------------------------

#: The console script's own entry; the modules it loaded go to the file its first argument names.
CONSOLE = """
import sys
where = sys.argv.pop(1)
try:
    from amem.__main__ import main
    main()
finally:
    with open(where, "w") as out:
        out.write(",".join(sorted(sys.modules)))
"""


def console(tmp_path: Path, *args: str) -> tuple[Ran, set[str]]:
    """`amem ARGS` by the console script's entry, and the modules it loaded."""
    modules = tmp_path / f"console-{next(_probes)}.txt"
    done = subprocess.run(
        [sys.executable, "-c", CONSOLE, str(modules), *args], capture_output=True, text=True, timeout=120
    )
    return Ran(done.returncode, done.stdout, done.stderr, False), set(modules.read_text().split(","))


@pytest.mark.parametrize(
    "args",
    [
        ["search", "auth", "token", "--no-semantic"],
        ["search", "--exact-title=keys"],
        ["read", "Keys", "--max-chars", "10"],
        ["list", "notes/", "--tag", "auth", "--sort", "modified"],
        ["read", "nowhere"],
    ],
)
def test_the_console_script_prints_the_keepers_answer_before_click_loads(
    tmp_path: Path, isolated_env: Path, vault: Path, keeper: KeeperProcess, args: list[str]
) -> None:
    small_vault(vault)
    (isolated_env / ".amem").mkdir()
    (isolated_env / ".amem/config.yaml").write_text("watch:\n  url: http://127.0.0.1:9\n")  # a warning to carry
    ran, loaded = console(tmp_path, *args)
    own = alone(tmp_path, *args)
    assert_same(ran, own)
    if own.code == 0:
        assert "click" not in loaded and "sqlite3" not in loaded, ran.stderr
    assert "watch.url in " in ran.stderr


def test_a_command_line_the_shim_does_not_read_goes_to_click(
    tmp_path: Path, vault: Path, keeper: KeeperProcess
) -> None:
    small_vault(vault)
    for args in (["search", "--limit", "0", "auth"], ["--config", str(tmp_path / "none.yaml"), "read", "Keys"]):
        ran, loaded = console(tmp_path, *args)
        assert "click" in loaded
        assert_same(ran, alone(tmp_path, *args))
