"""How the library reports what is not its result: warnings and progress.

The library never writes to stderr itself. Every function that may warn or show progress is handed a
`Reporter`; the command layer hands it `StderrReporter()` (plain lines on stderr, progress only on a
terminal), the MCP server and tests a `CollectingReporter` that keeps the warnings for the caller, and
code that wants silence the base `Reporter`, which discards everything.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """A count towards a known total. The base class shows nothing."""

    def step(self, count: int = 1) -> None:
        """`count` more items are done."""

    def done(self) -> None:
        """The work is finished (or abandoned); clear or close the display."""


class Reporter:
    """Discards warnings and shows no progress. Subclass it to send them somewhere."""

    def warn(self, message: str) -> None:
        """A diagnostic for a human: something was skipped or repaired, the result is still good."""

    def progress(self, label: str, total: int) -> Progress:
        """A display for `total` items of work described by `label` (`"indexing"`, `"notes"`)."""
        return Progress()


class CollectingReporter(Reporter):
    """Keeps warnings in order, once each, for a caller that returns them (the MCP server, tests)."""

    def __init__(self) -> None:
        self.warnings: list[str] = []

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)


class _TerminalProgress(Progress):
    """`\\ramem: indexing 250/1000 notes` on a terminal, only once the work has taken a second."""

    def __init__(self, stream: TextIO, label: str, total: int) -> None:
        self.stream = stream
        self.label = label
        self.total = total
        self.count = 0
        self.start = time.monotonic()
        self.last = 0.0
        self.shown = False

    def step(self, count: int = 1) -> None:
        self.count += count
        now = time.monotonic()
        if now - self.start > 1 and now - self.last > 0.1:
            self.stream.write(f"\ramem: {self.label} {self.count}/{self.total}")
            self.stream.flush()
            self.last = now
            self.shown = True

    def done(self) -> None:
        if self.shown:
            self.stream.write(f"\ramem: {self.label} {self.count}/{self.total} done{' ' * 10}\n")
            self.stream.flush()
            self.shown = False


class StderrReporter(Reporter):
    """The command line's reporter: `amem: warning: …` lines on stderr, each message once per process,
    and progress only when stderr is a terminal.

    With `hold`, warnings wait until the run's outcome is known (SPEC §9): on success `release()` prints
    them as lines; on failure `take_held()` hands them to the error object, so that stderr holds one JSON
    document. A command that starts serving (its first output, a keeper, a watcher) releases them then."""

    def __init__(self, stream: TextIO | None = None, *, hold: bool = False) -> None:
        self._stream = stream
        self._said: set[str] = set()
        self._held: list[str] | None = [] if hold else None

    @property
    def stream(self) -> TextIO:
        return self._stream or sys.stderr

    def warn(self, message: str) -> None:
        if message in self._said:
            return
        self._said.add(message)
        if self._held is not None:
            self._held.append(message)
        else:
            self._write(message)

    def _write(self, message: str) -> None:
        stream = self.stream
        if stream is None:  # stderr closed: nowhere to say it
            return
        try:
            stream.write(f"amem: warning: {message}\n")
            stream.flush()
        except (OSError, ValueError):
            pass

    def release(self) -> None:
        """Print the held warnings and hold no more."""
        for message in self.take_held():
            self._write(message)

    def take_held(self) -> list[str]:
        """The warnings held so far, to fold into an error object; none are held after."""
        held, self._held = self._held or [], None
        return held

    def progress(self, label: str, total: int) -> Progress:
        try:
            tty = self.stream.isatty()
        except (AttributeError, ValueError):
            tty = False
        return _TerminalProgress(self.stream, label, total) if tty and total > 0 else Progress()


#: The command line's reporter for the run under way (one per `amem` invocation), or None.
_run_reporter: StderrReporter | None = None


def start_run() -> StderrReporter:
    """A new held reporter for one command-line run; `run_reporter()` returns it until `end_run()`."""
    global _run_reporter
    _run_reporter = StderrReporter(hold=True)
    return _run_reporter


def end_run() -> None:
    global _run_reporter
    _run_reporter = None


def run_reporter() -> StderrReporter | None:
    return _run_reporter


def release_warnings() -> None:
    """The run is producing its result (or starts serving): its held warnings go out as lines now."""
    if _run_reporter is not None:
        _run_reporter.release()
