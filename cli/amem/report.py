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
    and progress only when stderr is a terminal."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream
        self._said: set[str] = set()

    @property
    def stream(self) -> TextIO:
        return self._stream or sys.stderr

    def warn(self, message: str) -> None:
        if message in self._said:
            return
        self._said.add(message)
        self.stream.write(f"amem: warning: {message}\n")
        self.stream.flush()

    def progress(self, label: str, total: int) -> Progress:
        try:
            tty = self.stream.isatty()
        except (AttributeError, ValueError):
            tty = False
        return _TerminalProgress(self.stream, label, total) if tty and total > 0 else Progress()
