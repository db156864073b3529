"""The console script's fast path: with a live keeper, `amem search`, `read` and `list` are answered before
Click, the config loader or any command module is imported, so that such a command costs Python's start-up
and one round trip (`keeper_ask` says the protocol). Otherwise they still run before Click loads, in this
process, by the functions the command calls (`_in_process`): Click's import is most of what such a command
costs beyond Python's start. A config file is then read as the command reads it, and a live keeper asked
with it, as the command asks.

It answers only what it can tell exactly as the command would, and leaves everything else to Click by
returning None before it has printed anything:

- a plain command line (`parse`): `amem [--vault PATH] COMMAND …` with the command's own long options, each
  once (`--tag` as often as wanted), as `--name value` or `--name=value`, values that do not start with `-`,
  numbers in ASCII digits and in range, `--sort` one of its choices, and as many arguments as the command
  takes; `--` ends the options. No help, no completion, no `--config`.
- a config of defaults, environment and `--vault` only (`plain_config`): no config file (neither
  AMEM_CONFIG, nor the user's nor the project's config.yaml), every variable the config loader reads
  (ENVIRONMENT) either one that cannot make the config wrong or one judged here as the loader judges it,
  and a vault that is a folder.
- a keeper that answers (`keeper_ask.answering_socket`, `exchange`). Once it has asked, the command does
  not ask again if it goes on through Click (`keeper_ask.asked`): a stopped keeper costs one wait.
- or a plain command line alone (any config the loader takes): the keeper asked with that config, when a
  plain one did not ask it, or else the command's functions run here, and succeed. On any failure nothing
  has been printed, and the command runs through Click, which reports it as it always does (an error costs
  the command twice) and asks no keeper again.

It sends the request the command's own path sends and prints the answer as `commands.keeper_answered`
does: stdout first (indented on a terminal), then the warnings; a stdout that refuses it fails as
`output.emit_text` makes the command fail. A Ctrl-C that Python swallowed while amem loaded ends the run
before it asks (`interrupt.check`), as one during the wait does, with the command's own error.
tests/test_keeper_fast.py holds both paths to the same output and `plain_config` to `load_config`.
"""

from __future__ import annotations

import errno
import os
import stat
import sys

from .keeper_ask import answering_socket, exchange, no_keeper, request_line, settings_of, view_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..config import Config
    from ..report import Reporter

    #: runs operation `op` with its arguments: (the result, what to run once it is out)
    RunHere = Callable[[Config, str, dict[str, Any], Reporter], tuple[Any, Callable[[], None] | None]]


#: Each command's long options and the kind of value each takes: `flag` none (`on`/`off` the two spellings
#: of --semantic/--no-semantic), `text` one, `texts` one each time it is given, `count` a whole number of at
#: least 1, `number` one of at least 0, `sort` one of SORTS.
OPTIONS: dict[str, dict[str, str]] = {
    "search": {
        "--limit": "count",
        "--exact-title": "text",
        "--tag": "texts",
        "--folder": "text",
        "--semantic": "on",
        "--no-semantic": "off",
        "--explain": "flag",
    },
    "read": {"--depth": "number", "--max-chars": "number"},
    "list": {"--tag": "texts", "--sort": "sort", "--limit": "count", "--since": "text"},
}
#: The fewest and the most arguments each command takes (None: any number).
ARGUMENTS: dict[str, tuple[int, int | None]] = {"search": (0, None), "read": (1, 1), "list": (0, 1)}
SORTS = ("id", "modified", "created")
#: `commands.MAX_INTEGER`, the most any number option takes (Click and the commands are not loaded here).
MAX_INTEGER = 1_000_000_000
#: The commands answered in this process, without Click, when no keeper answers: those that change
#: nothing a failure could leave half done (a read records what it saw only once it has its answer; a
#: search's refresh of the index is the one any search makes).
IN_PROCESS = ("read", "list", "search")

#: The variables the config loader reads (config.KEYS): those judged here as the loader judges them, and
#: those that cannot make a config wrong (the watcher's: a list, a switch, texts), which no answer uses.
JUDGED = ("AMEM_VAULT", "AMEM_TZ", "AMEM_SEMANTIC_MODEL", "AGENTMEMORY_FS_WATCH_IGNORE")
HARMLESS = (
    "AGENTMEMORY_FS_WATCH_DIRS",
    "AGENTMEMORY_FS_WATCH_ALLOW_BINARY",
    "AGENTMEMORY_URL",
    "AGENTMEMORY_SECRET",
    "AGENTMEMORY_PROJECT_NAME",
    "AGENTMEMORY_PROJECT",
    "AGENTMEMORY_SESSION_ID",
)
ENVIRONMENT = frozenset(JUDGED + HARMLESS)
#: config.KEYS' defaults of what an answer depends on.
EXTENSIONS = (".md",)
EXCLUDE_DIRS = ("archive",)
INDEX_HIDDEN_DIRS = False
MAX_LINK_DEPTH = 1
MAX_SEARCH_RESULTS = 20
SEMANTIC_MODELS = ("static", "minilm")
#: The errors a missing path gives, which pathlib's checks answer False to; any other is not judged here.
_MISSING = (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP)


def answer(argv: list[str], run_here: RunHere | None = None) -> int | None:
    """Answer `amem ARGV` through a live keeper, or else (a read or list) with `run_here` in this process,
    and return the exit code; None, having printed nothing, when the command must run through Click.
    `run_here` is `amem.ops.answers.run`'s signature: the console script hands it down (the index layer
    does not import the operations')."""
    held: list[str] = []
    try:
        return _answer(argv, held, run_here)
    except KeyboardInterrupt:
        return _interrupted(held)


def _answer(argv: list[str], held: list[str], run_here: RunHere | None) -> int | None:
    if os.environ.get("_AMEM_COMPLETE") or no_keeper():
        return None
    if sys.stdin is None or sys.stdout is None or sys.stderr is None:
        return None  # a closed standard stream: Click's path reserves it first
    line = parse(argv)
    request = None if line is None else _request(line)
    if request is None:
        return None
    op, args, semantic = request
    assert line is not None
    plain = plain_config(line.vault, semantic)
    socket_path = None if plain is None else answering_socket(plain.cache)
    if socket_path is None:
        return _in_process(line, (op, args, semantic), held, run_here, ask_first=plain is None)
    assert plain is not None
    from .. import interrupt
    from . import keeper_ask

    interrupt.check()  # before anything is asked, as the command's own path checks before it runs
    keeper_ask.asked = True
    got = exchange(socket_path, request_line(op, plain.settings, plain.view, args))
    if got is None:
        return _in_process(line, (op, args, semantic), held, run_here, ask_first=False)
    held.extend(got.warnings)
    return _print(got.text, held)


def _in_process(
    line: Line,
    request: tuple[str, dict[str, Any], bool | None],
    held: list[str],
    run_here: RunHere | None,
    ask_first: bool,
) -> int | None:
    """The command run in this process by the functions it calls, without Click: with any config the
    loader takes, a live keeper is asked first (`ask_first`: when it was not asked with a plain config),
    as the command asks it, and otherwise the operation runs here. The command's output when it succeeds;
    None, having printed nothing, when it fails in any way (the command then runs through Click, which
    says what is wrong as it always does)."""
    op, args, semantic = request
    if run_here is None or op not in IN_PROCESS:
        return None
    from .. import interrupt
    from ..config import load_config, vault_problem
    from ..output import one_line
    from ..report import StderrReporter
    from . import keeper_ask

    interrupt.check()  # before the command does anything, as Click's path checks
    # the command line's reporter: warnings held until the result is out, progress on a terminal only
    reporter = StderrReporter(hold=True)
    try:
        config = load_config(vault=line.vault, flags={"semantic": semantic} if op == "search" else None)
        if vault_problem(config):
            return None
        for message in config.warnings:
            reporter.warn(message)
        got = None
        if ask_first:
            got = keeper_ask.ask(config, op, args)
            keeper_ask.asked = True  # Click's path, should this one fail, does not ask again
        if got is not None:
            held.extend(reporter.take_held() + got.warnings)
            return _print(got.text, held)
        result, after = run_here(config, op, args, reporter)
        text = one_line(result)
        if after is not None:
            after()  # a read's record of what it saw, made before printing as the command makes it
    except Exception:  # noqa: BLE001 (any failure is the command's to report, through Click)
        return None
    held.extend(reporter.take_held())
    return _print(text, held)


# --- the command line ---------------------------------------------------------------------------------


class Line:
    """A command line the fast path takes: --vault's value, the command, its options and its arguments."""

    __slots__ = ("arguments", "command", "options", "vault")

    def __init__(self, vault: str | None, command: str, options: dict[str, Any], arguments: list[str]) -> None:
        self.vault = vault
        self.command = command
        self.options = options
        self.arguments = arguments


def parse(argv: list[str]) -> Line | None:
    """The command line as Click would parse it, when it is plain (see the module); None otherwise."""
    root = root_options(argv)
    if root is None:
        return None
    vault, i = root
    if i >= len(argv) or argv[i] not in OPTIONS:
        return None
    command = argv[i]
    found = _command_line(OPTIONS[command], argv[i + 1 :])
    if found is None:
        return None
    options, arguments = found
    least, most = ARGUMENTS[command]
    if len(arguments) < least or (most is not None and len(arguments) > most):
        return None
    return Line(vault, command, options, arguments)


def root_options(argv: list[str]) -> tuple[str | None, int] | None:
    """The root group's options before the command, when plain: --vault's value (None when not given) and
    where the command's name is; None for anything else (`--config`, `--help`, a value that starts with
    `-`)."""
    vault: str | None = None
    i = 0
    while i < len(argv) and argv[i][:1] == "-":
        name, eq, value = argv[i].partition("=")
        if name != "--vault" or vault is not None:
            return None
        if not eq:
            if i + 1 >= len(argv):
                return None
            i += 1
            value = argv[i]
        if not value or value[:1] == "-":
            return None
        vault = value
        i += 1
    return vault, i


def _command_line(spec: dict[str, str], tokens: list[str]) -> tuple[dict[str, Any], list[str]] | None:
    """The command's options (by name; --semantic's two spellings as `--semantic`) and its arguments,
    interspersed as Click takes them; None for anything not plain."""
    options: dict[str, Any] = {}
    arguments: list[str] = []
    only_arguments = False
    j = 0
    while j < len(tokens):
        token = tokens[j]
        j += 1
        if only_arguments or token[:1] != "-" or token == "-":
            arguments.append(token)
            continue
        if token == "--":
            only_arguments = True
            continue
        name, eq, value = token.partition("=")
        kind = spec.get(name)
        if kind is None:
            return None
        if kind in ("flag", "on", "off"):
            key = "--semantic" if kind != "flag" else name
            if eq or key in options:
                return None
            options[key] = kind != "off"
            continue
        if not eq:
            if j >= len(tokens):
                return None
            value = tokens[j]
            j += 1
        converted = _value(kind, value)
        if converted is None or (kind != "texts" and name in options):
            return None
        if kind == "texts":
            options.setdefault(name, []).append(converted)
        else:
            options[name] = converted
    return options, arguments


def _value(kind: str, value: str) -> str | int | None:
    """An option's value as Click converts it, when it is plain; None otherwise."""
    if value[:1] == "-":
        return None
    if kind in ("count", "number"):
        if not (value.isascii() and value.isdigit()):
            return None
        number = int(value)
        return number if (1 if kind == "count" else 0) <= number <= MAX_INTEGER else None
    if kind == "sort":
        return value if value in SORTS else None
    return value


def _request(line: Line) -> tuple[str, dict[str, Any], bool | None] | None:
    """The operation, its arguments as the command sends them, and --semantic (None when not given); None
    when the command would refuse the line (a search with neither QUERY nor --exact-title)."""
    options, arguments = line.options, line.arguments
    if line.command == "search":
        query = " ".join(arguments) if arguments else None
        exact_title = options.get("--exact-title")
        if query is None and exact_title is None:
            return None
        args = {
            "query": query,
            "limit": options.get("--limit"),
            "exactTitle": exact_title,
            "tags": options.get("--tag", []),
            "folder": options.get("--folder"),
            "explain": options.get("--explain", False),
        }
        return "search", args, options.get("--semantic")
    if line.command == "read":
        return (
            "read",
            {"id": arguments[0], "depth": options.get("--depth"), "maxChars": options.get("--max-chars")},
            None,
        )
    args = {
        "prefix": arguments[0] if arguments else None,
        "tags": options.get("--tag", []),
        "sort": options.get("--sort"),
        "limit": options.get("--limit"),
        "since": options.get("--since"),
    }
    return "list", args, None


# --- the config ---------------------------------------------------------------------------------------


class Plain:
    """What a request needs of a config made of defaults, environment and flags: the cache folder (where
    the keeper's lock and socket are), the settings and the config values it sends."""

    __slots__ = ("cache", "settings", "view")

    def __init__(self, cache: str, settings: str, view: dict[str, Any]) -> None:
        self.cache = cache
        self.settings = settings
        self.view = view


class _Unsure(Exception):
    """Something the config loader would judge otherwise than a plain lookup can tell (an unreadable
    folder on the way, no home folder): the fast path stands aside."""


def plain_config(vault_flag: str | None, semantic: bool | None) -> Plain | None:
    """The config `load_config(vault=vault_flag, flags={"semantic": semantic})` would build, as far as an
    answer depends on it, when it comes from defaults, the environment and flags alone and is valid, and
    its vault is a folder; None otherwise (a config file, a value judged only by the loader, an error)."""
    env = os.environ
    if _variable("AMEM_CONFIG") is not None:
        return None
    try:
        cwd = os.path.abspath(os.getcwd())
        project = _project_root(cwd)
        if _has_config_file(project):
            return None
        zone = _variable("AMEM_TZ")
        model = _variable("AMEM_SEMANTIC_MODEL") or "static"
        if (zone is not None and not _zone_ok(zone)) or model not in SEMANTIC_MODELS or not _patterns_ok():
            return None
        vault = _vault_root(vault_flag, cwd, project)
        if vault is None or not os.path.isdir(vault):
            return None  # the command says what is wrong with it
        base = env.get("XDG_CACHE_HOME")
        cache_home = base if base and os.path.isabs(base) else os.path.join(_home(), ".cache")
    except (OSError, _Unsure):
        return None
    cache = os.path.join(cache_home, "amem", "vaults", _vault_key(vault))
    settings = settings_of(vault, EXTENSIONS, EXCLUDE_DIRS, INDEX_HIDDEN_DIRS, model)
    view = view_of(MAX_LINK_DEPTH, MAX_SEARCH_RESULTS, bool(semantic), zone)
    return Plain(cache, settings, view)


def _variable(name: str) -> str | None:
    """The variable's text, trimmed; None when unset or blank (as the config loader reads it)."""
    value = os.environ.get(name)
    if value is None:
        return None
    return value.strip() or None


def _home() -> str:
    home = os.path.expanduser("~")
    if home[:1] == "~":
        raise _Unsure("no home folder")
    return home


def _kind(path: str) -> int | None:
    """The file type bits of `path` (symlinks followed), None when it is missing."""
    try:
        return stat.S_IFMT(os.stat(path).st_mode)
    except OSError as exc:
        if exc.errno in _MISSING:
            return None
        raise _Unsure(path) from None
    except ValueError:
        return None


def _project_root(cwd: str) -> str:
    """`config.find_project_root`; a `.amem/` it passes over (another user's) is the loader's to warn of."""
    from ..paths import find_project_root

    passed_over: list[str] = []
    root = find_project_root(cwd, passed_over)
    if passed_over:
        raise _Unsure("a .amem/ of another user")
    return root


def _has_config_file(project: str) -> bool:
    """Whether the user's or the project's config.yaml is a file (`config._config_files`)."""
    base = os.environ.get("XDG_CONFIG_HOME")
    config_home = base if base and os.path.isabs(base) else os.path.join(_home(), ".config")
    candidates = (os.path.join(config_home, "amem", "config.yaml"), os.path.join(project, ".amem", "config.yaml"))
    return any(_kind(path) == stat.S_IFREG for path in candidates)


def _vault_root(flag: str | None, cwd: str, project: str) -> str | None:
    """The vault folder as `load_config` finds it: --vault, else AMEM_VAULT (both from the working
    directory), else the project's `.amem/memory`; None when whitespace makes pathlib's spelling of it
    matter (the loader trims the path it joined)."""
    if flag is not None:
        root = os.path.join(cwd, os.path.expanduser(flag))
    elif (text := _variable("AMEM_VAULT")) is not None:
        root = os.path.join(cwd, os.path.expanduser(text))
        if any(char.isspace() for char in root):
            return None
    else:
        root = os.path.join(project, ".amem", "memory")
        from ..paths import is_within

        if not is_within(root, project):
            return None  # the project's vault leads elsewhere: the loader judges whether the user trusts it
    return os.path.normpath(root)


def _zone_ok(text: str) -> bool:
    """Whether `config.parse_timezone` takes AMEM_TZ's text."""
    import re

    if text.upper() in ("Z", "UTC"):
        return True
    offset = re.match(r"^([+-])(\d{2}):?(\d{2})$", text)
    if offset:
        hours, minutes = int(offset.group(2)), int(offset.group(3))
        return hours * 60 + minutes < 24 * 60 and minutes < 60
    try:
        from zoneinfo import ZoneInfo

        ZoneInfo(text)
    except Exception:  # noqa: BLE001 (not found, malformed, unreadable: the loader's to say)
        return False
    return True


def _patterns_ok() -> bool:
    """Whether every pattern of AGENTMEMORY_FS_WATCH_IGNORE compiles, as the config loader requires."""
    text = _variable("AGENTMEMORY_FS_WATCH_IGNORE")
    if text is None:
        return True
    import re

    try:
        for part in text.split(","):
            if part.strip():
                re.compile(part.strip())
    except Exception:  # noqa: BLE001 (re.error, or a pattern too deep: the loader's to say)
        return False
    return True


def _vault_key(vault_root: str) -> str:
    """`config.vault_key`: the vault's cache folder's name."""
    import re

    if TYPE_CHECKING:
        from hashlib import sha1
    else:
        try:
            from _sha1 import sha1  # CPython's own: hashlib would load OpenSSL (amem.digest says why)
        except ImportError:  # an interpreter without the builtin module
            from hashlib import sha1
    real = os.path.realpath(vault_root)
    digest = sha1(real.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    name = re.sub(r"[^A-Za-z0-9._-]", "_", os.path.basename(real) or "root")[:40]
    return f"{name}-{digest}"


# --- the answer, printed --------------------------------------------------------------------------------


def _print(text: str, held: list[str]) -> int:
    """Print the result (one line of JSON) as the command prints it: on stdout, then the warnings."""
    out = sys.stdout
    if _is_terminal(out):  # indented, as emit() prints for a terminal
        import json

        text = json.dumps(json.loads(text), ensure_ascii=False, indent=2)
    try:
        out.write(text + "\n")
        out.flush()
    except BrokenPipeError:  # a reader such as `head` went away: exit 1, nothing more said (as Click does)
        from ..output import silence_stdout

        silence_stdout()
        held.clear()
        return 1
    except (OSError, ValueError) as exc:
        return _unprintable(exc, held)
    _say(held)
    return 0


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _say(held: list[str]) -> None:
    """The warnings, as the command's reporter says them once its result is out."""
    warnings = list(held)
    held.clear()
    for message in warnings:
        try:
            sys.stderr.write(f"amem: warning: {message}\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass


def _unprintable(exc: OSError | ValueError, held: list[str]) -> int:
    """`output.emit_text`'s error when stdout refuses the result, with the warnings folded in."""
    from ..errors import IoError
    from ..output import silence_stdout

    if isinstance(exc, OSError):
        silence_stdout()
        error = IoError(f"cannot print the result: {exc.strerror or type(exc).__name__}")
    else:
        error = IoError("cannot print the result: stdout is closed")
    return _failed(error.to_json(), error.exit_code, held)


def _interrupted(held: list[str]) -> int:
    """The command's error for a Ctrl-C."""
    from ..errors import Interrupted

    error = Interrupted("interrupted (Ctrl-C)")
    return _failed(error.to_json(), error.exit_code, held)


def _failed(document: dict[str, Any], code: int, held: list[str]) -> int:
    from ..output import emit_error

    if held:
        document["error"]["warnings"] = list(held)
    emit_error(document)
    return code
