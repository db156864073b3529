"""The one config loader: defaults < config files < environment < flags, with every value validated.

Knows nothing of Click; commands hand it their flags as plain keyword arguments.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from datetime import UTC, timedelta, timezone, tzinfo
from pathlib import Path
from typing import Any, NamedTuple

from .digest import sha1_hex
from .errors import ConfigError

SINK_NAMES = ("server", "vault", "stdout")
DEFAULT_SERVER_URL = "http://localhost:3111"

_TOP_KEYS = {
    "vaultRoot",
    "extensions",
    "maxLinkDepth",
    "maxSearchResults",
    "indexHiddenDirs",
    "semantic",
    "excludeDirs",
    "timezone",
    "bundleName",
    "bundleVersion",
    "git",
    "watch",
}
_GIT_KEYS = {"autoCommit"}
_WATCH_KEYS = {"dirs", "ignore", "allowBinary", "url", "secret", "project", "sessionId", "debounceMs", "sinks"}
_OFFSET = re.compile(r"^([+-])(\d{2}):?(\d{2})$")


# NamedTuples rather than dataclasses: they cost a tenth as much at start-up, which every call pays.
class WatchSettings(NamedTuple):
    dirs: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    allow_binary: bool = False
    #: None when no URL was configured anywhere; the server sink then uses DEFAULT_SERVER_URL.
    url: str | None = None
    secret: str | None = None
    project: str | None = None
    session_id: str | None = None
    debounce_ms: int = 500
    sinks: tuple[str, ...] = ()

    @property
    def server_url(self) -> str:
        return self.url or DEFAULT_SERVER_URL

    @property
    def effective_sinks(self) -> tuple[str, ...]:
        """The spec's default: `server` when a URL is configured, else `vault`."""
        if self.sinks:
            return self.sinks
        return ("server",) if self.url else ("vault",)


class Config(NamedTuple):
    cwd: Path
    project_root: Path
    vault_root: Path
    config_files: tuple[Path, ...] = ()
    extensions: tuple[str, ...] = (".md",)
    max_link_depth: int = 1
    max_search_results: int = 20
    index_hidden_dirs: bool = False
    exclude_dirs: tuple[str, ...] = ("archive",)
    timezone_name: str | None = None
    bundle_name: str = ""
    bundle_version: str = ""
    git_auto_commit: bool = False
    semantic: bool = False  # fuse search rankings with the semantic ranker (the semantic extra)
    watch: WatchSettings = WatchSettings()
    profile: str | None = None
    warnings: tuple[str, ...] = ()

    @property
    def tz(self) -> tzinfo | None:
        """The configured zone, or None for the system's local zone (DST-aware through astimezone())."""
        return parse_timezone(self.timezone_name, "timezone", "<config>") if self.timezone_name else None

    @property
    def cache_dir(self) -> Path:
        """Per-vault state outside the vault's tracked files: index, last-seen table, locks."""
        return cache_home() / "amem" / "vaults" / vault_key(self.vault_root)

    def with_vault(self, vault_root: Path) -> Config:
        return self._replace(vault_root=vault_root)


def cache_home() -> Path:
    base = os.environ.get("XDG_CACHE_HOME")
    return Path(base) if base and os.path.isabs(base) else Path.home() / ".cache"


def state_home() -> Path:
    base = os.environ.get("XDG_STATE_HOME")
    return Path(base) if base and os.path.isabs(base) else Path.home() / ".local" / "state"


def config_home() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME")
    return Path(base) if base and os.path.isabs(base) else Path.home() / ".config"


def vault_key(vault_root: Path) -> str:
    """A stable folder name for a vault: its real path, hashed, plus its name for humans."""
    real = os.path.realpath(vault_root)
    digest = sha1_hex(real.encode("utf-8", "surrogateescape"))[:16]
    name = re.sub(r"[^A-Za-z0-9._-]", "_", os.path.basename(real) or "root")[:40]
    return f"{name}-{digest}"


def find_project_root(cwd: Path) -> Path:
    """Nearest ancestor holding `.amem/`, else the git top-level, else cwd itself."""
    git_top: Path | None = None
    for folder in (cwd, *cwd.parents):
        if (folder / ".amem").is_dir():
            return folder
        if git_top is None and (folder / ".git").exists():
            git_top = folder
    return git_top or cwd


def parse_timezone(value: str, key: str, source: str) -> tzinfo:
    text = value.strip()
    if text.upper() in ("Z", "UTC"):
        return UTC
    match = _OFFSET.match(text)
    if match:
        sign, hours, minutes = match.groups()
        delta = timedelta(hours=int(hours), minutes=int(minutes))
        if delta >= timedelta(hours=24):
            raise ConfigError(f"{key} in {source}: offset {value!r} is out of range", key=key, file=source)
        return timezone(-delta if sign == "-" else delta)
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(
            f"{key} in {source}: {value!r} is not an IANA time zone or a ±HH:MM offset", key=key, file=source
        ) from None


# --- reading and validating -------------------------------------------------------------------------


def _read_yaml(path: Path) -> dict[str, Any]:
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}", file=str(path)) from None
    except UnicodeDecodeError:
        raise ConfigError(f"config file {path} is not UTF-8", file=str(path)) from None
    try:
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"config file {path}: YAML syntax error{where}: {problem}", file=str(path)) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path}: the top level must be a mapping", file=str(path))
    return data


class _Validator:
    """Checks one file's (or the environment's) values, naming key and source in every error."""

    def __init__(self, source: str, warnings: list[str]) -> None:
        self.source = source
        self.warnings = warnings

    def fail(self, key: str, problem: str) -> ConfigError:
        return ConfigError(f"{key} in {self.source}: {problem}", key=key, file=self.source)

    def string(self, key: str, value: Any) -> str:
        if not isinstance(value, str):
            raise self.fail(key, f"expected a string, got {_kind(value)}")
        return value

    def boolean(self, key: str, value: Any) -> bool:
        if not isinstance(value, bool):
            raise self.fail(key, f"expected true or false, got {_kind(value)}")
        return value

    def integer(self, key: str, value: Any, minimum: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(key, f"expected an integer, got {_kind(value)}")
        if value < minimum:
            raise self.fail(key, f"must be at least {minimum}, got {value}")
        return value

    def strings(self, key: str, value: Any) -> tuple[str, ...]:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(key, f"expected a list of strings, got {_kind(value)}")
        return tuple(value)

    def extensions(self, key: str, value: Any) -> tuple[str, ...]:
        exts = self.strings(key, value)
        if not exts:
            raise self.fail(key, "must list at least one extension")
        for ext in exts:
            if not re.fullmatch(r"\.[^./\\\x00]+", ext):
                raise self.fail(key, f'{ext!r} is not an extension such as ".md"')
        return exts

    def regexes(self, key: str, value: tuple[str, ...]) -> tuple[str, ...]:
        for pattern in value:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise self.fail(key, f"invalid regular expression {pattern!r}: {exc}") from None
        return value

    def sinks(self, key: str, value: Any) -> tuple[str, ...]:
        names = self.strings(key, value)
        for name in names:
            if name not in SINK_NAMES:
                raise self.fail(key, f"unknown sink {name!r} (choose from {', '.join(SINK_NAMES)})")
        return names

    def unknown(self, keys: Any, known: set[str], prefix: str = "") -> None:
        for k in keys:
            if k not in known:
                self.warnings.append(f"unknown config key {prefix + str(k)!r} in {self.source} (ignored)")


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "a mapping",
    }.get(type(value), type(value).__name__)


def _apply_file(values: dict[str, Any], data: Mapping[str, Any], check: _Validator, base: Path) -> None:
    """Validate one file's keys and lay them over `values` key by key."""
    check.unknown(data.keys(), _TOP_KEYS)
    for key, raw in data.items():
        if key == "vaultRoot":
            text = check.string(key, raw).strip()
            if text:
                path = Path(os.path.expanduser(text))
                values["vaultRoot"] = path if path.is_absolute() else ("project", path)
        elif key == "extensions":
            values[key] = check.extensions(key, raw)
        elif key == "maxLinkDepth":
            values[key] = check.integer(key, raw, 0)
        elif key == "maxSearchResults":
            values[key] = check.integer(key, raw, 1)
        elif key in ("indexHiddenDirs", "semantic"):
            values[key] = check.boolean(key, raw)
        elif key == "excludeDirs":
            values[key] = check.strings(key, raw)
        elif key == "timezone":
            text = check.string(key, raw)
            parse_timezone(text, key, check.source)
            values[key] = text
        elif key in ("bundleName", "bundleVersion"):
            values[key] = check.string(key, raw)
        elif key == "git":
            if not isinstance(raw, dict):
                raise check.fail(key, f"expected a mapping, got {_kind(raw)}")
            check.unknown(raw.keys(), _GIT_KEYS, "git.")
            if "autoCommit" in raw:
                values["git.autoCommit"] = check.boolean("git.autoCommit", raw["autoCommit"])
        elif key == "watch":
            if not isinstance(raw, dict):
                raise check.fail(key, f"expected a mapping, got {_kind(raw)}")
            _apply_watch(values, raw, check, base)


def _apply_watch(values: dict[str, Any], raw: Mapping[str, Any], check: _Validator, base: Path) -> None:
    check.unknown(raw.keys(), _WATCH_KEYS, "watch.")
    for key, value in raw.items():
        name = f"watch.{key}"
        if key == "dirs":
            dirs = check.strings(name, value)
            values[name] = tuple(str(base / os.path.expanduser(d)) for d in dirs)
        elif key == "ignore":
            values[name] = check.regexes(name, check.strings(name, value))
        elif key == "allowBinary":
            values[name] = check.boolean(name, value)
        elif key in ("url", "secret", "project", "sessionId"):
            text = check.string(name, value).strip()
            if key == "url":
                text = text.rstrip("/")
            if text:
                values[name] = text
        elif key == "debounceMs":
            values[name] = check.integer(name, value, 0)
        elif key == "sinks":
            values[name] = check.sinks(name, value)


def _env_text(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name)
    if value is None:
        return None
    value = value.strip()
    return value or None


def _comma_list(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _apply_env(values: dict[str, Any], env: Mapping[str, str], warnings: list[str], cwd: Path) -> None:
    check = _Validator("the environment", warnings)
    if (vault := _env_text(env, "AMEM_VAULT")) is not None:
        values["vaultRoot"] = cwd / os.path.expanduser(vault)
    if (tz := _env_text(env, "AMEM_TZ")) is not None:
        parse_timezone(tz, "AMEM_TZ", "the environment")
        values["timezone"] = tz
    if (dirs := _env_text(env, "AGENTMEMORY_FS_WATCH_DIRS")) is not None:
        values["watch.dirs"] = tuple(str(cwd / os.path.expanduser(d)) for d in _comma_list(dirs))
    if (ignore := _env_text(env, "AGENTMEMORY_FS_WATCH_IGNORE")) is not None:
        values["watch.ignore"] = check.regexes("AGENTMEMORY_FS_WATCH_IGNORE", _comma_list(ignore))
    if (binary := _env_text(env, "AGENTMEMORY_FS_WATCH_ALLOW_BINARY")) is not None:
        values["watch.allowBinary"] = binary.lower() in ("1", "true", "yes", "on")
    if (url := _env_text(env, "AGENTMEMORY_URL")) is not None and url.rstrip("/"):
        values["watch.url"] = url.rstrip("/")
    if (secret := _env_text(env, "AGENTMEMORY_SECRET")) is not None:
        values["watch.secret"] = secret
    project = _env_text(env, "AGENTMEMORY_PROJECT_NAME") or _env_text(env, "AGENTMEMORY_PROJECT")
    if project is not None:
        values["watch.project"] = project
    if (session := _env_text(env, "AGENTMEMORY_SESSION_ID")) is not None:
        values["watch.sessionId"] = session


def load_config(
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    config_file: str | os.PathLike[str] | None = None,
    vault: str | os.PathLike[str] | None = None,
) -> Config:
    """Build the Config every command uses.

    `config_file` and `vault` are the global flags; they win over `AMEM_CONFIG` and `AMEM_VAULT`.
    """
    env = os.environ if env is None else env
    cwd = Path(os.path.abspath(cwd or os.getcwd()))
    project_root = find_project_root(cwd)
    warnings: list[str] = []
    values: dict[str, Any] = {}

    named = config_file if config_file is not None else _env_text(env, "AMEM_CONFIG")
    if named is not None:
        path = cwd / os.path.expanduser(os.fspath(named))
        if not path.is_file():
            source = "--config" if config_file is not None else "AMEM_CONFIG"
            raise ConfigError(f"config file {path} (from {source}) does not exist", file=str(path))
        files = [path]
    else:
        files = [
            p for p in (config_home() / "amem" / "config.yaml", project_root / ".amem" / "config.yaml") if p.is_file()
        ]
    for path in files:
        _apply_file(values, _read_yaml(path), _Validator(str(path), warnings), path.parent)

    _apply_env(values, env, warnings, cwd)

    if vault is not None:
        vault_root = cwd / os.path.expanduser(os.fspath(vault))
    else:
        configured = values.get("vaultRoot")
        if isinstance(configured, tuple):
            vault_root = project_root / configured[1]
        elif configured is not None:
            vault_root = configured
        else:
            vault_root = project_root / ".amem" / "memory"

    watch = WatchSettings(
        dirs=values.get("watch.dirs", ()),
        ignore=values.get("watch.ignore", ()),
        allow_binary=values.get("watch.allowBinary", False),
        url=values.get("watch.url"),
        secret=values.get("watch.secret"),
        project=values.get("watch.project"),
        session_id=values.get("watch.sessionId"),
        debounce_ms=values.get("watch.debounceMs", 500),
        sinks=values.get("watch.sinks", ()),
    )
    return Config(
        cwd=cwd,
        project_root=project_root,
        vault_root=Path(os.path.normpath(vault_root)),
        config_files=tuple(files),
        extensions=values.get("extensions", (".md",)),
        max_link_depth=values.get("maxLinkDepth", 1),
        max_search_results=values.get("maxSearchResults", 20),
        index_hidden_dirs=values.get("indexHiddenDirs", False),
        exclude_dirs=values.get("excludeDirs", ("archive",)),
        timezone_name=values.get("timezone"),
        bundle_name=values.get("bundleName", ""),
        bundle_version=values.get("bundleVersion", ""),
        git_auto_commit=values.get("git.autoCommit", False),
        semantic=values.get("semantic", False),
        watch=watch,
        profile=_env_text(env, "AMEM_PROFILE"),
        warnings=tuple(warnings),
    )
