"""Documentation generated from the CLI's own definitions: the bash/zsh/fish completion scripts, the man
page, the command reference (docs/reference/commands.md), and the generated blocks of the hand-written
pages: the exit-code table (README.md, docs/reference/exit-codes.md), the environment variables
(docs/reference/config.md, from the config keys' table) and the recipes (docs/guide/recipes.md).

    python -m amem._docs            regenerate every file in the source tree
    python -m amem._docs --check    list the files that differ from what would be generated (exit 1)

tests/test_docs.py regenerates everything and fails when a checked-in file has drifted. amem itself never
imports this module, so none of it costs start-up time.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import click

from . import __version__
from .cli import cli
from .commands import examples
from .completion import SHELLS, completion_script
from .config import KEYS
from .errors import EXIT_CODES

#: The source tree this module lives in (cli/amem/_docs.py → the folder holding pyproject.toml).
SOURCE_ROOT = Path(__file__).resolve().parents[2]
#: Help is rendered at a fixed width so that the generated text does not depend on the terminal.
HELP_WIDTH = 80

COMPLETION_FILES = {"bash": "completions/amem.bash", "zsh": "completions/_amem", "fish": "completions/amem.fish"}
MAN_FILE = "man/amem.1"
README_FILE = "README.md"
COMMANDS_FILE = "docs/reference/commands.md"
EXIT_CODES_FILE = "docs/reference/exit-codes.md"
CONFIG_FILE = "docs/reference/config.md"
RECIPES_FILE = "docs/guide/recipes.md"
#: Recipe blocks kept in step with a recipe file, by marker name.
RECIPES = {
    "recipe-post-commit": ("docs/recipes/post-commit", "sh"),
    "recipe-amem-open": ("docs/recipes/amem-open.sh", "sh"),
    "recipe-agent-remember": ("docs/recipes/agent-remember.sh", "sh"),
}


def _key_variables(watch: bool) -> tuple[tuple[str, str], ...]:
    """The variables of the config keys' table (amem.config.KEYS), each with what it means and sets."""
    entries = []
    for key in KEYS:
        if not key.env or key.name.startswith("watch.") != watch:
            continue
        variable, *older = key.env
        if key.adds:
            over = f"; {key.flag} adds to it"
        elif key.flag == "DIR":
            over = "; DIR arguments win over it"
        else:
            over = f"; {key.flag} wins over it" if key.flag else ""
        wins = "".join(f" Wins over {name}." for name in older)
        entries.append((variable, f"{key.env_help} Replaces `{key.name}` of the config files{over}.{wins}"))
        entries += [(name, f"The older name of {variable}, read when {variable} is unset.") for name in older]
    return tuple(entries)


#: Every environment variable amem reads, for the man page and docs/reference/config.md: those that set a
#: config key come from its table; tests/test_docs.py checks this list against the names the code mentions.
ENVIRONMENT: tuple[tuple[str, str], ...] = (
    *_key_variables(watch=False),
    ("AMEM_CONFIG", "Read only this config file instead of the user and project files; overridden by --config."),
    ("AMEM_PROFILE", "The profile name `amem info` reports and --expect-profile checks."),
    ("AMEM_DEBUG", "When set, an unexpected internal error shows its Python traceback instead of a JSON error."),
    (
        "AMEM_NO_KEEPER",
        "When set (not 0), search, read and list answer in their own process even while a keeper "
        "(`amem index --watch`, `amem mcp`) could answer them; they still use its sync cookies. It also turns "
        "off the path that runs `read`, `list`, `search`, `write` and `sync` before the command-line parser "
        "loads (the same output and the same notes, about a third less time): they then run through it.",
    ),
    ("XDG_CONFIG_HOME", "Where the user config file lives (default ~/.config); only an absolute path counts."),
    ("XDG_CACHE_HOME", "Where the index and write locks live (default ~/.cache); only an absolute path counts."),
    ("XDG_STATE_HOME", "Where the watcher's spool lives (default ~/.local/state); only an absolute path counts."),
    ("HOME", "The base of the XDG defaults above."),
    *_key_variables(watch=True),
    ("_AMEM_COMPLETE", "Set by the completion scripts when the shell asks amem for completions."),
)

FILES: tuple[tuple[str, str], ...] = (
    ("$XDG_CONFIG_HOME/amem/config.yaml", "The user config file (default ~/.config/amem/config.yaml)."),
    (
        "<project root>/.amem/config.yaml",
        "The project config file; overrides the user file key by key. The "
        "project root is the nearest folder upwards holding .amem/, else the "
        "git top-level, else the working directory.",
    ),
    ("<project root>/.amem/memory/", "The default vault."),
    (
        "$XDG_CACHE_HOME/amem/vaults/<name>-<hash>/index-<version>.sqlite",
        "The vault's index (notes, titles, links, "
        "search terms, and the versions amem last saw, for `modifiedExternally`), one folder per vault, one "
        "file per version of its layout (two amems of different versions running at once keep one each; "
        "a new one takes the other's semantic vectors and last-seen versions and removes the files no "
        "process has open, and `amem index` those closed since). It "
        "is only a cache: deleting it costs one rebuild.",
    ),
    ("$XDG_CACHE_HOME/amem/vaults/<name>-<hash>/locks/", "Per-note locks that serialise concurrent writers."),
    (
        "$XDG_STATE_HOME/amem/spool/<server>-<hash>/",
        "The watcher's durable spool for the server sink: one "
        "file per observation (mode 0600, it holds previews) until the server has stored it; failed/ keeps "
        "those the server rejected for good.",
    ),
    ("<vault>/observations/YYYY-MM-DD.md", "Where the watcher's vault sink appends observations."),
)

EXAMPLES: tuple[tuple[str, str], ...] = (
    (
        "Remember something, then find it again:",
        'echo "Auth tokens expire after 24 hours" | amem write notes/auth --append\namem search "auth token"',
    ),
    ("Read a note and the notes it links to, two levels deep:", "amem read decisions/keys --depth 2"),
    (
        "Write only if nobody changed the note since it was read:",
        "version=$(amem read notes/auth | jq -r .version)\n"
        'amem write notes/auth --base-version "$version" "One more fact."',
    ),
    (
        "Show a note's history and bring back an older version:",
        "amem history notes/auth\n"
        'amem restore notes/auth HEAD~1 --base-version "$(amem read notes/auth | jq -r .version)"',
    ),
    ("Check the identity before an agent writes:", 'amem info --expect-cwd "$PWD" --expect-vault "$PWD/.amem/memory"'),
    ("Turn edits under a project into observations in the vault:", "amem watch ~/work/my-repo --sink vault"),
)


# --- the CLI as data ----------------------------------------------------------------------------------


def root_context() -> click.Context:
    """The root context as a real run builds it (context_settings such as -h apply), without running."""
    return cli.make_context("amem", [], resilient_parsing=True, terminal_width=HELP_WIDTH)


def commands() -> Iterator[tuple[str, click.Command, click.Context]]:
    """Each subcommand that exists in this source tree, with a context for rendering its help."""
    root = root_context()
    for name in cli.list_commands(root):
        command = cli.get_command(root, name)
        if command is not None:
            yield name, command, command.make_context(name, [], parent=root, resilient_parsing=True)


def help_text(ctx: click.Context) -> str:
    """Exactly what `amem … --help` prints at HELP_WIDTH columns."""
    return ctx.command.get_help(ctx) + "\n"


def options(ctx: click.Context) -> Iterator[tuple[str, str]]:
    """(option names and metavar, help) for every option of ctx's command, help option included."""
    for param in ctx.command.get_params(ctx):
        if isinstance(param, click.Option):
            record = param.get_help_record(ctx)
            if record is not None:
                yield record


# --- Markdown pages ----------------------------------------------------------------------------------


def commands_reference() -> str:
    """docs/reference/commands.md: every command's help, exactly as `amem … --help` prints it."""
    root = root_context()
    parts = [
        "# Command reference\n\n"
        "Generated from the CLI by `python -m amem._docs`; `amem COMMAND --help` prints the same. "
        "Exit codes are in [Output and exit codes](exit-codes.md), the config keys and environment variables "
        "in [Configuration and environment](config.md).\n\n"
        "<!-- command-reference:start -->\n"
        "### `amem`\n\n```text\n" + help_text(root) + "```\n"
    ]
    for name, _, ctx in commands():
        parts.append(f"### `amem {name}`\n\n```text\n" + help_text(ctx) + "```\n")
    return "\n".join(parts) + "<!-- command-reference:end -->\n"


def exit_code_table() -> str:
    rows = ["| exit | code | meaning |", "|---|---|---|"]
    rows += [f"| {status} | `{code}` | {meaning} |" for code, (status, meaning) in EXIT_CODES.items()]
    return "\n".join(rows) + "\n"


def environment_table() -> str:
    rows = ["| variable | meaning |", "|---|---|"]
    rows += [f"| `{name}` | {meaning} |" for name, meaning in ENVIRONMENT]
    return "\n".join(rows) + "\n"


def recipe_block(name: str, root: Path) -> str:
    path, language = RECIPES[name]
    return f"```{language}\n" + (root / path).read_text(encoding="utf-8") + "```\n"


def replace_block(text: str, name: str, body: str, page: str = README_FILE) -> str:
    """Replace what lies between `<!-- name:start -->` and `<!-- name:end -->`; both markers must exist."""
    start, end = f"<!-- {name}:start -->\n", f"<!-- {name}:end -->"
    head, found, rest = text.partition(start)
    if not found or end not in rest:
        raise ValueError(f"{page} has no {start.strip()} … {end} block")
    return head + start + body + end + rest.split(end, 1)[1]


def page_blocks(root: Path) -> dict[str, dict[str, str]]:
    """The generated blocks of each hand-written page, by page and marker name."""
    return {
        README_FILE: {"recipe-post-commit": recipe_block("recipe-post-commit", root), "exit-codes": exit_code_table()},
        EXIT_CODES_FILE: {"exit-codes": exit_code_table()},
        CONFIG_FILE: {"environment": environment_table()},
        RECIPES_FILE: {name: recipe_block(name, root) for name in RECIPES},
    }


def update_page(page: str, text: str, blocks: dict[str, str]) -> str:
    for name, body in blocks.items():
        text = replace_block(text, name, body, page)
    return text


# --- man page -----------------------------------------------------------------------------------------

_SPECIAL = {
    "\u2026": "\\&...",
    "\u2192": "\\(->",
    "\u2014": "\\(em",
    "\u2013": "\\(en",
    "\u00d7": "\\(mu",
    "\u2018": "\\(oq",
    "\u2019": "\\(cq",
    "\u201c": "\\(lq",
    "\u201d": "\\(rq",
    "\u00b1": "\\(+-",
}
_OPTION = re.compile(r"(?<![\w.-])--?[A-Za-z][\w-]*")
_CODE = re.compile(r"`([^`]+)`")


def roff(text: str) -> str:
    """Text as roff: backslashes escaped, option dashes as \\- (so that they copy and search as ASCII),
    `code` in bold, characters outside ASCII as named glyphs or \\[uXXXX], no line starting a request."""
    out = text.replace("\\", "\\e")
    out = _OPTION.sub(lambda m: m.group(0).replace("-", "\\-"), out)
    out = _CODE.sub(lambda m: "\\fB" + m.group(1).replace("\\-", "-").replace("-", "\\-") + "\\fR", out)
    out = "".join(_SPECIAL.get(c, c if ord(c) < 128 else f"\\[u{ord(c):04X}]") for c in out)
    return "\n".join("\\&" + line if line.startswith((".", "'")) else line for line in out.split("\n"))


def _paragraphs(help_text: str) -> list[str]:
    """A Click help text as roff paragraphs: lines of a paragraph joined, `\\b` blocks kept as they are."""
    out = []
    for block in re.split(r"\n\s*\n", help_text.strip()):
        lines = [line.strip() for line in block.splitlines()]
        if lines and lines[0] == "\b":
            out.append(".nf\n" + roff("\n".join(lines[1:])) + "\n.fi")
        else:
            out.append(roff(" ".join(line for line in lines if line)))
    return out


def _option_heading(names: str) -> str:
    """`--sink [server|vault|stdout]`, `-h, --help` or `--x / --no-x` with names in bold, metavars in italics."""
    pieces = []
    for i, part in enumerate(re.split(r"(, | / )", names)):
        if i % 2:  # a separator
            pieces.append(part)
            continue
        name, _, metavar = part.partition(" ")
        pieces.append(f"\\fB{roff(name)}\\fR" + (f" \\fI{roff(metavar)}\\fR" if metavar else ""))
    return "".join(pieces)


def _options_section(ctx: click.Context) -> list[str]:
    lines = []
    for names, help_ in options(ctx):
        # Click separates the help from notes such as [x>=0] with two spaces; in roff that shows as a gap.
        lines += [".TP", _option_heading(names), roff(re.sub(r"\s{2,}", " ", help_))]
    return lines


def _synopsis(ctx: click.Context, name: str) -> str:
    pieces = ctx.command.collect_usage_pieces(ctx)
    return f"\\fBamem {name}\\fR " + " ".join(f"\\fI{roff(p)}\\fR" if p.isupper() else roff(p) for p in pieces)


def man_page() -> str:
    root = root_context()
    first, *rest = _paragraphs(cli.help or "")
    lines = [
        ".\\\" Generated by `python -m amem._docs` from amem's CLI definitions; do not edit by hand.",
        f'.TH AMEM 1 "" "amem {__version__}" "User Commands"',
        # No hyphenation, ragged right: option names and ids must not be split or stretched.
        ".nh",
        ".ad l",
        ".SH NAME",
        "amem \\- " + first[0].lower() + first[1:].rstrip("."),
        ".SH SYNOPSIS",
        ".nf",
        "\\fBamem\\fR [\\fB\\-\\-vault\\fR \\fIPATH\\fR] [\\fB\\-\\-config\\fR \\fIFILE\\fR] \\fICOMMAND\\fR "
        "[\\fIARGS\\fR]...",
    ]
    subcommands = list(commands())
    lines += [_synopsis(ctx, name) for name, _, ctx in subcommands]
    lines += [".fi", ".SH DESCRIPTION"]
    lines += _join_paragraphs([first, *rest])
    lines += [
        ".PP",
        "A note id is a path relative to the vault with \\fB/\\fR as the separator; the extension may be "
        "left out (\\fBnotes/x\\fR means \\fBnotes/x.md\\fR). Ids that leave the vault are refused.",
        ".SH OPTIONS",
        "These come before the command.",
        *_options_section(root),
        ".SH COMMANDS",
    ]
    for name, command, ctx in subcommands:
        lines += [f'.SS "amem {name}"', _synopsis(ctx, name), ".PP", *_join_paragraphs(_paragraphs(command.help or ""))]
        lines += _options_section(ctx)
        if command_examples := examples(command):
            lines += [".PP", "Examples:", ".PP", ".RS", ".nf", roff("\n".join(command_examples)), ".fi", ".RE"]
    lines += [
        ".SH ENVIRONMENT",
        "Command-line flags win over environment variables, which win over config files. Each variable is "
        "trimmed; one that holds only whitespace counts as unset.",
    ]
    for var, meaning in ENVIRONMENT:
        lines += [".TP", f"\\fB{roff(var)}\\fR", roff(meaning)]
    lines += [".SH FILES"]
    for path, meaning in FILES:
        lines += [".TP", f"\\fI{roff(path)}\\fR", roff(meaning)]
    lines += [
        ".SH EXIT STATUS",
        'On failure amem prints {"error": {"code": ..., "message": ...}} on stderr and exits with '
        "the status of its code:",
    ]
    for code, (status, meaning) in EXIT_CODES.items():
        lines += [".TP", f"\\fB{status}\\fR", f"\\fB{roff(code)}\\fR: {roff(meaning)}"]
    lines += [".TP", "\\fB130\\fR", "Interrupted (Ctrl-C)."]
    lines += [".SH EXAMPLES"]
    for caption, code in EXAMPLES:
        lines += [".PP", roff(caption), ".PP", ".RS", ".nf", roff(code), ".fi", ".RE"]
    lines += [
        ".SH SEE ALSO",
        "\\fBgit\\fR(1), \\fBjq\\fR(1), and the guides in the docs/ folder of the amem source, among them "
        "recipes: a git post-commit hook, a search-and-open shell function, an agent's read-then-write loop.",
    ]
    return "\n".join(lines) + "\n"


def _join_paragraphs(paragraphs: list[str]) -> list[str]:
    out: list[str] = []
    for i, paragraph in enumerate(paragraphs):
        if i:
            out.append(".PP")
        out.append(paragraph)
    return out


# --- everything ---------------------------------------------------------------------------------------


def generated_files(root: Path = SOURCE_ROOT) -> dict[str, str]:
    """Every generated file, by path relative to `root`, as it should read now."""
    files = {path: completion_script(shell, cli) for shell, path in COMPLETION_FILES.items() if shell in SHELLS}
    files[MAN_FILE] = man_page()
    files[COMMANDS_FILE] = commands_reference()
    for page, blocks in page_blocks(root).items():
        files[page] = update_page(page, (root / page).read_text(encoding="utf-8"), blocks)
    return files


def stale_files(root: Path = SOURCE_ROOT) -> list[str]:
    stale = []
    for path, text in generated_files(root).items():
        target = root / path
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            stale.append(path)
    return stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m amem._docs", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only report files that are out of date")
    parser.add_argument("--root", type=Path, default=SOURCE_ROOT, help="the source tree (default: %(default)s)")
    args = parser.parse_args(argv)
    if not (args.root / "pyproject.toml").is_file():
        parser.error(f"{args.root} is not an amem source tree (no pyproject.toml): pass --root")
    if args.check:
        stale = stale_files(args.root)
        for path in stale:
            print(f"out of date: {path}", file=sys.stderr)
        return 1 if stale else 0
    for path, text in generated_files(args.root).items():
        target = args.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            target.write_text(text, encoding="utf-8")
            print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
