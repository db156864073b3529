"""Which project files the user trusts: `amem trust` records the SHA-256 of a project's `.amem/config.yaml`
in the user's state folder, as `direnv allow` and `mise trust` do; a file whose bytes changed since is
untrusted again. A project with no config file can be trusted too (its record says so), which vouches for
its default vault folder; a config file that appears later is untrusted.

The record of a project is one small file named by the hash of the project file's path, so that trusting
one project never rewrites another's record. Nothing here reads the vault or runs a program.
"""

import os
import stat

from .paths import is_within

#: What an untrusted project file may not set at all: where observations and the user's secret are sent,
#: and commits made in the user's name (their identity, hooks and signing key) beyond the note itself.
_NEVER_UNTRUSTED = {
    "watch.url": "it sends observations elsewhere",
    "watch.secret": "it is a secret sent elsewhere",
    "git.autoCommit": "it makes commits in your name",
}
#: What an untrusted project file may set only to places inside the project (real paths, symlinks followed).
_PLACES_UNTRUSTED = frozenset({"vaultRoot", "watch.dirs", "semantic.model"})
TRUST_HINT = "run `amem trust` in the project to trust the file as it is now"


class Fence:
    """Keeps an untrusted project file's settings inside the project: a key that reaches outside it is
    ignored with a warning naming the key, the file and how to trust it (SPEC §1)."""

    def __init__(self, project_root: str, file: str, warnings: list[str]) -> None:
        self.project_root = project_root
        self.file = file
        self.warnings = warnings
        #: the keys ignored, and those taken, from the file
        self.ignored: list[str] = []
        self.taken: set[str] = set()

    def admits(self, name: str, places: tuple[str, ...]) -> bool:
        """Whether key `name`, naming `places`, may be taken from the file; a warning when not."""
        why = _NEVER_UNTRUSTED.get(name)
        if why is None and name in _PLACES_UNTRUSTED:
            outside = [p for p in places if not is_within(p, self.project_root)]
            why = "it names a place outside the project" if outside else None
        if why is None:
            self.taken.add(name)
            return True
        self.ignored.append(name)
        self.warnings.append(f"{name} in {self.file} is ignored: {why}, and the file is not trusted ({TRUST_HINT})")
        return False


def vault_refusal(vault_root: str, project_root: str) -> str | None:
    """Why a vault the project chose (its default folder, or its untrusted file's vaultRoot) cannot be used:
    a symlink leads it out of the project and the user does not trust the project as it is; else None."""
    path = project_file(project_root)
    if is_within(vault_root, project_root) or is_trusted(path, read_project_file(path)):
        return None
    return (
        f"the vault {os.path.basename(vault_root)!r} leads outside the project (through a symlink) and the "
        f"project is not trusted: {TRUST_HINT}, or name the vault with --vault or AMEM_VAULT"
    )


#: What a record holds in place of a digest for a project that had no config file when it was trusted.
ABSENT = "absent"


def project_file(project_root: str) -> str:
    """The project file of the project at `project_root` (which need not exist)."""
    return os.path.join(project_root, ".amem", "config.yaml")


def digest_of(data: bytes | None) -> str:
    """The digest a record keeps of a project file's bytes; ABSENT for a missing file."""
    import hashlib  # only where a project has a config file: it loads OpenSSL

    return ABSENT if data is None else hashlib.sha256(data).hexdigest()


#: The largest config file amem reads (a real one is a few hundred bytes); a project file's digest takes
#: one byte more, so that a larger file, which the config loader refuses, is never taken for a trusted one.
MAX_CONFIG_BYTES = 1 << 20


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
        return handle.read(MAX_CONFIG_BYTES + 1)


def _record(path: str) -> str:
    import hashlib

    from .paths import xdg_home

    name = hashlib.sha256(os.path.realpath(path).encode("utf-8", "surrogateescape")).hexdigest()
    return os.path.join(xdg_home("XDG_STATE_HOME", ".local/state"), "amem", "trust", name)


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


def change_warning(path: str, before: bytes | None) -> str | None:
    """What to tell the user when the project file at `path`, which held `before`, has changed since (a
    pull brought a collaborator's): None when it has not."""
    after = read_project_file(path)
    if after == before:
        return None
    what = "removed" if after is None else "changed"
    if is_trusted(path, after):
        return f"this sync {what} the project's .amem/config.yaml; the project is still trusted as it is now"
    return (
        f"this sync {what} the project's .amem/config.yaml; review it: its keys that reach outside the project "
        "are ignored until you run `amem trust`"
    )
