"""Fixtures for the watcher: isolated homes, a stand-in agentmemory server, and running watchers.

Timing is polled, never slept: a loaded 2-core machine delays events, so every wait is "until this is
true, for up to 60 s" (a bound against a hang: at a load of 20, 50 spooled observations took over 10 s),
and debounces are short (60 ms).
"""

from __future__ import annotations

import dataclasses
import io
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from amem.config import load_config
from amem.watcher.service import Watcher, WatchOptions

from .agentmemory_standin import StandInServer

DEBOUNCE_MS = 60
WAIT = 60.0


@pytest.fixture(autouse=True)
def watcher_env(isolated_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A vault of each test's own; tests/conftest.py's isolated_env already gives HOME, XDG folders and a
    clean AMEM_*/AGENTMEMORY_* environment."""
    monkeypatch.setenv("AMEM_VAULT", str(tmp_path / "vault"))


def wait_until(predicate: Callable[[], Any], timeout: float = WAIT, message: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {message}")
        time.sleep(0.02)


def settle(check: Callable[[], Any], quiet: float = 0.4) -> None:
    """Give the watcher `quiet` seconds in which `check()` must stay true (nothing unexpected arrives)."""
    deadline = time.monotonic() + quiet
    while time.monotonic() < deadline:
        assert check()
        time.sleep(0.02)


@pytest.fixture
def standin() -> Iterator[StandInServer]:
    server = StandInServer().start()
    yield server
    server.stop()


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


class RunningWatcher:
    """A started Watcher with what it produced: observations, log lines, warnings, stdout."""

    def __init__(self, watcher: Watcher, stdout: io.StringIO, logs: list[str], warnings: list[str]) -> None:
        self.watcher = watcher
        self.stdout = stdout
        self.logs = logs
        self.warnings = warnings
        self.observations: list[dict[str, Any]] = []
        watcher.on_observation = self.observations.append
        self.summary: Any = None

    def start(self) -> RunningWatcher:
        self.watcher.start()
        return self

    def stop(self) -> Any:
        if self.summary is None:
            self.summary = self.watcher.stop()
        return self.summary

    def files(self, kind: str | None = None) -> list[str]:
        return [
            o["data"]["files"][0] for o in list(self.observations) if kind is None or o["data"]["changeKind"] == kind
        ]

    def wait_for(self, rel: str, kind: str = "file_change", count: int = 1) -> list[dict[str, Any]]:
        def found() -> list[dict[str, Any]]:
            hits = [
                o for o in list(self.observations) if o["data"]["files"] == [rel] and o["data"]["changeKind"] == kind
            ]
            return hits if len(hits) >= count else []

        return wait_until(found, message=f"{kind} of {rel}")  # type: ignore[no-any-return]


#: `amem watch`'s flags by parameter name, and the config keys they override.
FLAG_KEYS = {
    "sinks": "watch.sinks",
    "url": "watch.url",
    "secret": "watch.secret",
    "project": "watch.project",
    "session_id": "watch.sessionId",
    "ignore": "watch.ignore",
    "allow_binary": "watch.allowBinary",
    "debounce_ms": "watch.debounceMs",
}


def watch_options(
    dirs: Sequence[str] = (), *, cwd: str | None = None, no_gitignore: bool = False, **flags: object
) -> WatchOptions:
    """The options `amem watch DIR… --flag …` runs with, flags by parameter name (url=, debounce_ms=)."""
    config = load_config(
        cwd=Path(cwd) if cwd else None,
        flags={"watch.dirs": tuple(dirs), **{FLAG_KEYS[name]: value for name, value in flags.items()}},
    )
    return WatchOptions.from_config(config, use_gitignore=not no_gitignore)


@pytest.fixture
def make_watcher() -> Iterator[Callable[..., RunningWatcher]]:
    """make_watcher(roots, sinks=("stdout",), start=True, **flags or WatchOptions fields)."""
    running: list[RunningWatcher] = []

    def make(
        roots: Any, sinks: tuple[str, ...] = ("stdout",), *, start: bool = True, cwd: str | None = None, **kwargs: Any
    ) -> RunningWatcher:
        roots = [str(r) for r in (roots if isinstance(roots, list | tuple) else [roots])]
        flags = {k: v for k, v in kwargs.items() if k in FLAG_KEYS or k == "no_gitignore"}
        extra: dict[str, Any] = {"retry_initial": 0.05, "retry_max": 0.2, "drain_timeout": 2.0}
        extra.update({k: v for k, v in kwargs.items() if k not in flags})
        flags.setdefault("debounce_ms", DEBOUNCE_MS)
        config = load_config(cwd=Path(cwd) if cwd else None)
        options = watch_options(roots, sinks=sinks, cwd=cwd, **flags)
        options = dataclasses.replace(options, **extra)
        logs: list[str] = []
        warnings: list[str] = []
        out = io.StringIO()
        handle = RunningWatcher(
            Watcher(options, config=config, stdout=out, log=logs.append, warn=warnings.append), out, logs, warnings
        )
        running.append(handle)
        return handle.start() if start else handle

    yield make
    for handle in running:
        handle.stop()
