"""Which project files the user trusts: `amem trust` records the SHA-256 of a project's `.amem/config.yaml`
in the user's state folder, as `direnv allow` and `mise trust` do; a file whose bytes changed since is
untrusted again. A project with no config file can be trusted too (its record says so), which vouches for
its default vault folder; a config file that appears later is untrusted.

The record of a project is one small file named by the hash of the project file's path, so that trusting
one project never rewrites another's record. Nothing here reads the vault or runs a program.
"""

import hashlib
import os
import stat

#: What a record holds in place of a digest for a project that had no config file when it was trusted.
ABSENT = "absent"


def project_file(project_root: str) -> str:
    """The project file of the project at `project_root` (which need not exist)."""
    return os.path.join(project_root, ".amem", "config.yaml")


def digest_of(data: bytes | None) -> str:
    """The digest a record keeps of a project file's bytes; ABSENT for a missing file."""
    return ABSENT if data is None else hashlib.sha256(data).hexdigest()


#: The most bytes of a project file taken into its digest; the config loader refuses a larger file.
_MOST = (1 << 20) + 1


def read_project_file(path: str) -> bytes | None:
    """The project file's bytes (at most the first MiB and one byte), None when it is not a regular file, as
    the config loader reads none but a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return handle.read(_MOST)


def _record(path: str) -> str:
    from .config import state_home

    name = hashlib.sha256(os.path.realpath(path).encode("utf-8", "surrogateescape")).hexdigest()
    return os.path.join(state_home(), "amem", "trust", name)


def trusted_digest(path: str) -> str | None:
    """The digest the user trusted for the project file at `path`, None when it was never trusted."""
    try:
        with open(_record(path), encoding="utf-8") as handle:
            return handle.readline().strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def is_trusted(path: str, data: bytes | None) -> bool:
    """Whether the project file at `path`, holding `data` (None: missing), is the one the user trusted."""
    return trusted_digest(path) == digest_of(data)


def trust(path: str, data: bytes | None) -> str:
    """Trust the project file at `path` as it is now (`data`, None when missing); its digest."""
    from .atomicfile import atomic_replace

    record = _record(path)
    os.makedirs(os.path.dirname(record), mode=0o700, exist_ok=True)
    digest = digest_of(data)
    atomic_replace(record, f"{digest}\n{os.path.realpath(path)}\n".encode("utf-8", "surrogateescape"), 0o600)
    return digest


def revoke(path: str) -> bool:
    """Forget any trust in the project file at `path`; whether there was any."""
    try:
        os.remove(_record(path))
    except FileNotFoundError:
        return False
    return True
