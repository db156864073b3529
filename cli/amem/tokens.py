"""Who may reach `amem mcp --http`: named bearer tokens (SPEC §19). The user's state folder keeps, for each,
only the SHA-256 of the secret with its name, scope and creation time, never the secret and never in the
vault; `tokens.json` is replaced atomically with mode 0600, under a lock so that two `amem token` runs at
once lose neither change. A presented secret is matched in constant time against every record.
"""

from __future__ import annotations

import json
import os
import re
from typing import NamedTuple

from .errors import ConfigError, Conflict, NotFound, UsageError

#: A token's scopes: read-write may call every tool; read-only only the tools that declare readOnlyHint.
READ_WRITE = "read-write"
READ_ONLY = "read-only"
SCOPES = (READ_WRITE, READ_ONLY)

#: A name is what the audit log and the commits made over HTTP show: one short word, no spaces.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")
#: What every secret starts with, so that a leaked one is recognisable (secret scanners, grep).
PREFIX = "amem_"


class TokenRecord(NamedTuple):
    name: str
    #: the SHA-256 of the secret, in hex
    sha256: str
    scope: str
    #: when it was made, ISO 8601 in UTC
    created: str

    def public(self) -> dict[str, str]:
        """What `amem token list` shows: everything but the digest."""
        return {"name": self.name, "scope": self.scope, "created": self.created}


def state_folder() -> str:
    from .paths import xdg_home

    return os.path.join(xdg_home("XDG_STATE_HOME", ".local/state"), "amem")


def tokens_file() -> str:
    return os.path.join(state_folder(), "tokens.json")


def digest(secret: str) -> str:
    import hashlib

    return hashlib.sha256(secret.encode("utf-8", "surrogateescape")).hexdigest()


def load_tokens(path: str | None = None) -> list[TokenRecord]:
    """The records in the tokens file (none when it does not exist); a damaged file is a config error, so
    that a server never starts believing it has no tokens when it has unreadable ones."""
    path = path or tokens_file()
    try:
        with open(path, "rb") as handle:
            data = json.loads(handle.read())
        return [TokenRecord(t["name"], t["sha256"], t["scope"], t["created"]) for t in data["tokens"]]
    except FileNotFoundError:
        return []
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"the tokens file {path} cannot be read ({type(exc).__name__}); fix or remove it") from None


def _save(path: str, records: list[TokenRecord]) -> None:
    from .atomicfile import atomic_replace

    body = {"tokens": [r._asdict() for r in records]}
    atomic_replace(path, (json.dumps(body, indent=1) + "\n").encode(), 0o600)


class _Locked:
    """The tokens file's lock (a file beside it), held for one read-modify-write."""

    def __enter__(self) -> str:
        import fcntl

        folder = state_folder()
        os.makedirs(folder, mode=0o700, exist_ok=True)
        self.fd = os.open(os.path.join(folder, "tokens.lock"), os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return tokens_file()

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)


def add_token(name: str, *, read_only: bool) -> tuple[str, TokenRecord]:
    """Make a token called `name`: its secret (shown once, kept nowhere) and its record."""
    import secrets
    from datetime import UTC, datetime

    if not _NAME.fullmatch(name):
        raise UsageError(f"invalid token name {name!r}: 1 to 64 letters, digits, '.', '_', '@' or '-'")
    secret = PREFIX + secrets.token_urlsafe(32)
    created = datetime.now(UTC).isoformat(timespec="seconds")
    record = TokenRecord(name, digest(secret), READ_ONLY if read_only else READ_WRITE, created)
    with _Locked() as path:
        records = load_tokens(path)
        if any(r.name == name for r in records):
            raise Conflict(f"a token named {name!r} exists; revoke it first or choose another name")
        _save(path, [*records, record])
    return secret, record


def revoke_token(name: str) -> TokenRecord:
    """Remove the token called `name`; its record."""
    with _Locked() as path:
        records = load_tokens(path)
        kept = [r for r in records if r.name != name]
        if len(kept) == len(records):
            raise NotFound(f"no token named {name!r}")
        _save(path, kept)
    return next(r for r in records if r.name == name)


def find_token(records: list[TokenRecord], secret: str) -> TokenRecord | None:
    """The record whose secret `secret` is, compared in constant time against every record's digest."""
    import hmac

    presented = digest(secret)
    found = None
    for record in records:
        if hmac.compare_digest(presented, record.sha256):
            found = record
    return found


class TokenTable:
    """The tokens as a running server sees them: the file is read again whenever it changes, so that a
    token added or revoked takes effect on the next request."""

    def __init__(self, path: str | None = None) -> None:
        self.path = path or tokens_file()
        self._stamp: tuple[int, int, int] | None = None
        self.records: list[TokenRecord] = []
        self.refresh()

    def refresh(self) -> list[TokenRecord]:
        try:
            st = os.stat(self.path)
            stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
        except FileNotFoundError:
            stamp = None
        if stamp != self._stamp:
            self.records = load_tokens(self.path) if stamp is not None else []
            self._stamp = stamp
        return self.records

    def match(self, secret: str) -> TokenRecord | None:
        try:
            records = self.refresh()
        except ConfigError:
            records = []  # a damaged file admits no one until it is fixed
        return find_token(records, secret)
