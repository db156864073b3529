"""Ctrl-C that always reaches amem: not swallowed while Python imports, not lost before a read of stdin.

Python turns SIGINT into a KeyboardInterrupt in whatever code runs when its handler does. When that is a
weakref callback or a finalizer, as the import machinery's module locks are, Python cannot raise it: it
prints "Exception ignored in …" and carries on, and the user's Ctrl-C is gone. `install` records such an
interrupt instead (`sys.unraisablehook`), silently, and `check` raises it where amem can act on it: before
the command runs, and before a wait for input.

A blocking read() is interrupted only by a signal that arrives while it waits; one that lands just before
it starts, or in another thread, leaves the handler due until the read returns, which on a pipe or a
terminal kept open is never. `read_stdin` waits in poll() on stdin and on a wakeup pipe that the signal
handler writes to (`signal.set_wakeup_fd`), so that a signal at any moment before the poll wakes it.
"""

from __future__ import annotations

import sys

# Only `sys` here: `install` runs before anything else of amem loads, and every import before it is a moment
# in which a Ctrl-C could still be swallowed. `TYPE_CHECKING` from typing would be one.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import select
    from collections.abc import Callable

CHUNK = 1 << 16

_swallowed = False
_previous_hook: Callable[[sys.UnraisableHookArgs], object] | None = None


def install() -> None:
    """Record a KeyboardInterrupt that Python could not raise, instead of printing it (idempotent). One
    that the interpreter itself printed and dropped before amem ran (while it looked at the script's path)
    is left in `sys.last_value`, and is recorded too."""
    global _previous_hook, _swallowed
    if _previous_hook is None:
        _previous_hook = sys.unraisablehook
        sys.unraisablehook = _unraisable
        if isinstance(getattr(sys, "last_value", None), KeyboardInterrupt):
            _swallowed = True


def _unraisable(unraisable: sys.UnraisableHookArgs) -> None:
    global _swallowed
    if isinstance(unraisable.exc_value, KeyboardInterrupt):
        _swallowed = True
        return
    assert _previous_hook is not None
    _previous_hook(unraisable)


def check() -> None:
    """Raise the KeyboardInterrupt that came while Python could not raise it, if one did."""
    global _swallowed
    if _swallowed:
        _swallowed = False
        raise KeyboardInterrupt


def read_stdin() -> bytes:
    """All of stdin's bytes, as `sys.stdin.buffer.read()` gives them, a Ctrl-C ending the wait."""
    import os
    import threading

    check()
    stream = sys.stdin.buffer
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):  # not a file (CliRunner's BytesIO, say)
        return stream.read()
    if os.name != "posix" or threading.current_thread() is not threading.main_thread():
        return stream.read()  # the wakeup fd is the main thread's, on POSIX
    import select
    import signal

    wake_read, wake_write = os.pipe()
    try:
        os.set_blocking(wake_read, False)
        os.set_blocking(wake_write, False)
        previous = signal.set_wakeup_fd(wake_write, warn_on_full_buffer=False)
        try:
            return _read(fd, wake_read, select.poll())
        finally:
            signal.set_wakeup_fd(previous)
    finally:
        os.close(wake_read)
        os.close(wake_write)


def _read(fd: int, wake: int, poller: select.poll) -> bytes:
    poller.register(fd)
    poller.register(wake)
    import contextlib
    import os

    chunks: list[bytes] = []
    while True:
        # A signal that lands in poll() ends it with EINTR and its handler runs (KeyboardInterrupt); one
        # that landed before has written to `wake`, and its handler runs as this loop goes round.
        for ready, _ in poller.poll():
            if ready == wake:
                with contextlib.suppress(BlockingIOError):
                    os.read(wake, 4096)
                check()
                continue
            try:
                chunk = os.read(fd, CHUNK)
            except BlockingIOError:  # a stdin opened non-blocking, not ready after all
                continue
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
