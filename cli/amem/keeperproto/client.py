"""The index's side of the keeper protocol: how an index asks whether a live keeper (`amem.keeper`, which
implements the other side) vouches for it, and asks it for a semantic ranking. The index never imports the
keeper; the keeper imports this.

The protocol, after git's fsmonitor and watchman's sync cookies:

- The keeper holds an exclusive `flock` on `keeper.lock` in the vault's cache folder for as long as it
  lives (the kernel drops it when the process dies, however it dies), and describes itself in
  `keeper.json` once its watches are on and the index is current.
- A command that needs a current index (`VaultIndex.refresh`) first calls `synced()`. When the lock is
  held and `keeper.json` names the same index settings, it creates a cookie file in `<vault>/.amem-sync/`
  and waits, bounded by ACK_TIMEOUT, until the keeper deletes it. The cookie's event comes through the
  same event queue as every change made to the vault before it, and the keeper applies everything it has
  read before it deletes a cookie: a deleted cookie proves that every earlier change is in the index.
- Keeper gone (lock free), of other settings, or too slow to answer: `synced()` is False and the command
  walks the vault as it always does. Nothing is an error.

- The keeper also answers semantic ranking on a Unix socket in the cache folder (`keeper.sock`, mode 0600,
  named in `keeper.json`): a search sends one JSON line `{"v", "query", "depth", "among"}` and reads one
  back, `{"ranking": [[id, score], ...]}`. The keeper loads the model on the first such request only, keeps
  the vectors in memory and brings them up to date before it answers, so the search fuses exactly the
  ranking it would have computed itself. No socket, no answer within RANK_TIMEOUT, or any error: the search
  loads the model itself. Each connection is read by its own thread, within bounds (size, nesting, time;
  see `amem.keeper.requests`), and whatever a request holds it gets an answer, an error at worst.

The cookie folder is a dot-folder with its own `.gitignore` (`*`), so neither the index nor git sees it.
It must be a real folder inside the vault: the keeper holds it open by descriptor and commands open it with
O_NOFOLLOW (see `amem.keeper.folder`), so a symlink a sync brings under its name is never followed.
"""

from __future__ import annotations

import _thread
import errno
import fcntl
import itertools
import json
import os
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    import socket
    import threading
    from collections.abc import Collection
    from pathlib import Path

    from ..index.index import VaultIndex

#: How long a command waits for the keeper to confirm a cookie before it walks the vault itself.
ACK_TIMEOUT = 1.0
LOCK_FILE = "keeper.lock"
INFO_FILE = "keeper.json"
SOCKET_FILE = "keeper.sock"
#: How long a search waits for the keeper's semantic ranking before it loads the model itself.
RANK_TIMEOUT = 2.0
#: The longest socket path bound: sun_path holds 104 bytes on macOS and the BSDs, 108 on Linux, with the NUL.
SOCKET_PATH_MAX = 100
SYNC_DIR = ".amem-sync"
COOKIE_SUFFIX = ".cookie"
#: The ranking protocol's version: a keeper answers only requests of its own.
PROTOCOL = 1
FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)

_cookies = itertools.count()
#: Threads applying changes for a keeper of this process: their own refreshes must not ask the keeper.
applying: set[int] = set()


# --- the client side: called at the start of every refresh -------------------------------------------


def synced(index: VaultIndex, timeout: float | None = None) -> bool:
    """True when a live keeper of this vault, keeping an index of these settings, has applied every change
    made before this call; False (walk the vault) otherwise. Never raises for a missing or dead keeper."""
    if applying and _thread.get_ident() in applying:
        return False  # the keeper's own refresh
    cache = index.config.cache_folder
    if not lock_held(os.path.join(cache, LOCK_FILE)):
        return False
    try:
        described = json.loads(_read_text(os.path.join(cache, INFO_FILE)))
    except (OSError, ValueError):
        return False  # starting up, or stopped meanwhile
    if not isinstance(described, dict) or described.get("settings") != index._settings():
        return False
    folder = open_for_cookie(os.path.abspath(index.config.vault_dir))
    if folder is None:
        return False  # no folder of the keeper's, or a symlink or a file in its place: walk
    try:
        return _confirmed(folder, f"{os.getpid()}-{next(_cookies)}{COOKIE_SUFFIX}", timeout)
    finally:
        os.close(folder)


def _confirmed(folder: int, cookie: str, timeout: float | None) -> bool:
    """Drop `cookie` in the keeper's folder and wait until the keeper deletes it, or give up. A keeper of
    this process (the one `amem index --watch` answers commands with, or `amem mcp`'s) wakes the wait as
    soon as it has confirmed cookies (`confirmations`); another process's is polled, more and more slowly."""
    if not drop_cookie(folder, cookie):
        return False
    deadline = time.monotonic() + (ACK_TIMEOUT if timeout is None else timeout)
    pause = 0.0002
    while True:
        seen = _confirmed_count
        if not cookie_exists(folder, cookie):
            return True
        if time.monotonic() > deadline:
            remove_cookie(folder, cookie)
            return False  # wedged or swamped: the walk is the answer
        wake = _wake
        if wake is None:
            time.sleep(pause)
        else:
            with wake:
                if _confirmed_count == seen:  # none confirmed since the look: wait for the next, or the pause
                    wake.wait(pause)
        pause = min(pause * 2, 0.004)


#: Set by a keeper running in this process (`confirmations`): its thread notifies it each time it has
#: confirmed cookies, and counts them in `_confirmed_count`.
_wake: threading.Condition | None = None
_confirmed_count = 0


def confirmations() -> None:
    """Called by a keeper starting in this process: waits for its cookies wake when it confirms them."""
    global _wake
    if _wake is None:
        import threading

        _wake = threading.Condition()


def confirmed() -> None:
    """Called by a keeper of this process once it has deleted cookies: the waits in this process look again."""
    global _confirmed_count
    wake = _wake
    if wake is None:
        return
    with wake:
        _confirmed_count += 1
        wake.notify_all()


def semantic_ranking(
    index: VaultIndex, query: str, depth: int, among: Collection[str] | None, timeout: float | None = None
) -> list[tuple[str, float]] | None:
    """The semantic ranking of `query` (`semantic.rank`'s answer) from a live keeper of this vault keeping
    an index of these settings, or None (rank in this process) when there is none, it has no socket, it
    does not answer within RANK_TIMEOUT, or anything fails. Never raises."""
    if applying and _thread.get_ident() in applying:
        return None
    cache = index.config.cache_folder
    if not lock_held(os.path.join(cache, LOCK_FILE)):
        return None
    try:
        described = json.loads(_read_text(os.path.join(cache, INFO_FILE)))
    except (OSError, ValueError):
        return None
    if not isinstance(described, dict) or described.get("settings") != index._settings():
        return None
    if described.get("model", "static") != index.config.semantic_model:
        return None  # a keeper ranking with another semantic model
    name = described.get("socket")
    if not isinstance(name, str) or described.get("pid") == os.getpid() or "/" in name:
        return None  # an older keeper, one without a socket, or this very process
    import socket

    request = {"v": PROTOCOL, "query": query, "depth": depth, "among": None if among is None else sorted(among)}
    deadline = time.monotonic() + (RANK_TIMEOUT if timeout is None else timeout)
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.settimeout(max(deadline - time.monotonic(), 0.001))
            client.connect(os.path.join(cache, name))
            client.sendall(json.dumps(request).encode("utf-8") + b"\n")
            answer = json.loads(read_line(client, deadline))
        ranking = answer["ranking"]
        out = [(str(note_id), float(score)) for note_id, score in ranking]
        if not all(isinstance(note_id, str) for note_id, _ in ranking):
            return None
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return None
    return out


class LineTooLong(ValueError):
    """A line longer than the reader's limit."""


def read_line(conn: socket.socket, deadline: float, limit: int = 1 << 26) -> bytes:
    """One newline-ended line from `conn` by `deadline`, for either side of the socket: TimeoutError when
    it does not come in time, LineTooLong when it is longer than `limit`, ValueError when it is cut short."""
    data = bytearray()
    while not data.endswith(b"\n"):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("no answer in time")
        conn.settimeout(remaining)
        piece = conn.recv(1 << 16)
        if not piece:
            raise ValueError("the line was cut short")
        if len(data) + len(piece) > limit:
            raise LineTooLong("too long")
        data += piece
    return bytes(data)


# The keeper's folder, as a command meets it: never through a symlink (see keeperdir).


def open_for_cookie(root: str) -> int | None:
    """A descriptor of the vault's real `.amem-sync` folder for a command dropping a cookie, or None when
    there is none (or a symlink or a file holds the name): the command then walks the vault."""
    try:
        return os.open(os.path.join(root, SYNC_DIR), FOLDER_FLAGS)
    except OSError:
        return None


def drop_cookie(folder_fd: int, name: str) -> bool:
    """Create the empty cookie `name` in the folder; False when it cannot be."""
    try:
        os.close(os.open(name, NEW_FILE_FLAGS, 0o600, dir_fd=folder_fd))
    except OSError:
        return False
    return True


def cookie_exists(folder_fd: int, name: str) -> bool:
    try:
        return lstat_at(name, folder_fd) is not None
    except OSError:
        return False


def remove_cookie(folder_fd: int, name: str) -> None:
    try:  # noqa: SIM105 (contextlib would cost the fast path its import)
        os.unlink(name, dir_fd=folder_fd)
    except OSError:
        pass


def lstat_at(name: str, dir_fd: int) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _read_text(path: str) -> str:
    """`Path(path).read_text(encoding="utf-8")`."""
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def lock_held(path: Path | str) -> bool:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as exc:
        return exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN)
    finally:
        os.close(fd)  # also releases a shared lock taken above
    return False
