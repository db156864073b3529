"""The requests of the operations a keeper answers (`search`, `read`, `list`), each declared once: the command's
arguments and options are built from its declaration (`commands.declared`), the keeper checks a request
against it (`ops.answers`), and the console script reads a command line by it before Click loads (`shim`).
Adding an option to one of these commands is one `Param` here, and the function that takes it.

A request names each value by its `Param.name` (camelCase, as the MCP tools do): words are joined by a
space (None when there are none), repeated options are a list, and a value not given is None (a flag False).
A `switch` is not part of the request but a config flag of the command (`--semantic/--no-semantic`).
The MCP tool of an operation (`wiki_search`, `wiki_read`, `wiki_list`) offers the parameters that have an
`mcp` name, described by their `brief`, with their `mcp_default` (REQUIRED: the argument must be given).
"""

#: The most any number option takes (`config.MAX_INTEGER`, not imported: the shim loads as little as it can).
MAX_NUMBER = 1_000_000_000
SORTS = ("id", "modified", "created")
#: An MCP argument without a default.
REQUIRED = object()


class Param:
    """One argument or option. `kind`: `words` (any number of arguments), `id` (one argument), `optional`
    (at most one argument), `count` (a whole number from 1), `number` (from 0), `text`, `texts` (given
    again, a list), `flag` (no value), `choice` (one of `choices`), `switch` (a config flag, on or off)."""

    __slots__ = ("brief", "choices", "flag", "help", "kind", "mcp", "mcp_default", "metavar", "name")

    def __init__(
        self,
        name: str,
        kind: str,
        flag: str | None = None,
        *,
        metavar: str = "",
        help: str = "",
        choices: tuple[str, ...] = (),
        mcp: str | None = None,
        brief: str = "",
        mcp_default: object = None,
    ) -> None:
        self.name = name
        #: the MCP tool's name for it (None: not offered over MCP), its description there, and its default
        self.mcp = mcp
        self.brief = brief
        self.mcp_default = mcp_default
        self.kind = kind
        self.flag = flag
        self.metavar = metavar
        self.help = help
        self.choices = choices

    @property
    def positional(self) -> bool:
        return self.kind in ("words", "id", "optional")


_TAGS_HELP = (
    "Only notes tagged T (frontmatter tags or #T in the body; with or without #, any case; nested tags count{}). "
    "Repeat: every tag must hold."
)

_TAGS_BRIEF = "Only notes with all these tags."
_FOLDER_BRIEF = "Only notes under this folder."

OPS: dict[str, tuple[Param, ...]] = {
    "search": (
        Param("query", "words", mcp="query", brief="Words to look for, OR-matched."),
        Param(
            "also",
            "texts",
            "--also",
            metavar="Q",
            help="Another query for the same answer (its keywords, a sentence the answer would hold); each is "
            "ranked and the rankings fused, QUERY weighing double. Repeat: at most 5 queries in all. Not with "
            "--exact-title.",
            mcp="queries",
            brief="Other wordings (≤5 in all); the first counts double.",
        ),
        Param(
            "limit",
            "count",
            "--limit",
            metavar="N",
            help="Return at most N hits (default: maxSearchResults, 20).",
            mcp="maxResults",
            brief="At most this many hits (default 20).",
        ),
        Param(
            "exactTitle",
            "text",
            "--exact-title",
            metavar="TITLE",
            help="List every note whose title equals TITLE, ignoring case, Unicode form and space/-/_ differences; "
            "no ranking. QUERY is then optional.",
            mcp="exactTitle",
            brief="Instead: every note with this title (any case).",
        ),
        Param(
            "tags",
            "texts",
            "--tag",
            metavar="T",
            help=_TAGS_HELP.format(": project matches project/amem"),
            mcp="tags",
            brief=_TAGS_BRIEF,
        ),
        Param(
            "folder",
            "text",
            "--folder",
            metavar="PREFIX",
            help="Only notes under this folder (notes or notes/).",
            mcp="folder",
            brief=_FOLDER_BRIEF,
        ),
        Param(
            "semantic",
            "switch",
            "--semantic",
            help="Fuse the keyword ranking with the offline semantic ranking (needs the semantic extra); default: "
            "the config's semantic.",
        ),
        Param(
            "explain",
            "flag",
            "--explain",
            help="Add to each hit its keyword score and rank and its semantic similarity and rank, and to the "
            "result the fusion weight chosen for this query and why.",
            mcp="explain",
            brief="Per hit: why it ranks there.",
            mcp_default=False,
        ),
    ),
    "read": (
        Param(
            "id",
            "id",
            metavar="ID",
            mcp="id",
            brief="Note id ('projects/auth', .md optional).",
            mcp_default=REQUIRED,
        ),
        Param(
            "depth",
            "number",
            "--depth",
            metavar="N",
            help="Follow links this many levels deep (default: maxLinkDepth, 1).",
            mcp="depth",
            brief="Link levels to follow (default 1; 0: none).",
        ),
        Param(
            "maxChars",
            "number",
            "--max-chars",
            metavar="N",
            help="Bound the characters of all bodies: the note first, then linked notes nearest first, cut at "
            "lines (truncated, omitted say what was left out). Default: no bound.",
            mcp="maxChars",
            brief="Bound on all bodies' characters.",
            mcp_default=20_000,
        ),
        Param(
            "lines",
            "text",
            "--lines",
            metavar="A-B",
            help="Only the file's lines A to B as body (numbered as an editor does, from 1, frontmatter "
            "included; A- to the end, A alone one line), with lines: {from, to, total}. B past the end stops "
            "at the end; A past it is a usage error. links, backlinks and version stay the whole note's; "
            "linked notes are followed only with --depth.",
            mcp="lines",
            brief="Only these file lines: 'A-B', 'A-'.",
        ),
        Param(
            "section",
            "text",
            "--section",
            metavar="HEADING",
            help="Only the section under HEADING as body, heading line included, found as edit --section "
            "finds it (any case and level; #s fix the level), with lines as for --lines. A heading that is "
            "missing or not unique is a usage error. Not with --lines.",
            mcp="section",
            brief="Only this heading's section.",
        ),
    ),
    "list": (
        Param("prefix", "optional", metavar="[PREFIX]", mcp="folder", brief=_FOLDER_BRIEF),
        Param("tags", "texts", "--tag", metavar="T", help=_TAGS_HELP.format(""), mcp="tags", brief=_TAGS_BRIEF),
        Param(
            "sort",
            "choice",
            "--sort",
            choices=SORTS,
            help="Order by id (the default; with --since, modified), or newest first by modification or by "
            "frontmatter `created`.",
            mcp="sort",
            brief="id (default), or newest modified or created first.",
        ),
        Param(
            "limit",
            "count",
            "--limit",
            metavar="N",
            help="Return at most N notes.",
            mcp="maxResults",
            brief="At most this many notes.",
        ),
        Param(
            "since",
            "text",
            "--since",
            metavar="WHEN",
            help="Only notes modified since WHEN: a duration back from now (30m, 12h, 2d, 1w) or an ISO date or "
            "time (2026-11-30, 2026-11-30T09:00+01:00); newest first unless --sort is given.",
            mcp="since",
            brief="Only notes modified since: '2d', '12h', '30m', an ISO time.",
        ),
    ),
}

_NONE = type(None)
#: The types a request's value of each kind may have.
TYPES: dict[str, tuple[type, ...]] = {
    "words": (str, _NONE),
    "id": (str,),
    "optional": (str, _NONE),
    "count": (int, _NONE),
    "number": (int, _NONE),
    "text": (str, _NONE),
    "texts": (list,),
    "flag": (bool,),
    "choice": (str, _NONE),
}


def request(op: str, given: dict[str, object]) -> tuple[dict[str, object], dict[str, object]]:
    """A command's parsed values (by `Param.name`, as Click or `read_line` gives them) as the operation's
    request and the command's config flags (a switch's value by its name)."""
    args: dict[str, object] = {}
    flags: dict[str, object] = {}
    for param in OPS[op]:
        value = given.get(param.name)
        if param.kind == "switch":
            flags[param.name] = value
        elif param.kind == "words":
            args[param.name] = " ".join(value) if value else None  # type: ignore[arg-type]
        elif param.kind == "texts":
            args[param.name] = list(value or ())  # type: ignore[call-overload]
        elif param.kind == "flag":
            args[param.name] = bool(value)
        else:
            args[param.name] = value
    return args, flags


def missing(op: str, args: dict[str, object]) -> str | None:
    """What a request lacks that its command refuses without (a search with neither words nor a title to
    match), as the usage error says it; None when nothing."""
    if op == "search" and args["query"] is None and not args["also"] and args["exactTitle"] is None:
        return "search needs a QUERY or --exact-title TITLE"
    return None


def read_line(op: str, tokens: list[str]) -> dict[str, object] | None:
    """The command line's values (by `Param.name`) as Click would parse them, when the line is plain: the
    declared long options, each once (a `texts` one as often as wanted), as `--name value` or `--name=value`,
    values that do not start with `-`, numbers in ASCII digits and in range, and as many arguments as the
    command takes; `--` ends the options. None for anything else (Click then reads it and says what is wrong)."""
    params = OPS[op]
    options = _options(params)
    given: dict[str, object] = {}
    words: list[str] = []
    rest = False
    i = 0
    while i < len(tokens):
        token, i = tokens[i], i + 1
        if rest or token[:1] != "-" or token == "-":
            words.append(token)
            continue
        if token == "--":
            rest = True
            continue
        name, eq, text = token.partition("=")
        param = options.get(name)
        if param is None or (param.name in given and param.kind != "texts"):
            return None
        if param.kind in ("flag", "switch"):
            if eq:
                return None
            given[param.name] = not name.startswith("--no-")
            continue
        if not eq:
            text, i = (tokens[i], i + 1) if i < len(tokens) else ("-", i)
        if not _give(param, text, given):
            return None
    return given if _take_words(params, words, given) else None


def _options(params: tuple[Param, ...]) -> dict[str, Param]:
    """Each option's spellings: its flag, and a switch's `--no-` flag too."""
    options = {p.flag: p for p in params if p.flag}
    options.update({"--no-" + p.flag[2:]: p for p in params if p.kind == "switch" and p.flag})
    return options


def _give(param: Param, text: str, given: dict[str, object]) -> bool:
    """Add an option's value to `given`; False when it is not plain."""
    value = _value(param, text)
    if value is None:
        return False
    if param.kind == "texts":
        values = given.setdefault(param.name, [])
        assert isinstance(values, list)
        values.append(value)
    else:
        given[param.name] = value
    return True


def _value(param: Param, text: str) -> object:
    if text[:1] == "-":
        return None
    if param.kind in ("count", "number"):
        if not (text.isascii() and text.isdigit()):
            return None
        number = int(text)
        return number if (1 if param.kind == "count" else 0) <= number <= MAX_NUMBER else None
    if param.kind == "choice" and text not in param.choices:
        return None
    return text


def _take_words(params: tuple[Param, ...], words: list[str], given: dict[str, object]) -> bool:
    """Give the arguments to the positional parameter; False when there are too many or too few."""
    for param in params:
        if param.kind == "words":
            given[param.name] = tuple(words)
            return True
        if param.kind == "id":
            given[param.name] = words[0] if len(words) == 1 else None
            return len(words) == 1
        if param.kind == "optional":
            given[param.name] = words[0] if words else None
            return len(words) <= 1
    return not words
