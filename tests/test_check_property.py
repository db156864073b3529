"""`amem check` against a plain model: random vaults of notes whose names differ in case and Unicode form, in
folders that repeat names, with links that resolve, tie, or lead nowhere (some to an attachment), and
aliases. The model reads every file afresh and resolves with the LinkResolver's rules; check answers from
its index, built and then brought up to date after changes. Every problem the model finds is reported,
and nothing else."""

from __future__ import annotations

import itertools
import re
import shutil
import unicodedata
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from amem.notes.links import LinkResolver, alias_keys, link_key, note_links, stored_target
from amem.notes.parse import parse_note
from amem.ops.check import ranked, shown_target
from tests.installed import installed_runner

NAMES = ["a", "A", "b", "Café", unicodedata.normalize("NFD", "café"), "note"]
FOLDERS = ["", "x/", "y/", "X/", "x/deep/"]
TARGETS = [*NAMES, "x/a", "y/b", "deep/note", "gone", "x/gone", "pic.png", "other.png", "X/A.md"]

note = st.tuples(
    st.sampled_from(FOLDERS),
    st.sampled_from(NAMES),
    st.lists(st.tuples(st.sampled_from(TARGETS), st.booleans()), max_size=4),
    st.lists(st.sampled_from([*NAMES, "Alias", "alias", "gone"]), max_size=2),
)
vaults = st.lists(note, min_size=1, max_size=8)
changes = st.lists(st.tuples(st.booleans(), note), max_size=3)

_runs = itertools.count()


def _text(links: list[tuple[str, bool]], aliases: list[str]) -> str:
    head = f"---\naliases: [{', '.join(aliases)}]\n---\n" if aliases else ""
    body = "\n".join(f"{'!' if embed else ''}[[{target}]] and more" for target, embed in links)
    return f"{head}# Note\n{body}\n"


def _write(vault: Path, spec: tuple[str, str, list[tuple[str, bool]], list[str]]) -> None:
    folder, name, links, aliases = spec
    path = vault / f"{folder}{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_text(links, aliases), encoding="utf-8")


def model(vault: Path) -> set[tuple[Any, ...]]:
    """The problems of the vault's files, found without amem's index."""
    files = sorted(str(p.relative_to(vault)) for p in vault.rglob("*") if p.is_file())
    ids = [f for f in files if f.endswith(".md")]
    resolver = LinkResolver(ids, (".md",))
    attachments = LinkResolver([f for f in files if not f.endswith(".md")], ())
    found: set[tuple[Any, ...]] = set()
    reaches: dict[str, set[str]] = {i: set() for i in ids}
    aliases: dict[str, list[str]] = {}
    for note_id in ids:
        parsed = parse_note((vault / note_id).read_text(encoding="utf-8"), note_id)
        for key in alias_keys(parsed.frontmatter.get("aliases")):
            aliases.setdefault(key, []).append(note_id)
        for link in dict.fromkeys(note_links(parsed.frontmatter_text, parsed.body, (".md",))):
            target = stored_target(link, note_id)
            if not target:
                continue
            candidates = ranked(resolver, target)
            if not candidates and not ranked(attachments, target):
                found.add(("broken-link", note_id, shown_target(target), ()))
            if len(candidates) > 1:
                found.add(("ambiguous-link", note_id, shown_target(target), tuple(candidates)))
            if candidates and candidates[0] != note_id:
                reaches[note_id].add(candidates[0])
                reaches[candidates[0]].add(note_id)
    for note_id in ids:
        twins = [i for i in ids if i != note_id and link_key(i) == link_key(note_id)]
        if twins:
            found.add(("case-twin", note_id, None, tuple(sorted(twins))))
        if not reaches[note_id]:
            found.add(("orphan", note_id, None, ()))
    for key, claimed in aliases.items():
        for note_id in claimed:
            written = _written_alias(vault, note_id, key)
            shadowing = [i for i in resolver.ranked(written) if i != note_id]
            sharing = [i for i in dict.fromkeys(claimed) if i != note_id]
            if shadowing or sharing:
                found.add(("alias-collision", note_id, None, tuple(shadowing or sharing)))
    return found


def _written_alias(vault: Path, note_id: str, key: str) -> str:
    parsed = parse_note((vault / note_id).read_text(encoding="utf-8"), note_id)
    value = parsed.frontmatter.get("aliases")
    names = value if isinstance(value, list) else [value]
    return next(str(n) for n in names if link_key(str(n)) == key)


def reported(amem: Any, vault: Path) -> set[tuple[Any, ...]]:
    done = amem("--vault", str(vault), "check")
    assert done.exit_code in (0, 11), done.stderr
    found = set()
    for p in done.json["problems"]:
        others = p.get("candidates") or p.get("others") or []
        found.add((p["kind"], p["id"], p.get("target"), tuple(others)))
    return found


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(notes=vaults, later=changes, attachment=st.booleans())
def test_check_finds_what_a_fresh_model_finds_and_nothing_else(
    amem: Any, tmp_path: Path, notes: list[Any], later: list[Any], attachment: bool
) -> None:
    vault = tmp_path / f"vault-{next(_runs)}"
    vault.mkdir()
    for spec in notes:
        _write(vault, spec)
    if attachment:
        (vault / "img").mkdir()
        (vault / "img" / "Pic.png").write_bytes(b"\x89PNG")
    assert reported(amem, vault) == model(vault)
    # Then changed: notes removed and written; the index is brought up to date, not rebuilt.
    for remove, spec in later:
        path = vault / f"{spec[0]}{spec[1]}.md"
        if remove and path.exists():
            path.unlink()
        else:
            _write(vault, spec)
    assert reported(amem, vault) == model(vault)
    shutil.rmtree(vault)


# --- the line of each link problem ----------------------------------------------------------------------
# Notes written with a BOM or not, CRLF or LF, frontmatter links, links in code (not links), links written
# with spaces, an alias, a heading or as embeds, several times; then text inserted above them. Each problem's
# line is what a plain reading of the file says: the first line (from 1, the BOM aside) holding the target.

LINE_TARGETS = ["a", "b", "Café", "x/a", "gone", "x/gone", "note"]
piece = st.one_of(
    st.tuples(st.just("text"), st.sampled_from(["plain words", "", "# Heading", "    indented after text"])),
    st.tuples(st.sampled_from(["plain", "spaced", "alias", "heading", "embed"]), st.sampled_from(LINE_TARGETS)),
    st.tuples(st.sampled_from(["fenced", "inline"]), st.sampled_from(LINE_TARGETS)),
)
lined_note = st.fixed_dictionaries(
    {
        "folder": st.sampled_from(["", "x/", "y/"]),
        "name": st.sampled_from(["a", "b", "note", "Café", "other"]),
        "bom": st.booleans(),
        "crlf": st.booleans(),
        "front": st.lists(st.sampled_from(LINE_TARGETS), max_size=2),
        "body": st.lists(piece, max_size=8),
    }
)
WRITTEN = {
    "plain": "see [[{}]] here",
    "spaced": "see [[ {} ]] here",
    "alias": "[[{}|shown]]",
    "heading": "[[{}#part]] and [[{}]]",
    "embed": "![[{}]]",
    "fenced": "```\n[[{}]]\n```",
    "inline": "`[[{}]]` is code",
}


def _lined_text(spec: dict[str, Any], inserted: int = 0, above_front: int = 0) -> str:
    head = ""
    if spec["front"] or above_front:
        keys = [f"k{i}: v" for i in range(above_front)] + [f'rel{i}: "[[{t}]]"' for i, t in enumerate(spec["front"])]
        head = "---\n" + "".join(f"{line}\n" for line in keys) + "---\n"
    lines = ["filler line"] * inserted
    for kind, value in spec["body"]:
        lines.append(value if kind == "text" else WRITTEN[kind].format(value, value))
    text = head + "\n".join(lines) + "\n"
    if spec["crlf"]:
        text = text.replace("\n", "\r\n")
    return ("\ufeff" if spec["bom"] else "") + text


def first_lines(text: str) -> dict[str, int]:
    """target as written → the first line holding it, read plainly: frontmatter values, then prose; fenced
    code and inline code left out."""
    found: dict[str, int] = {}
    lines = text.removeprefix("\ufeff").split("\n")
    front = lines[0].rstrip("\r") == "---"
    fenced = False
    for number, raw in enumerate(lines, start=1):
        line = raw.rstrip("\r")
        if front:
            if number > 1 and line == "---":
                front = False
            elif number > 1:
                for inner in re.findall(r"\[\[([^\[\]]*)\]\]", line):
                    found.setdefault(inner.strip(), number)
            continue
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        for inner in re.findall(r"\[\[([^\[\]]*)\]\]", re.sub(r"`[^`]*`", "", line)):
            found.setdefault(inner.split("|")[0].split("#")[0].strip(), number)
    return found


def lines_model(vault: Path) -> dict[tuple[str, str, str], int]:
    """(kind, note, target) → line of each broken or ambiguous link the model finds."""
    found = {}
    for kind, note_id, target, _ in model(vault):
        if kind in ("broken-link", "ambiguous-link"):
            found[kind, note_id, target] = first_lines((vault / note_id).read_text(encoding="utf-8"))[target]
    return found


def reported_lines(run: Any) -> dict[tuple[str, str, str], int]:
    done = run("check")
    assert done.code in (0, 11), done.stderr
    return {
        (p["kind"], p["id"], p["target"]): p["line"]
        for p in done.json["problems"]
        if p["kind"] in ("broken-link", "ambiguous-link")
    }


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    notes=st.lists(lined_note, min_size=1, max_size=6),
    shifts=st.lists(st.tuples(st.integers(0, 5), st.integers(1, 3), st.integers(0, 2)), min_size=1, max_size=3),
)
@example(  # written with spaces first, plainly later, in a note with no code: the first is the line
    notes=[
        {
            "folder": "",
            "name": "a",
            "bom": False,
            "crlf": False,
            "front": [],
            "body": [("text", "# Title"), ("spaced", "gone"), ("text", ""), ("plain", "gone")],
        }
    ],
    shifts=[(0, 2, 1)],
)
def test_each_link_problem_is_at_its_first_line_after_a_build_a_change_above_it_and_a_rebuild(
    tmp_path: Path, notes: list[dict[str, Any]], shifts: list[tuple[int, int, int]]
) -> None:
    vault = tmp_path / f"lines-{next(_runs)}"
    vault.mkdir()
    run = installed_runner(tmp_path, vault / "x")
    written: dict[Path, dict[str, Any]] = {}
    for spec in notes:
        path = vault / f"{spec['folder']}{spec['name']}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_lined_text(spec), encoding="utf-8", newline="")
        written[path] = spec

    def check(*args: str) -> dict[tuple[str, str, str], int]:
        return reported_lines(lambda *more: run("--vault", str(vault), *args, *more))

    assert check() == lines_model(vault)  # a cold build
    # Lines inserted above the links (in the body, in the frontmatter): the index is brought up to date.
    paths = sorted(written)
    for which, inserted, above_front in shifts:
        path = paths[which % len(paths)]
        path.write_text(_lined_text(written[path], inserted, above_front), encoding="utf-8", newline="")
    assert check() == lines_model(vault)
    assert run("--vault", str(vault), "index", "--rebuild").code == 0
    assert check() == lines_model(vault)
    shutil.rmtree(vault)
