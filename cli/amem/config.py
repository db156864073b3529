"""The one config loader: defaults < config files < environment < flags, with every value validated.

Knows nothing of Click; commands hand it their flags by key name, and they are checked like the rest.
"""

import errno
import os
import re
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from .digest import sha1_hex
from .errors import AmemError, ConfigError, UsageError
from .paths import (
    as_path,
    find_project_root,
    is_file,
    is_folder,
    is_within,
    join_path,
    pure_path,
    xdg_home,
)
from .trust import MAX_CONFIG_BYTES, Fence, is_trusted, project_file, vault_refusal

if TYPE_CHECKING:
    from datetime import tzinfo  # loaded by the commands that tell times (a sync, a read need not)
    from pathlib import Path

#: The names of the watcher's sinks, in the order of the registry `amem.watcher.sinks.SINKS`. Repeated here
#: so that checking a config, or showing `amem watch --help`, never imports the watcher
#: (tests/watcher/test_watch_imports.py checks the two agree).
SINK_NAMES = ("server", "vault", "stdout")
DEFAULT_SERVER_URL = "http://localhost:3111"

#: The largest value any integer setting, option or MCP argument takes: a larger one is an error naming it
#: (never a count too large for SQLite or git to hold).
MAX_INTEGER = 1_000_000_000

_OFFSET = re.compile(r"^([+-])(\d{2}):?(\d{2})$")


# NamedTuples rather than dataclasses, and no `from __future__ import annotations` here (NamedTuple would
# compile each string annotation): every command loads this module, so it is kept cheap to import. The few
# annotations that name what is not defined yet are quoted.
class WatchSettings(NamedTuple):
    """The watcher's settings; their names, checks and defaults are declared once, in KEYS below."""

    dirs: tuple[str, ...]
    ignore: tuple[str, ...]
    allow_binary: bool
    #: None when no URL was configured anywhere; the server sink then uses DEFAULT_SERVER_URL.
    url: str | None
    secret: str | None
    project: str | None
    session_id: str | None
    debounce_ms: int
    sinks: tuple[str, ...]

    @property
    def server_url(self) -> str:
        return self.url or DEFAULT_SERVER_URL

    @property
    def effective_sinks(self) -> tuple[str, ...]:
        """The sinks to use: those configured, else `server` when a URL is configured, else `vault`."""
        if self.sinks:
            return self.sinks
        return ("server",) if self.url else ("vault",)


class Config(NamedTuple):
    """Everything a command needs to know about where it runs; the config keys' names, checks and
    defaults are declared once, in KEYS below.

    Its folders are strings, spelled as `pathlib` spells them (`work_dir`, `project_dir`, `vault_dir`,
    `config_paths`, `cache_folder`): `read` and `write` never import `pathlib`, which with the `urllib.parse`
    and `ipaddress` it brings costs every command that loads it about a tenth of its start-up. The
    properties of the same meaning (`cwd`, `project_root`, `vault_root`, `config_files`, `cache_dir`) give
    them as `Path`s to the commands that use `pathlib` anyway."""

    work_dir: str
    project_dir: str
    vault_dir: str
    config_paths: tuple[str, ...]
    extensions: tuple[str, ...]
    max_link_depth: int
    max_search_results: int
    index_hidden_dirs: bool
    exclude_dirs: tuple[str, ...]
    timezone_name: str | None
    bundle_name: str
    bundle_version: str
    git_auto_commit: bool
    semantic: bool
    semantic_model: str
    check_max_note_bytes: int
    watch: WatchSettings
    profile: str | None
    warnings: tuple[str, ...]
    #: the keys of an untrusted project file that were ignored, as they reach outside the project (SPEC §1)
    untrusted: tuple[str, ...] = ()
    #: the vault folder that Claude's memory tool calls /memories (`amem memory-tool`, SPEC §20)
    memory_tool_folder: str = "memories"

    @property
    def tz(self) -> "tzinfo | None":
        """The configured zone, or None for the system's local zone (DST-aware through astimezone())."""
        return parse_timezone(self.timezone_name, "timezone", "<config>") if self.timezone_name else None

    @property
    def cache_folder(self) -> str:
        """Per-vault state outside the vault's tracked files: index, last-seen table, locks."""
        return os.path.join(xdg_home("XDG_CACHE_HOME", ".cache"), "amem", "vaults", vault_key(self.vault_dir))

    @property
    def cache_dir(self) -> "Path":
        return as_path(self.cache_folder)

    @property
    def cwd(self) -> "Path":
        return as_path(self.work_dir)

    @property
    def project_root(self) -> "Path":
        return as_path(self.project_dir)

    @property
    def vault_root(self) -> "Path":
        return as_path(self.vault_dir)

    @property
    def config_files(self) -> "tuple[Path, ...]":
        return tuple(as_path(path) for path in self.config_paths)

    def with_vault(self, vault_root: str | os.PathLike[str]) -> "Config":
        return self._replace(vault_dir=pure_path(os.fspath(vault_root)))


def vault_key(vault_root: str | os.PathLike[str]) -> str:
    """A stable folder name for a vault: its real path, hashed, plus its name for humans."""
    real = os.path.realpath(vault_root)
    digest = sha1_hex(real.encode("utf-8", "surrogateescape"))[:16]
    name = re.sub(r"[^A-Za-z0-9._-]", "_", os.path.basename(real) or "root")[:40]
    return f"{name}-{digest}"


def vault_problem(config: Config) -> str | None:
    """Why the configured vault cannot be a vault (its path is a file, or runs through one), else None.
    Named by its last segment and where it is set, never by its host path."""
    vault_root = config.vault_dir
    try:
        os.stat(vault_root)
    except OSError as exc:
        if exc.errno != errno.ENOTDIR:
            return None  # missing (the first write creates it) or unreadable (each command says so)
        what = "a folder on its path is a file"
    else:
        if os.path.isdir(vault_root):
            return None
        what = "it is a file, not a folder"
    from .output import quote

    name = quote(os.path.basename(vault_root))
    return f"the vault {name} cannot be used: {what} (set by --vault, AMEM_VAULT or vaultRoot)"


def parse_timezone(value: str, key: str, source: str) -> "tzinfo":
    from datetime import UTC, timedelta, timezone

    text = value.strip()
    if text.upper() in ("Z", "UTC"):
        return UTC
    match = _OFFSET.match(text)
    if match:
        sign, hours, minutes = match.groups()
        delta = timedelta(hours=int(hours), minutes=int(minutes))
        if delta >= timedelta(hours=24) or int(minutes) >= 60:
            raise ConfigError(
                f"{key} in {source}: offset {text!r} is out of range (an offset lies between -23:59 and +23:59)",
                key=key,
                file=source,
            )
        return timezone(-delta if sign == "-" else delta)
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(
            f"{key} in {source}: {value!r} is not an IANA time zone or a ±HH:MM offset", key=key, file=source
        ) from None


# --- reading and validating -------------------------------------------------------------------------


def _read_bytes(path: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}", file=str(path)) from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"config file {path} is larger than {MAX_CONFIG_BYTES >> 20} MiB", file=str(path))
    return data


def _parse_yaml(path: str, data: bytes) -> dict[str, Any]:
    import yaml

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"config file {path} is not UTF-8", file=str(path)) from None
    try:
        parsed = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"config file {path}: YAML syntax error{where}: {problem}", file=str(path)) from None
    except (ValueError, OverflowError) as exc:  # a value shaped like a date or time that names none
        raise ConfigError(f"config file {path}: a value is not a real date or time ({exc})", file=str(path)) from None
    if parsed is None:
        return {}
    if not isinstance(parsed, dict):
        raise ConfigError(f"config file {path}: the top level must be a mapping", file=str(path))
    return parsed


class _Validator:
    """Checks one file's (or the environment's) values, naming key and source in every error. Relative
    folders are taken from `base`: the config file's folder, or the working directory."""

    def __init__(self, source: str, warnings: list[str], base: str, fence: "Fence | None" = None) -> None:
        self.source = source
        self.warnings = warnings
        self.base = base
        #: for an untrusted project file, what keeps its settings inside the project
        self.fence = fence

    def fail(self, key: str, problem: str) -> AmemError:
        return ConfigError(f"{key} in {self.source}: {problem}", key=key, file=self.source)

    def bad_regex(self, key: str, pattern: str, exc: re.error) -> AmemError:
        return self.fail(key, f"invalid regular expression {pattern!r}: {exc}")

    def string(self, key: str, value: object) -> str:
        if not isinstance(value, str):
            raise self.fail(key, f"expected a string, got {_kind(value)}")
        return value

    def boolean(self, key: str, value: object) -> bool:
        if not isinstance(value, bool):
            raise self.fail(key, f"expected true or false, got {_kind(value)}")
        return value

    def integer(self, key: str, value: object, minimum: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(key, f"expected an integer, got {_kind(value)}")
        if not minimum <= value <= MAX_INTEGER:
            raise self.fail(key, f"must be from {minimum} to {MAX_INTEGER}, got {value}")
        return value

    def strings(self, key: str, value: object) -> tuple[str, ...]:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(key, f"expected a list of strings, got {_kind(value)}")
        return tuple(value)

    def extensions(self, key: str, value: object) -> tuple[str, ...]:
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
                raise self.bad_regex(key, pattern, exc) from None
        return tuple(dict.fromkeys(value))

    def sinks(self, key: str, value: object) -> tuple[str, ...]:
        names = self.strings(key, value)
        for name in names:
            if name not in SINK_NAMES:
                raise self.fail(key, f"unknown sink {name!r} (choose from {', '.join(SINK_NAMES)})")
        return tuple(dict.fromkeys(names))

    def unknown(self, keys: Iterable[object], known: Collection[str], prefix: str = "") -> None:
        for k in keys:
            if k not in known:
                self.warnings.append(f"unknown config key {prefix + str(k)!r} in {self.source} (ignored)")


class _FlagValidator(_Validator):
    """Checks command-line flags: a bad one is a usage error naming the flag."""

    def fail(self, key: str, problem: str) -> AmemError:
        return UsageError(f"{_KEYS[key].flag}: {problem}")

    def bad_regex(self, key: str, pattern: str, exc: re.error) -> AmemError:
        return UsageError(f"{_KEYS[key].flag} {pattern!r} is not a valid regular expression: {exc}")


def _kind(value: object) -> str:
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


# --- the keys ---------------------------------------------------------------------------------------


def _as_text(text: str, cwd: str) -> object:
    return text


class _Key:
    """One setting, declared once: its name in config.yaml (`watch.debounceMs` is `debounceMs` under
    `watch:`), the Config or WatchSettings field it fills, its check (which returns the value to keep, or
    None to keep the one from the layer below), its default, the flag that overrides it, if any, and the
    environment variables that set it, if any. (A plain class: a NamedTuple of ten fields costs every
    command half a millisecond to define.)"""

    __slots__ = ("name", "field", "check", "default", "flag", "adds", "env", "from_env", "env_help")

    def __init__(
        self,
        name: str,
        field: str,
        check: Callable[[_Validator, str, object], object],
        default: object,
        flag: str | None = None,
        *,
        adds: bool = False,
        env: tuple[str, ...] = (),
        from_env: Callable[[str, str], object] = _as_text,
        env_help: str = "",
    ) -> None:
        self.name = name
        self.field = field
        self.check = check
        self.default = default
        self.flag = flag
        #: the flag's values are added to those of the layers below instead of replacing them
        self.adds = adds
        #: the variables that set it, the first one set (and not blank) winning; older aliases come last
        self.env = env
        #: how a variable's trimmed text becomes the value the check is given (the working directory is the
        #: base of a relative path)
        self.from_env = from_env
        #: what the variable means, for the man page and docs/reference/config.md
        self.env_help = env_help


def _vault_root(check: _Validator, key: str, value: object) -> object:
    text = check.string(key, value).strip()
    if not text:
        return None
    path = os.path.expanduser(text)
    return pure_path(path) if os.path.isabs(path) else ("project", path)  # relative to the project root, found later


def _timezone(check: _Validator, key: str, value: object) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        # YAML 1.1 reads an unquoted offset such as +10:00 as a base-60 number (600).
        value = f"{'-' if value < 0 else '+'}{abs(value) // 60:02d}:{abs(value) % 60:02d}"
    text = check.string(key, value)
    parse_timezone(text, key, check.source)
    return text


def _folders(check: _Validator, key: str, value: object) -> tuple[str, ...]:
    return tuple(join_path(check.base, os.path.expanduser(d)) for d in check.strings(key, value))


def _url(check: _Validator, key: str, value: object) -> str | None:
    return check.string(key, value).strip().rstrip("/") or None


def _text(check: _Validator, key: str, value: object) -> str | None:
    return check.string(key, value).strip() or None


#: `semantic.model` values that name a model amem knows; anything else is a path to a model folder.
SEMANTIC_MODELS = ("static", "minilm")


def _semantic_model(check: _Validator, key: str, value: object) -> str:
    text = check.string(key, value).strip()
    if not text:
        raise check.fail(key, f"expected {' or '.join(SEMANTIC_MODELS)} or the path of a model folder")
    return text if text in SEMANTIC_MODELS else join_path(check.base, os.path.expanduser(text))


def _model_from_env(text: str, cwd: str) -> str:
    return text if text in SEMANTIC_MODELS else _from_cwd(text, cwd)


def _comma_list(text: str, cwd: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _switch(text: str, cwd: str) -> bool:
    return text.lower() in ("1", "true", "yes", "on")


def _from_cwd(text: str, cwd: str) -> str:
    """A path from the environment is taken from the working directory (a file's, from the project root)."""
    return join_path(cwd, os.path.expanduser(text))


def _memory_folder(check: _Validator, key: str, value: object) -> str:
    """A folder of the vault, relative to its root (`/` between names): never the root itself, never
    outside it, never a dot-folder that scans skip."""
    text = check.string(key, value).strip().rstrip("/")
    names = text.split("/")
    if not text or "\\" in text or any(name in ("", ".", "..") or name.startswith(".") for name in names):
        raise check.fail(key, "expected a folder of the vault, such as memories or agents/memories")
    return text


KEYS: tuple[_Key, ...] = (
    _Key(
        "vaultRoot",
        "vault_root",
        _vault_root,
        None,
        flag="--vault",
        env=("AMEM_VAULT",),
        from_env=_from_cwd,
        env_help="The vault folder, relative to the working directory.",
    ),
    _Key("extensions", "extensions", _Validator.extensions, (".md",)),
    _Key("maxLinkDepth", "max_link_depth", lambda c, k, v: c.integer(k, v, 0), 1),
    _Key("maxSearchResults", "max_search_results", lambda c, k, v: c.integer(k, v, 1), 20),
    _Key("indexHiddenDirs", "index_hidden_dirs", _Validator.boolean, False),
    _Key("excludeDirs", "exclude_dirs", _Validator.strings, ("archive",)),
    _Key(
        "timezone",
        "timezone_name",
        _timezone,
        None,
        env=("AMEM_TZ",),
        env_help="Time zone of every timestamp: an IANA name (Asia/Shanghai) or an offset (+08:00).",
    ),
    _Key("bundleName", "bundle_name", _Validator.string, ""),
    _Key("bundleVersion", "bundle_version", _Validator.string, ""),
    _Key("git.autoCommit", "git_auto_commit", _Validator.boolean, False),
    _Key("semantic", "semantic", _Validator.boolean, False, flag="--semantic"),
    # `amem check` calls a note larger than this many bytes `oversized` (info)
    _Key("check.maxNoteBytes", "check_max_note_bytes", lambda c, k, v: c.integer(k, v, 1), 1_000_000),
    _Key("memoryTool.folder", "memory_tool_folder", _memory_folder, "memories"),
    _Key(
        "semantic.model",
        "semantic_model",
        _semantic_model,
        "static",
        env=("AMEM_SEMANTIC_MODEL",),
        from_env=_model_from_env,
        env_help="The semantic model: static, minilm, or a model folder (relative to the working directory).",
    ),
    _Key(
        "watch.dirs",
        "dirs",
        _folders,
        (),
        flag="DIR",
        env=("AGENTMEMORY_FS_WATCH_DIRS",),
        from_env=_comma_list,
        env_help="Comma-separated folders for `amem watch` when no DIR is given.",
    ),
    _Key(
        "watch.ignore",
        "ignore",
        lambda c, k, v: c.regexes(k, c.strings(k, v)),
        (),
        flag="--ignore",
        adds=True,
        env=("AGENTMEMORY_FS_WATCH_IGNORE",),
        from_env=_comma_list,
        env_help="Comma-separated regular expressions of paths (relative to their root) that `amem watch` ignores.",
    ),
    _Key(
        "watch.allowBinary",
        "allow_binary",
        _Validator.boolean,
        False,
        flag="--allow-binary",
        env=("AGENTMEMORY_FS_WATCH_ALLOW_BINARY",),
        from_env=_switch,
        env_help="1 (or true, yes, on; anything else is off): preview files of any type.",
    ),
    _Key(
        "watch.url",
        "url",
        _url,
        None,
        flag="--url",
        env=("AGENTMEMORY_URL",),
        env_help="The agentmemory server for the watcher's server sink (default http://localhost:3111); "
        "setting it makes `server` the default sink.",
    ),
    _Key(
        "watch.secret",
        "secret",
        _text,
        None,
        flag="--secret",
        env=("AGENTMEMORY_SECRET",),
        env_help="Bearer token sent to the agentmemory server.",
    ),
    _Key(
        "watch.project",
        "project",
        _text,
        None,
        flag="--project",
        env=("AGENTMEMORY_PROJECT_NAME", "AGENTMEMORY_PROJECT"),
        env_help="Project label for every observation.",
    ),
    _Key(
        "watch.sessionId",
        "session_id",
        _text,
        None,
        flag="--session-id",
        env=("AGENTMEMORY_SESSION_ID",),
        env_help="Session id for every observation (default: a new fs-watcher-\u2026 id per process).",
    ),
    _Key("watch.debounceMs", "debounce_ms", lambda c, k, v: c.integer(k, v, 0), 500, flag="--debounce-ms"),
    _Key("watch.sinks", "sinks", _Validator.sinks, (), flag="--sink"),
)
_KEYS = {key.name: key for key in KEYS}
#: The keys of config.yaml's top level, and of its sections (git:, watch:).
_TOP_NAMES = {key.name.split(".")[0] for key in KEYS}
_SECTIONS: dict[str, set[str]] = {}
for _key in KEYS:
    if "." in _key.name:
        _section, _, _name = _key.name.partition(".")
        _SECTIONS.setdefault(_section, set()).add(_name)
#: A section that is also a key of its own (`semantic: true`, or `semantic: {enabled: true, model: minilm}`):
#: the mapping's `enabled` is that key.
_ENABLED = "enabled"
for _section in _SECTIONS:
    if _section in _TOP_NAMES and any(key.name == _section for key in KEYS):
        _SECTIONS[_section].add(_ENABLED)


def _places(name: str, value: object, project_root: str) -> tuple[str, ...]:
    """The folders and files a checked value names (none for a bundled model's name)."""
    if isinstance(value, tuple) and value[:1] == ("project",):  # a relative vaultRoot
        return (join_path(project_root, str(value[1])),)
    if isinstance(value, tuple):
        return tuple(str(v) for v in value)
    if name == "semantic.model" and value in SEMANTIC_MODELS:
        return ()
    return (str(value),)


def _set(values: dict[str, object], check: _Validator, name: str, raw: object) -> None:
    key = _KEYS.get(name)
    if key is None:
        return  # an unknown key: warned about, ignored
    value = key.check(check, name, raw)
    fence = check.fence
    if value is not None and (fence is None or fence.admits(name, _places(name, value, fence.project_root))):
        values[name] = value


def _apply_file(values: dict[str, object], data: Mapping[str, object], check: _Validator) -> None:
    """Validate one file's keys and lay them over `values` key by key."""
    check.unknown(data.keys(), _TOP_NAMES)
    for key, raw in data.items():
        if key not in _SECTIONS or (key in _KEYS and not isinstance(raw, dict)):
            _set(values, check, key, raw)
            continue
        if not isinstance(raw, dict):
            raise check.fail(key, f"expected a mapping, got {_kind(raw)}")
        check.unknown(raw.keys(), _SECTIONS[key], f"{key}.")
        for sub, value in raw.items():
            _set(values, check, key if sub == _ENABLED and key in _KEYS else f"{key}.{sub}", value)


def _env_text(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name)
    if value is None:
        return None
    value = value.strip()
    return value or None


def _env_setting(env: Mapping[str, str], names: Iterable[str]) -> tuple[str, str] | None:
    """The first of `names` that is set to more than whitespace, and its trimmed text."""
    for name in names:
        if (text := _env_text(env, name)) is not None:
            return name, text
    return None


def _apply_env(values: dict[str, object], env: Mapping[str, str], warnings: list[str], cwd: str) -> None:
    """Lay the environment over the files: each key's variables, checked by the key's own check under the
    variable's name, replace what the files said (blank counts as unset)."""
    check = _Validator("the environment", warnings, cwd)
    for key in KEYS:
        if (found := _env_setting(env, key.env)) is None:
            continue
        variable, text = found
        value = key.check(check, variable, key.from_env(text, cwd))
        if value is not None:
            values[key.name] = value


def _apply_flags(values: dict[str, object], flags: Mapping[str, object], check: _Validator) -> None:
    """Lay the command's flags (by key name; None or () for a flag not given) over everything else."""
    for name, raw in flags.items():
        if raw is None or raw == ():
            continue
        key = _KEYS[name]
        value = key.check(check, name, list(raw) if isinstance(raw, tuple) else raw)
        if value is None:
            continue
        if key.adds and isinstance(value, tuple):
            value = tuple(dict.fromkeys((*_as_tuple(values.get(name, ())), *value)))
        values[name] = value


def _as_tuple(value: object) -> tuple[object, ...]:
    return value if isinstance(value, tuple) else ()


def load_config(
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    config_file: str | os.PathLike[str] | None = None,
    vault: str | os.PathLike[str] | None = None,
    flags: Mapping[str, object] | None = None,
) -> Config:
    """Build the Config every command uses.

    `config_file` and `vault` are the global flags; they win over `AMEM_CONFIG` and `AMEM_VAULT`. `flags`
    are a command's own, by key name (`{"watch.url": "http://h:1"}`), checked like the rest and winning
    over everything; a bad one is a usage error naming the flag.
    """
    env = os.environ if env is None else env
    here = pure_path(os.path.abspath(cwd or os.getcwd()))
    warnings: list[str] = []
    project_root = find_project_root(here, warnings)
    values: dict[str, object] = {}
    files = _config_files(config_file, env, here, project_root, warnings)
    ours = None if _names_a_file(config_file, env) else project_file(project_root)
    fence = _apply_files(values, files, ours, project_root, warnings)
    _apply_env(values, env, warnings, here)
    _apply_flags(values, flags or {}, _FlagValidator("the command line", warnings, here))

    configured = values.pop("vaultRoot", None)
    vault_root = _vault_root_of(vault, configured, here, project_root)
    trusted_file = fence is None and ours in files
    refusal = (
        None
        if trusted_file
        else _chosen_by_project(vault, configured, fence, env) and vault_refusal(vault_root, project_root)
    )
    if refusal:
        raise ConfigError(refusal, key="vaultRoot", file=project_file(project_root))

    settings = {key.field: values.get(key.name, key.default) for key in KEYS if key.name != "vaultRoot"}
    watch = {key.field: settings.pop(key.field) for key in KEYS if key.name.startswith("watch.")}
    return Config(
        work_dir=here,
        project_dir=project_root,
        vault_dir=vault_root,
        config_paths=files,
        watch=WatchSettings(**watch),  # type: ignore[arg-type]
        profile=_env_text(env, "AMEM_PROFILE"),
        warnings=tuple(warnings),
        untrusted=tuple(fence.ignored) if fence is not None else (),
        **settings,  # type: ignore[arg-type]
    )


def _apply_files(
    values: dict[str, object], files: tuple[str, ...], ours: str | None, project_root: str, warnings: list[str]
) -> "Fence | None":
    """Lay the config files over `values`, the project's own (`ours`; None when the user named the one file
    to read) fenced in when the user does not trust it; that fence, or None."""
    fence = None
    for path in files:
        data = _read_bytes(path)
        if path == ours and not is_trusted(ours, data):
            fence = Fence(project_root, path, warnings)
        _apply_file(values, _parse_yaml(path, data), _Validator(path, warnings, os.path.dirname(path), fence))
    return fence


def _vault_root_of(vault: str | os.PathLike[str] | None, configured: object, here: str, project_root: str) -> str:
    """The vault folder: --vault (from the working directory), else the configured one, else the default."""
    if vault is not None:
        root = join_path(here, os.path.expanduser(os.fspath(vault)))
    elif isinstance(configured, tuple):
        root = join_path(project_root, configured[1])
    elif isinstance(configured, str):
        root = configured
    else:
        root = join_path(project_root, ".amem/memory")
    return pure_path(os.path.normpath(root))


def _chosen_by_project(
    vault: str | os.PathLike[str] | None, configured: object, fence: "Fence | None", env: Mapping[str, str]
) -> bool:
    """Whether the project chose the vault: its default folder, or its untrusted file's vaultRoot."""
    if vault is not None:
        return False
    taken = fence is not None and "vaultRoot" in fence.taken
    return configured is None or (taken and _env_setting(env, ("AMEM_VAULT",)) is None)


def _names_a_file(config_file: str | os.PathLike[str] | None, env: Mapping[str, str]) -> bool:
    """Whether --config or AMEM_CONFIG names the one config file to read (the user's choice: trusted)."""
    return config_file is not None or _env_text(env, "AMEM_CONFIG") is not None


def _config_files(
    config_file: str | os.PathLike[str] | None, env: Mapping[str, str], cwd: str, project_root: str, warnings: list[str]
) -> tuple[str, ...]:
    """The one file --config or AMEM_CONFIG names, else those of the user and the project that exist (a
    project file that a symlink leads out of the project passed over with a warning)."""
    named = config_file if config_file is not None else _env_text(env, "AMEM_CONFIG")
    if named is None:
        user = join_path(xdg_home("XDG_CONFIG_HOME", ".config"), "amem/config.yaml")
        project = project_file(project_root)
        if is_file(project) and not is_within(project, project_root):
            warnings.append(f"ignored {project}: it is a symlink that leads outside the project")
            return tuple(p for p in (user,) if is_file(p))
        return tuple(p for p in (user, project) if is_file(p))
    path = join_path(cwd, os.path.expanduser(os.fspath(named)))
    if not is_file(path):
        source = "--config" if config_file is not None else "AMEM_CONFIG"
        what = "is a folder, not a file" if is_folder(path) else "does not exist"
        raise ConfigError(f"config file {path} (from {source}) {what}", file=str(path))
    return (path,)
