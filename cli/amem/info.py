"""The identity envelope behind `amem info`: which amem, which config, which vault, and is it safe to write.

Strictly read-only: it looks at paths but creates nothing (no vault folder, no cache, no repository),
so an agent can run it first, anywhere, before it decides to write.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import __version__
from .config import Config, vault_problem
from .paths import is_inside, is_within

if TYPE_CHECKING:
    from .results import InfoResult, Mismatch, ProjectTrust


@dataclass(frozen=True)
class Expectations:
    """What the caller believes; None for an expectation that was not given."""

    cwd: str | None = None
    vault: str | None = None
    module_root: str | None = None
    profile: str | None = None


def module_root() -> Path:
    """The folder of the running amem package, as Python imported it (symlinks not resolved)."""
    return Path(os.path.dirname(os.path.abspath(__file__)))


def _in_git_work_tree(path: Path) -> bool:
    """Whether `path` (existing or not) lies in a git work tree, judged by a `.git` entry above it.

    A walk rather than `git rev-parse`: info must stay cheap and work without git installed.
    """
    real = Path(os.path.realpath(path))
    return any((folder / ".git").exists() for folder in (real, *real.parents))


def fingerprint(identity: dict[str, Any]) -> str:
    """sha256 over the identity fields in a canonical JSON form: equal identities, equal fingerprints."""
    canonical = json.dumps(identity, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _trust(config: Config) -> ProjectTrust:
    """Whether the user trusts the project's config file, and the keys of it ignored until they do."""
    from .trust import is_trusted, project_file, read_project_file

    path = project_file(config.project_dir)
    data = read_project_file(path)
    return {"trusted": is_trusted(path, data), "ignored": list(config.untrusted)}


def build_info(config: Config, expected: Expectations, *, package_root: Path | None = None) -> InfoResult:
    """The envelope `amem info` prints: identity (which amem, config, vault, profile), the checks against
    `expected`, and the preflight. `package_root` stands in for the running package's folder in tests."""
    root = package_root if package_root is not None else module_root()
    cwd = str(config.cwd)
    vault = str(config.vault_root)
    identity: dict[str, Any] = {
        "version": __version__,
        "moduleRoot": str(root),
        "bundle": {"name": config.bundle_name, "version": config.bundle_version},
        "profile": config.profile,
        "cwd": cwd,
        "projectRoot": str(config.project_root),
        "vaultRoot": vault,
        "configFiles": [str(p) for p in config.config_files],
    }

    mismatches: list[Mismatch] = []
    warnings: list[str] = list(config.warnings)
    if (problem := vault_problem(config)) is not None:
        warnings.append(problem)
    reasons: list[str] = []

    def same_place(option: str, field: str, given: str | None, actual: str) -> None:
        if given is None:
            reasons.append(f"{option} was not given")
            return
        if not os.path.isabs(given):
            # A relative expectation proves nothing about where amem runs: it is read against the very
            # cwd it is meant to check.
            reasons.append(f"{option} is a relative path; safeToWrite needs an absolute one")
        wanted = os.path.join(cwd, given)
        if os.path.realpath(wanted) != os.path.realpath(actual):
            mismatches.append({"field": field, "expected": given, "actual": actual})

    same_place("--expect-cwd", "cwd", expected.cwd, cwd)
    same_place("--expect-vault", "vaultRoot", expected.vault, vault)

    if expected.module_root is not None:
        given = expected.module_root
        lexical = is_inside(os.path.normpath(str(root)), os.path.normpath(os.path.join(cwd, given)))
        real = is_within(str(root), os.path.join(cwd, given))
        # Both must hold: a lexical match through a symlink that leads elsewhere, or a realpath match
        # reached by another route, does not prove which installation is running.
        if not (lexical and real):
            mismatches.append({"field": "moduleRoot", "expected": given, "actual": str(root)})

    if expected.profile is not None:
        if config.profile is None:
            # The profile is a hint from the environment, not proof; its absence must not block an
            # otherwise proven identity.
            warnings.append(f"profile is unknown (AMEM_PROFILE is not set); cannot confirm {expected.profile!r}")
        elif config.profile != expected.profile:
            mismatches.append({"field": "profile", "expected": expected.profile, "actual": config.profile})

    reasons.extend(f"{m['field']} does not match the expectation" for m in mismatches)
    return {
        "version": identity["version"],
        "moduleRoot": identity["moduleRoot"],
        "bundle": identity["bundle"],
        "profile": identity["profile"],
        "cwd": cwd,
        "projectRoot": identity["projectRoot"],
        "vaultRoot": vault,
        "vaultExists": config.vault_root.is_dir(),
        "gitRepository": _in_git_work_tree(config.vault_root),
        "configFiles": identity["configFiles"],
        "fingerprint": fingerprint(identity),
        "expected": {
            "cwd": expected.cwd,
            "vaultRoot": expected.vault,
            "moduleRoot": expected.module_root,
            "profile": expected.profile,
        },
        "mismatches": mismatches,
        "trust": _trust(config),
        "warnings": warnings,
        "preflight": {"safeToWrite": not reasons, "reasons": reasons},
    }
