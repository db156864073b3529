"""The one error hierarchy: every expected failure is an AmemError that owns its code and exit status."""

from __future__ import annotations

from typing import Any


class AmemError(Exception):
    """Base of every expected failure; the command layer turns it into JSON on stderr."""

    code = "internal"
    exit_code = 1

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def to_json(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        error.update(self.details)
        return {"error": error}


class InternalError(AmemError):
    """Something amem did not expect; a bug or an environment amem cannot work in."""


class UsageError(AmemError):
    code = "usage"
    exit_code = 2


class NotFound(AmemError):
    code = "not_found"
    exit_code = 3


class Conflict(AmemError):
    code = "conflict"
    exit_code = 4


class InvalidId(AmemError):
    """A note id or path that is malformed or leaves the vault."""

    code = "invalid_id"
    exit_code = 5


class GitError(AmemError):
    code = "git"
    exit_code = 6


class ConfigError(AmemError):
    code = "config"
    exit_code = 7


class InfoMismatch(AmemError):
    code = "mismatch"
    exit_code = 8


class WatchError(AmemError):
    """The watcher could not start (no root could be attached), or the index keeper (another has the vault)."""

    code = "watch"
    exit_code = 9


class IoError(AmemError):
    """The file system refused: permission denied, a read-only file system, a full disk, or the output
    could not be written."""

    code = "io"
    exit_code = 10


class ProblemsFound(AmemError):
    """`amem check` found problems of a severity that fails it (errors; with --strict, warnings too)."""

    code = "problems"
    exit_code = 11


class Interrupted(AmemError):
    """Ctrl-C (SIGINT) ended the command."""

    code = "interrupted"
    exit_code = 130


#: code → (exit status, meaning); the README and the man page print this table and a test checks it.
EXIT_CODES: dict[str, tuple[int, str]] = {
    "ok": (0, "success"),
    InternalError.code: (InternalError.exit_code, "unexpected internal error"),
    UsageError.code: (UsageError.exit_code, "usage error: bad option, missing argument or content"),
    NotFound.code: (NotFound.exit_code, "not found: no such note, revision or note at that revision"),
    Conflict.code: (Conflict.exit_code, "conflict: --base-version is stale, or a move's NEW exists; nothing changed"),
    InvalidId.code: (InvalidId.exit_code, "invalid note id, or a path outside the vault"),
    GitError.code: (GitError.exit_code, "git problem: no repository, git missing, or git failed"),
    ConfigError.code: (ConfigError.exit_code, "configuration error: bad key, value or YAML"),
    InfoMismatch.code: (InfoMismatch.exit_code, "amem info: an expectation did not match"),
    WatchError.code: (
        WatchError.exit_code,
        "amem watch: none of the roots could be watched; index --watch: another keeper has the vault",
    ),
    IoError.code: (
        IoError.exit_code,
        "io: permission denied, read-only file system, disk full, or output not writable",
    ),
    ProblemsFound.code: (
        ProblemsFound.exit_code,
        "amem check: problems of severity error (with --strict, warning) were found",
    ),
    Interrupted.code: (Interrupted.exit_code, "interrupted: Ctrl-C ended the command"),
}
