"""`move_note` on random vaults: every link keeps its meaning with OLD replaced by NEW, and nothing but
link targets (and the `updated` stamp of a rewritten note) changes."""

from __future__ import annotations

import posixpath
import re
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amem.config import load_config
from amem.notes.links import LinkResolver, frontmatter_spans, link_key, link_spans, markdown_path
from amem.notes.parse import parse_note
from amem.ops.move import move_note

FOLDERS = ["", "a/", "A/", "b/c/", "B/c/", "d/e/f/"]
NAMES = ["foo", "Foo", "bar", "caf\u00e9", "cafe\u0301", "x y"]
EXTENSIONS = (".md",)

note_ids = st.builds(lambda folder, name: f"{folder}{name}.md", st.sampled_from(FOLDERS), st.sampled_from(NAMES))


def spellings(note_id: str) -> list[str]:
    """Ways people write a link to `note_id`: path or suffix or base name, any case, either slash."""
    stem = note_id[:-3]
    parts = stem.split("/")
    forms = ["/".join(parts[i:]) for i in range(len(parts))]
    forms += [f + ".md" for f in forms]
    forms += [f.lower() for f in forms] + [f.upper() for f in forms]
    forms += [f.replace("/", "\\") for f in forms if "/" in f]
    return forms + ["missing", "a/missing"]


@st.composite
def link_text(draw: st.DrawFn, ids: list[str]) -> str:
    target = draw(st.sampled_from(spellings(draw(st.sampled_from(ids)))))
    suffix = draw(st.sampled_from(["", "#Heading", "#^blk1", "#Head ing|Alias", "|alias text"]))
    pipe = draw(st.sampled_from(["|", "\\|"])) if "|" in suffix else ""
    suffix = suffix.replace("|", pipe) if pipe else suffix
    return f"{draw(st.sampled_from(['', '!']))}[[{draw(st.sampled_from(['', ' ']))}{target}{suffix}]]"


@st.composite
def note_text(draw: st.DrawFn, ids: list[str]) -> str:
    pieces: list[str] = []
    for _ in range(draw(st.integers(0, 6))):
        link = draw(link_text(ids))
        kind = draw(st.sampled_from(["prose", "prose", "prose", "code span", "fence", "table"]))
        if kind == "prose":
            pieces.append(f"see {link} here.\n")
        elif kind == "code span":
            pieces.append(f"`{link}` and {link}\n")
        elif kind == "fence":
            pieces.append(f"```\n{link}\n```\n")
        else:
            pieces.append(f"| {link} | x |\n")
    body = "\n".join(pieces)
    head = draw(st.sampled_from(["", "---\ntitle: T\ntags: [x]\n---\n", "# Title\n"]))
    text = head + body
    return text.replace("\n", "\r\n") if draw(st.booleans()) else text


def _twin_of_another(new: str, ids: list[str], old: str) -> bool:
    """Whether a move to `new` would make a case or Unicode twin of a note other than `old` (refused, SPEC §2)."""
    return new in ids or any(link_key(i) == link_key(new) for i in ids if i != old)


def skeleton(body: str) -> tuple[str, list[str]]:
    """The body with every link target cut out, and the targets."""
    spans = link_spans(body)
    out, at = [], 0
    for span in spans:
        out.append(body[at : span.target_start])
        at = span.target_end
    out.append(body[at:])
    return "\0".join(out), [span.link.target for span in spans]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_move_keeps_every_link_meaning(data: st.DataObject) -> None:
    ids = sorted(set(data.draw(st.lists(note_ids, min_size=2, max_size=7), label="ids")))
    old = data.draw(st.sampled_from(ids), label="old")
    new = data.draw(note_ids.filter(lambda i: not _twin_of_another(i, ids, old)), label="new")
    texts = {note_id: data.draw(note_text(ids), label=note_id) for note_id in ids}
    with tempfile.TemporaryDirectory() as tmp:
        vault = Path(tmp) / "vault"
        for note_id, text in texts.items():
            path = vault / note_id
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text.encode("utf-8"))
        config = load_config(vault=str(vault))
        before = LinkResolver(ids, EXTENSIONS)

        result = move_note(config, old, new)

        after_ids = sorted([i for i in ids if i != old] + [new])
        after = LinkResolver(after_ids, EXTENSIONS)
        assert sorted(str(p.relative_to(vault)) for p in vault.rglob("*.md")) == after_ids
        rewritten = {entry["id"] for entry in result["rewritten"]}
        for note_id, text in texts.items():
            now_id = new if note_id == old else note_id
            now_text = (vault / now_id).read_bytes().decode("utf-8")
            if now_id not in rewritten:
                assert now_text == text
                continue
            old_note, new_note = parse_note(text), parse_note(now_text)
            assert {k: v for k, v in new_note.frontmatter.items() if k != "updated"} == old_note.frontmatter
            assert "updated" in new_note.frontmatter
            old_skeleton, old_targets = skeleton(old_note.body)
            new_skeleton, new_targets = skeleton(new_note.body)
            assert new_skeleton == old_skeleton  # no byte outside the link targets changed
            changed = 0
            for was_target, now_target in zip(old_targets, new_targets, strict=True):
                was = before.resolve(was_target)
                now = after.resolve(now_target)
                changed += was_target != now_target
                if was is None:
                    assert now in (None, new), (was_target, now_target)
                    assert now_target == was_target
                else:
                    assert now == (new if was == old else was), (was_target, now_target)
                if was == old and was_target != now_target and "/" not in was_target:
                    # a base name stays a base name when the new one resolves uniquely
                    name = new.rsplit("/", 1)[-1]
                    if after.ranked(name[:-3] if not was_target.lower().endswith(".md") else name) == [new]:
                        assert "/" not in now_target, (was_target, now_target)
            entry = next(e for e in result["rewritten"] if e["id"] == now_id)
            assert entry["links"] == changed > 0


# --- every kind of link, every frontmatter style and line ending -------------------------------------------

HEADS = [
    "",
    "---\ntitle: T\ntags: [x, y]\n---\n",
    "---\ncreated: 2024-01-01  # a date, unquoted\ntags:\n  - a\n# a comment line\n---\n",
    "---\nupdated: '2020-05-05T00:00:00+00:00'\nrelated: '{link}'\n---\n",
    "---\nrelated: ['{link}', plain]\nupdated: 2020-05-05 # stamp\ntitle: T\n---\n",
    "---\n---\n",
]


def relative_to(note_id: str, target_id: str) -> str:
    """A Markdown link path from `note_id`'s folder to `target_id`."""
    folder = note_id.rsplit("/", 1)[0] if "/" in note_id else ""
    return posixpath.relpath("/" + target_id, "/" + folder)


@st.composite
def markdown_link(draw: st.DrawFn, note_id: str, ids: list[str]) -> str:
    target = draw(st.sampled_from([*ids, "missing.md"]))
    path = draw(st.sampled_from([relative_to(note_id, target), "/" + target]))
    if draw(st.booleans()):
        path = path[:-3]  # without the extension, as zk writes them
    fragment = draw(st.sampled_from(["", "#Heading"]))
    if draw(st.booleans()):
        return f"[text]({path.replace(' ', '%20')}{fragment})"
    return f"[text](<{path}{fragment}>)"


@st.composite
def rich_note(draw: st.DrawFn, note_id: str, ids: list[str]) -> str:
    pieces: list[str] = []
    for _ in range(draw(st.integers(0, 5))):
        kind = draw(st.sampled_from(["wiki", "markdown", "indented", "fence"]))
        link = draw(markdown_link(note_id, ids)) if kind == "markdown" else draw(link_text(ids))
        if kind == "indented":
            other = draw(markdown_link(note_id, ids))
            pieces.append(f"\n    {link} in code\n    {other}\n\nprose after.\n")
        elif kind == "fence":
            pieces.append(f"```\n{link}\n```\n")
        else:
            pieces.append(f"see {link} here.\n")
    head = draw(st.sampled_from(HEADS)).replace("{link}", draw(link_text(ids)).lstrip("!"))
    lines = (head + "".join(pieces)).split("\n")
    endings = [draw(st.sampled_from(["\n", "\r\n"])) for _ in lines[:-1]]
    return "".join(line + end for line, end in zip(lines, endings, strict=False)) + lines[-1]


_UPDATED_LINE = re.compile(r"(?m)^updated[ \t]*:.*(\r?\n|$)")


def cut(text: str) -> tuple[str, list[tuple[str, str]]]:
    """The text with every link target and the `updated` line cut out, and the links as (kind, target)."""
    note = parse_note(text)
    block = note.frontmatter_text
    pieces: list[str] = []
    links: list[tuple[str, str]] = []
    if block is not None:
        opening = text[: text.index("\n") + 1]
        closing = text[len(opening) + len(block) : len(text) - len(note.body)]
        at = 0
        for span in frontmatter_spans(block):
            pieces.append(block[at : span.target_start])
            at = span.target_end
            links.append(("wiki", span.link.target))
        pieces.append(block[at:])
        pieces = [opening, *(_UPDATED_LINE.sub("", piece) for piece in pieces), closing]
    at = 0
    body = note.body
    for span in link_spans(body, EXTENSIONS):
        pieces.append(body[at : span.target_start])
        at = span.target_end
        links.append((span.link.kind, span.link.target))
    pieces.append(body[at:])
    return "\0".join(pieces), links


def meaning(resolver: LinkResolver, note_id: str, kind: str, target: str) -> str | None:
    if kind != "markdown":
        return resolver.resolve(target)
    path = markdown_path(note_id, target)
    found = resolver.ranked_path(path) if path else []
    return found[0] if found else None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_move_keeps_every_kind_of_link_and_every_other_byte(data: st.DataObject) -> None:
    ids = sorted(set(data.draw(st.lists(note_ids, min_size=2, max_size=6), label="ids")))
    old = data.draw(st.sampled_from(ids), label="old")
    new = data.draw(note_ids.filter(lambda i: not _twin_of_another(i, ids, old)), label="new")
    texts = {note_id: data.draw(rich_note(note_id, ids), label=note_id) for note_id in ids}
    with tempfile.TemporaryDirectory() as tmp:
        vault = Path(tmp) / "vault"
        for note_id, text in texts.items():
            path = vault / note_id
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text.encode("utf-8"))
        result = move_note(load_config(vault=str(vault)), old, new)

        before = LinkResolver(ids, EXTENSIONS)
        after = LinkResolver(sorted([i for i in ids if i != old] + [new]), EXTENSIONS)
        rewritten = {entry["id"]: entry["links"] for entry in result["rewritten"]}
        for note_id, text in texts.items():
            now_id = new if note_id == old else note_id
            now_text = (vault / now_id).read_bytes().decode("utf-8")
            if now_id not in rewritten:
                assert now_text == text
                continue
            assert "updated" in parse_note(now_text).frontmatter
            if parse_note(text).frontmatter_text is None:
                added = re.match(r"---(\r?\n)updated: [^\r\n]*\1---\1", now_text)
                assert added, now_text  # a block was added for `updated`: the rest is the text
                now_text = now_text[added.end() :]
            old_cut, old_links = cut(text)
            new_cut, new_links = cut(now_text)
            assert new_cut == old_cut  # no byte outside the link targets and `updated` changed
            changed = 0
            for (kind, was_target), (_, now_target) in zip(old_links, new_links, strict=True):
                was = meaning(before, note_id, kind, was_target)
                now = meaning(after, now_id, kind, now_target)
                changed += was_target != now_target
                if was is None:
                    assert now_target == was_target
                else:
                    assert now == (new if was == old else was), (kind, was_target, now_target)
            assert rewritten[now_id] == changed > 0
