"""The documentation is checked, not trusted: the completion scripts, the man page, the command reference and
the generated blocks of the README and docs/ must equal what the CLI generates now; every command, option,
environment variable and exit code is documented; every exit code in the table is produced through the CLI
by a test below; the README stays a short front door whose links, like those of docs/, all lead somewhere."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from amem import _docs
from amem.cli import COMMANDS, cli
from amem.commands import examples
from amem.errors import EXIT_CODES

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
CONTRIBUTING = (REPO / "CONTRIBUTING.md").read_text(encoding="utf-8")
COMMAND_REFERENCE = (REPO / _docs.COMMANDS_FILE).read_text(encoding="utf-8")
CONFIG_REFERENCE = (REPO / _docs.CONFIG_FILE).read_text(encoding="utf-8")
EXIT_CODES_PAGE = (REPO / _docs.EXIT_CODES_FILE).read_text(encoding="utf-8")
MAN = (REPO / "man" / "amem.1").read_text(encoding="utf-8")
REGENERATE = "out of date: run `python -m amem._docs` and commit the result"


# --- generated files ----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", sorted(_docs.generated_files(REPO)))
def test_generated_file_is_up_to_date(path: str) -> None:
    expected = _docs.generated_files(REPO)[path]
    assert (REPO / path).read_text(encoding="utf-8") == expected, f"{path} is {REGENERATE}"


def test_every_command_in_the_registry_exists() -> None:
    # Otherwise the generated files would silently leave a command out.
    assert [name for name, _, _ in _docs.commands()] == list(COMMANDS)


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_script_is_what_amem_prints(shell: str, isolated_env: Path) -> None:
    env = dict(os.environ, _AMEM_COMPLETE=f"{shell}_source")
    result = subprocess.run([sys.executable, "-m", "amem"], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stderr == ""
    # Click 8.4 prints the script with an extra newline at the end, 8.5 as it is.
    checked_in = (REPO / _docs.COMPLETION_FILES[shell]).read_text(encoding="utf-8")
    assert result.stdout.rstrip("\n") == checked_in.rstrip("\n")


def test_install_puts_the_man_page_and_scripts_where_their_tools_look() -> None:
    data_files = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["data-files"]
    assert data_files["share/man/man1"] == [_docs.MAN_FILE]
    installed = {path for paths in data_files.values() for path in paths}
    assert installed == {_docs.MAN_FILE, *_docs.COMPLETION_FILES.values()}


# --- help ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_has_help_and_help_works(name: str) -> None:
    runner = CliRunner()
    result = runner.invoke(cli, [name, "--help"], prog_name="amem", terminal_width=_docs.HELP_WIDTH)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"Usage: amem {name} ")
    assert runner.invoke(cli, [name, "-h"], prog_name="amem", terminal_width=_docs.HELP_WIDTH).stdout == result.stdout
    command = cli.get_command(click.Context(cli), name)
    assert command is not None and (command.help or "").strip() and command.get_short_help_str()
    for param in command.params:
        if isinstance(param, click.Option):
            assert param.help, f"amem {name} {param.opts[0]} has no help text"
    # The command reference shows exactly this.
    assert f"### `amem {name}`\n\n```text\n{result.stdout}```\n" in COMMAND_REFERENCE


def example_arguments(line: str) -> list[str]:
    """The arguments amem is given in an example command line: its stage of a pipeline, after any
    `NAME=value` assignments, as the shell splits it."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars="|")
    lexer.whitespace_split = True
    stage: list[str] = []
    for token in [*lexer, "|"]:
        if token != "|":
            stage.append(token)
            continue
        while stage and re.fullmatch(r"[A-Z_]+=.*", stage[0]):
            stage.pop(0)
        if stage and stage[0] == "amem":
            return stage[1:]
        stage = []
    raise AssertionError(f"no amem command in {line!r}")


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_help_ends_with_examples_the_cli_accepts(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    command = cli.get_command(click.Context(cli), name)
    assert command is not None
    lines = examples(command)
    assert 2 <= len(lines) <= 3, f"amem {name} should show two or three examples"
    result = CliRunner().invoke(cli, [name, "--help"], prog_name="amem", terminal_width=_docs.HELP_WIDTH)
    assert result.stdout.endswith("Examples:\n" + "".join(f"  {line}\n" for line in lines))
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(command, "callback", lambda **params: calls.append(params))
    for line in lines:
        arguments = example_arguments(line)
        assert arguments[0] == name, line
        outcome = CliRunner().invoke(cli, arguments, catch_exceptions=False)
        assert outcome.exit_code == 0, f"{line!r} is not accepted: {outcome.stderr}"
    assert len(calls) == len(lines)


def test_example_arguments_are_split_as_the_shell_splits_them() -> None:
    assert example_arguments("""echo "a | b" | amem write notes/x""") == ["write", "notes/x"]
    assert example_arguments("""X=1 amem search "a b" | jq -r '.hits[] | .id'""") == ["search", "a b"]
    with pytest.raises(AssertionError):
        example_arguments("echo amem")


def test_root_help_is_in_the_command_reference() -> None:
    result = CliRunner().invoke(cli, ["--help"], prog_name="amem", terminal_width=_docs.HELP_WIDTH)
    assert result.exit_code == 0
    assert f"### `amem`\n\n```text\n{result.stdout}```\n" in COMMAND_REFERENCE


# --- the man page -------------------------------------------------------------------------------------


def man_section(title: str) -> str:
    """The text of `.SH TITLE` or `.SS "TITLE"` up to the next heading of the same or a higher level."""
    level = ".SS" if title.startswith("amem ") else ".SH"
    heading = f'.SS "{title}"\n' if level == ".SS" else f".SH {title}\n"
    assert heading in MAN, f"the man page has no {heading.strip()}"
    rest = MAN.split(heading, 1)[1]
    stop = r"^\.S[HS] " if level == ".SS" else r"^\.SH "
    return re.split(stop, rest, maxsplit=1, flags=re.M)[0]


def man_text(text: str) -> str:
    return text.replace("-", "\\-")


def test_the_man_page_has_every_section() -> None:
    for title in (
        "NAME",
        "SYNOPSIS",
        "DESCRIPTION",
        "OPTIONS",
        "COMMANDS",
        "ENVIRONMENT",
        "FILES",
        "EXIT STATUS",
        "EXAMPLES",
    ):
        assert man_section(title).strip()


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_and_option_is_in_the_man_page(name: str) -> None:
    section = man_section(f"amem {name}")
    assert f"\\fBamem {name}\\fR" in man_section("SYNOPSIS")
    ctx = next(ctx for command_name, _, ctx in _docs.commands() if command_name == name)
    for param in ctx.command.params:
        for opt in [*param.opts, *param.secondary_opts] if isinstance(param, click.Option) else []:
            assert f"\\fB{man_text(opt)}\\fR" in section, f"{opt} of amem {name} is not in the man page"
        for piece in param.get_usage_pieces(ctx):  # arguments: ID, [CONTENT|-], [DIR]...
            assert _docs.roff(piece) in section


def test_the_global_options_are_in_the_man_page() -> None:
    section = man_section("OPTIONS")
    for param in cli.params:
        for opt in param.opts:
            assert f"\\fB{man_text(opt)}\\fR" in section


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff is not installed (.ci/run installs it)")
def test_the_man_page_renders_without_warnings() -> None:
    result = subprocess.run(
        ["groff", "-ww", "-z", "-man", str(REPO / "man" / "amem.1")], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0 and result.stderr == "", result.stderr


def variables_amem_reads() -> set[str]:
    """Every environment variable name the package's source mentions as a string."""
    names: set[str] = set()
    for path in (REPO / "cli" / "amem").rglob("*.py"):
        if path.name != "_docs.py":
            names |= set(re.findall(r"[\"']((?:_?AMEM|AGENTMEMORY|XDG)_[A-Z_]+)[\"']", path.read_text("utf-8")))
    return names


def test_every_environment_variable_is_documented() -> None:
    found = variables_amem_reads()
    assert {"AMEM_VAULT", "AGENTMEMORY_PROJECT_NAME", "XDG_STATE_HOME", "_AMEM_COMPLETE"} <= found  # the scan works
    documented = {name for name, _ in _docs.ENVIRONMENT}
    assert found <= documented, f"not in the man page's ENVIRONMENT: {sorted(found - documented)}"
    environment = man_section("ENVIRONMENT")
    for name in documented:
        assert f"\\fB{man_text(name)}\\fR" in environment
        assert f"| `{name}` | " in CONFIG_REFERENCE, f"{name} is not in {_docs.CONFIG_FILE}"


def test_the_files_section_names_the_cache_and_the_spool() -> None:
    files = man_section("FILES")
    for fragment in ("config.yaml", "amem/vaults/", "<version>.sqlite", "amem/spool/", "observations/"):
        assert man_text(fragment) in files


# --- exit codes ---------------------------------------------------------------------------------------


def test_every_exit_code_is_in_the_readme_the_reference_and_the_man_page() -> None:
    exit_status = man_section("EXIT STATUS")
    for code, (status, meaning) in EXIT_CODES.items():
        assert f"| {status} | `{code}` | {meaning} |" in README
        assert f"| {status} | `{code}` | {meaning} |" in EXIT_CODES_PAGE
        assert f".TP\n\\fB{status}\\fR\n\\fB{man_text(code)}\\fR: " in exit_status


def _internal_failure(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    import amem.ops.read

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(amem.ops.read, "read_note", broken)
    return ["read", "x"]


def _conflict(amem: Any) -> list[str]:
    assert amem("write", "x", "first").exit_code == 0
    return ["write", "x", "--base-version", "0" * 40, "second"]


def _history_without_git(amem: Any) -> list[str]:
    assert amem("write", "x", "first").exit_code == 0
    return ["history", "x"]


def _config_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    (tmp_path / "bad.yaml").write_text("maxLinkDepth: -1\n")
    monkeypatch.setenv("AMEM_CONFIG", str(tmp_path / "bad.yaml"))
    return ["read", "x"]


def _cache_folder_is_a_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    (tmp_path / "cache-file").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache-file"))
    return ["search", "x"]


def _problems(amem: Any) -> list[str]:
    assert amem("write", "x", "[[nowhere]]").exit_code == 0
    return ["check"]


def _ctrl_c(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    import amem.ops.read

    def interrupted(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(amem.ops.read, "read_note", interrupted)
    return ["read", "x"]


#: One way to reach each exit status through the CLI: the arguments, or a setup that returns them.
EXIT_CASES: dict[int, Any] = {
    0: ["info"],
    1: _internal_failure,
    2: ["read", "--no-such-option"],
    3: ["read", "no/such/note"],
    4: _conflict,
    5: ["read", "../outside"],
    6: _history_without_git,
    7: _config_error,
    8: ["info", "--expect-cwd", "/no/such/folder"],
    9: lambda tmp_path: ["watch", str(tmp_path / "no-such-root")],
    10: _cache_folder_is_a_file,
    11: _problems,
    130: _ctrl_c,
}


def test_the_cases_cover_the_whole_table() -> None:
    assert sorted(EXIT_CASES) == sorted(status for status, _ in EXIT_CODES.values())


@pytest.mark.parametrize("status", sorted(EXIT_CASES))
def test_each_exit_code_is_produced_through_the_cli(
    status: int, amem: Any, vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    case = EXIT_CASES[status]
    if callable(case):
        wanted = case.__code__.co_varnames[: case.__code__.co_argcount]
        available = {"amem": amem, "tmp_path": tmp_path, "monkeypatch": monkeypatch}
        case = case(**{name: available[name] for name in wanted})
    result = amem(*case)
    assert result.exit_code == status, result.stderr
    code = next(code for code, (number, _) in EXIT_CODES.items() if number == status)
    if status == 0:
        assert result.stderr == "" or "warning" in result.stderr
    else:
        assert result.error["code"] == code
        assert "Traceback" not in result.stderr


# --- the README ---------------------------------------------------------------------------------------


def ci_command(name: str) -> str:
    """The command line of .ci/run under its comment `# <name> …`."""
    ci = re.search(rf"^# {re.escape(name)}.*\n(.+)$", (REPO / ".ci" / "run").read_text(), re.M)
    assert ci, f"no {name!r} in .ci/run"
    return ci.group(1)


def test_the_readme_test_command_is_the_one_ci_runs() -> None:
    readme = re.search(r"Install the test dependencies and run the tests:\n\n```sh\n(.+)\n```", README)
    assert readme
    assert readme.group(1) == ci_command("The README's test command")


def test_contributing_runs_the_tests_and_checks_as_ci_does() -> None:
    tests = re.search(r"run the tests.*?\n\n```sh\n([^\n]+)\n```", CONTRIBUTING, re.S)
    checks = re.search(r"Run the checks CI runs before the tests.*?\n\n```sh\n([^\n]+)\n```", CONTRIBUTING, re.S)
    assert tests and checks
    assert tests.group(1) == ci_command("The README's test command")
    assert checks.group(1) == ci_command("CONTRIBUTING.md's check command")
    for check in ("ruff check cli tests", "ruff format --check cli tests", "mypy"):
        assert check in checks.group(1)
    assert "pre-commit install" in CONTRIBUTING


def test_pre_commit_runs_the_checks_ci_runs() -> None:
    import yaml

    hooks = yaml.safe_load((REPO / ".pre-commit-config.yaml").read_text())["repos"][0]["hooks"]
    checks = ci_command("CONTRIBUTING.md's check command").split(" && ")[1:]
    assert [hook["entry"] + (" " + " ".join(hook["args"]) if hook.get("args") else "") for hook in hooks] == checks


def test_the_readme_shows_the_real_uses() -> None:
    for use in ('amem search "auth token"', "| amem write notes/", "--append", "post-commit", "--base-version"):
        assert use in README


def commands_missing_from_the_changelog(changelog: str) -> list[str]:
    """The commands that no release of `changelog` and not its Unreleased section names as `amem NAME`."""
    entries = changelog.split("\n## [", 1)[1] if "\n## [" in changelog else ""
    return [name for name in COMMANDS if not re.search(rf"`amem {name}[` ]", entries)]


def test_the_changelog_check_finds_a_command_it_does_not_name() -> None:
    named = "".join(f"- `amem {name}`\n" for name in COMMANDS if name != "batch")
    assert commands_missing_from_the_changelog(f"# Changelog\n\n## [0.1.0]\n\n{named}") == ["batch"]
    # Named only above the first version, or as the start of a longer word, is not named.
    assert commands_missing_from_the_changelog(f"`amem batch`\n\n## [0.1.0]\n\n{named}- `amem batches`\n") == ["batch"]


def test_the_changelog_names_every_command_and_keeps_an_unreleased_section() -> None:
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "keepachangelog.com" in changelog
    # Unreleased comes first, ready for the next change; the releases follow, newest first.
    assert re.findall(r"^## \[([^\]]+)\]", changelog, re.M)[0] == "Unreleased"
    assert commands_missing_from_the_changelog(changelog) == [], "not in any release nor under Unreleased"


def test_the_licence_is_declared_and_shipped() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0"
    assert project["license-files"] == ["LICENSE"]
    licence = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in licence and "Version 2.0, January 2004" in licence
    assert "END OF TERMS AND CONDITIONS" in licence
    assert "[Apache License 2.0](LICENSE)" in README


def test_the_readme_installs_amem_as_a_tool_after_the_plain_pip_command() -> None:
    setup = README.split("## Set up", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.+?)```", setup, re.S)
    assert blocks[0].startswith("python -m pip install . && ")
    assert blocks[1].splitlines() == ["pipx install .", "uv tool install ."]


def test_the_environment_section_comes_from_the_keys_table() -> None:
    from amem.config import KEYS

    environment = man_section("ENVIRONMENT")
    for key in KEYS:
        for position, variable in enumerate(key.env):
            entry = environment.split(f".TP\n\\fB{man_text(variable)}\\fR\n", 1)[1].split("\n.TP", 1)[0]
            if position == 0:
                assert entry.startswith(_docs.roff(key.env_help)), variable
                assert f"\\fB{man_text(key.name)}\\fR" in entry, variable
            else:
                assert f"older name of {man_text(key.env[0])}" in entry, variable


# --- the README as a front door, and the links of every page -----------------------------------------

README_MOST_LINES = 450
#: [text](target) and [text]: target, the target up to a space, `)` or `#`; text may span lines.
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)|^\[[^\]]+\]:\s*(\S+)", re.M)


def markdown_pages() -> list[Path]:
    return [REPO / "README.md", REPO / "CONTRIBUTING.md", *sorted((REPO / "docs").rglob("*.md"))]


def relative_links(text: str) -> list[tuple[str, str]]:
    """(target, #anchor or "") of the links in Markdown `text` that point into the source tree (or, with
    an empty target, into the page itself); links inside code blocks and code spans are not links."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    text = re.sub(r"`[^`\n]*`", "", text)
    targets = [a or b for a, b in _LINK.findall(text)]
    links = [target.partition("#") for target in targets if not re.match(r"[a-z][a-z0-9+.-]*:", target)]
    return [(path, anchor) for path, _, anchor in links]


def heading_anchors(text: str) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    headings = re.findall(r"^#{1,6} (.+)$", text, re.M)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings}


def test_the_link_checker_reads_links_as_github_does() -> None:
    text = "[a](x.md) [b](../y/#h) [c](https://e.org) [d](#local) `[e](no.md)`\n```\n[f](no2.md)\n```\n[g]: z.md\n"
    assert relative_links(text) == [("x.md", ""), ("../y/", "h"), ("", "local"), ("z.md", "")]
    assert heading_anchors("# Semantic search (optional)\n## `amem read`\n```\n# no\n```\n") == {
        "semantic-search-optional",
        "amem-read",
    }


@pytest.mark.parametrize("page", [path.relative_to(REPO).as_posix() for path in markdown_pages()])
def test_every_relative_link_points_at_a_file_that_exists(page: str) -> None:
    here = REPO / page
    for path, anchor in relative_links(here.read_text(encoding="utf-8")):
        target = (here.parent / path) if path else here
        assert target.exists(), f"{page} links to {path}, which does not exist"
        if anchor and target.suffix == ".md":
            assert anchor in heading_anchors(target.read_text(encoding="utf-8")), f"{page}: no #{anchor} in {path}"


def shown_command_lines(text: str) -> list[str]:
    """Each command line of the ```sh blocks in Markdown `text`, continuation lines joined, comments kept
    (the shell lexer drops them)."""
    lines: list[str] = []
    for block in re.findall(r"^```sh\n(.*?)^```", text, re.S | re.M):
        lines += [line for line in block.replace("\\\n", " ").splitlines() if line.strip()]
    return lines


def amem_invocations(line: str) -> list[list[str]]:
    """The arguments of every `amem` a shell command line runs: each stage of its pipelines, lists and
    subshells whose command (after `NAME=value` assignments) is amem."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars="|&;()")
    lexer.whitespace_split = True
    found: list[list[str]] = []
    stage: list[str] = []
    redirected = False
    for token in [*lexer, ";"]:
        if redirected or re.fullmatch(r"\d*[<>]{1,2}\S*", token):  # a redirection is not an argument
            redirected = bool(re.fullmatch(r"\d*[<>]{1,2}", token))
            continue
        if not re.fullmatch(r"[|&;()$]+", token):
            stage.append(token)
            continue
        while stage and re.fullmatch(r"[A-Za-z_]+=.*", stage[0]):
            stage.pop(0)
        if stage and stage[0] == "amem":
            found.append(stage[1:])
        stage = []
    return found


def test_amem_invocations_are_found_where_the_shell_runs_them() -> None:
    line = """X=1 amem a "b | c" | jq . && (cd x && amem d 2>/dev/null) || echo amem; v=$(amem e --f > o)  # amem g"""
    assert amem_invocations(line) == [["a", "b | c"], ["d"], ["e", "--f"]]


@pytest.mark.parametrize("page", [path.relative_to(REPO).as_posix() for path in markdown_pages()])
def test_every_amem_command_shown_is_one_the_cli_accepts(page: str, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    for name in COMMANDS:
        command = cli.get_command(click.Context(cli), name)
        assert command is not None
        monkeypatch.setattr(command, "callback", lambda name=name, **params: calls.append(name))
    shown = [args for line in shown_command_lines((REPO / page).read_text()) for args in amem_invocations(line)]
    for arguments in shown:
        outcome = CliRunner().invoke(cli, arguments, catch_exceptions=False)
        assert outcome.exit_code == 0, f"{page}: amem {shlex.join(arguments)} is not accepted: {outcome.stderr}"
    assert len(calls) == len(shown)
