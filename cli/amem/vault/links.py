"""Obsidian-style links: finding them outside code, and resolving targets to note ids."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from typing import NamedTuple

_FENCE_OPEN = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")
_LINK = re.compile(r"(!?)\[\[([^\[\]\n]*?)\]\]")
_BACKTICKS = re.compile(r"`+")


def link_key(text: str) -> str:
    """How link resolution compares names, as Obsidian does: Unicode NFC, then case-folded, so that
    `[[internal links]]` meets `Internal links.md` and NFD spellings meet NFC ones."""
    return unicodedata.normalize("NFC", text).casefold()


class Link(NamedTuple):
    target: str
    alias: str | None = None
    heading: str | None = None
    block: str | None = None
    embed: bool = False

    def to_json(self, resolved: str | None) -> dict[str, object]:
        return {
            "target": self.target,
            "alias": self.alias,
            "heading": self.heading,
            "block": self.block,
            "embed": self.embed,
            "resolved": resolved,
        }


def prose_lines(body: str) -> Iterator[str]:
    """Lines outside fenced code blocks (``` or ~~~, up to 3 spaces of indent; an unclosed fence runs on)."""
    return (line for line in _prose_with_breaks(body) if line is not None)


def _paragraphs(body: str) -> Iterator[str]:
    """Runs of prose lines split at blank lines and fences: the reach of one inline code span."""
    current: list[str] = []
    for line in _prose_with_breaks(body):
        if line is None or not line.strip():
            if current:
                yield "\n".join(current)
                current = []
            continue
        current.append(line)
    if current:
        yield "\n".join(current)


def _prose_with_breaks(body: str) -> Iterator[str | None]:
    """Lines outside fenced code; each opening fence yields None, so a code span never crosses a block.
    A fence closes only on a line of the same character, at least as long, with nothing after it."""
    fence_char = ""
    fence_len = 0
    for raw in body.split("\n"):
        line = raw[:-1] if raw.endswith("\r") else raw
        if fence_char:
            stripped = line.lstrip(" ")
            if len(line) - len(stripped) <= 3 and stripped.startswith(fence_char * fence_len):
                run = len(stripped) - len(stripped.lstrip(fence_char))
                if run >= fence_len and not stripped[run:].strip():
                    fence_char = ""
            continue
        match = _FENCE_OPEN.match(line)
        if match and not (match.group(2)[0] == "`" and "`" in match.group(3)):
            fence_char, fence_len = match.group(2)[0], len(match.group(2))
            yield None
            continue
        yield line


def strip_code_spans(text: str) -> str:
    """Blank out inline code spans: a run of n backticks up to the next run of exactly n."""
    out: list[str] = []
    pos = 0
    runs = list(_BACKTICKS.finditer(text))
    i = 0
    while i < len(runs):
        opening = runs[i]
        closing_index = next((j for j in range(i + 1, len(runs)) if len(runs[j].group()) == len(opening.group())), None)
        if closing_index is None:
            i += 1  # an unmatched run is literal text
            continue
        closing = runs[closing_index]
        out.append(text[pos : opening.start()])
        out.append(" ")
        pos = closing.end()
        i = closing_index + 1
    out.append(text[pos:])
    return "".join(out)


def parse_link(inner: str, embed: bool) -> Link:
    inner = inner.replace("\\|", "|")  # a pipe escaped inside a Markdown table
    target, sep, alias = inner.partition("|")
    heading = block = None
    target, hash_sep, fragment = target.partition("#")
    if hash_sep:
        if fragment.startswith("^"):
            block = fragment[1:].strip()
        else:
            heading = fragment.strip()
    return Link(target.strip().replace("\\", "/"), alias.strip() if sep else None, heading, block, embed)


def extract_links(body: str) -> list[Link]:
    """Every [[link]] and ![[embed]] in the body, in order, outside fenced code and inline code."""
    if "[[" not in body:
        return []
    links: list[Link] = []
    for paragraph in _paragraphs(body):
        if "[[" not in paragraph:
            continue
        text = strip_code_spans(paragraph) if "`" in paragraph else paragraph
        for match in _LINK.finditer(text):
            links.append(parse_link(match.group(2), bool(match.group(1))))
    return links


# --- resolution ------------------------------------------------------------------------------------


def normalise_target(target: str) -> str:
    """The lookup key of a link target: `/`-separated, no leading `./` or `/`."""
    key = target.replace("\\", "/").strip()
    while key.startswith("./"):
        key = key[2:]
    return key.lstrip("/")


def _sort_key(note_id: str) -> tuple[int, str]:
    return (note_id.count("/"), note_id)


def _with_extensions(key: str, extensions: tuple[str, ...]) -> list[str]:
    lowered = key.lower()
    if any(lowered.endswith(ext.lower()) for ext in extensions):
        return [key]
    return [key, *(key + ext for ext in extensions)]


def resolution_keys(note_id: str, extensions: tuple[str, ...]) -> set[str]:
    """Every normalised target that could resolve to `note_id`: its path suffixes and base name,
    each with and without the extension. Used to find the links a new or removed note can change."""
    parts = note_id.split("/")
    keys: set[str] = set()
    for start in range(len(parts)):
        suffix = "/".join(parts[start:])
        keys.add(suffix)
        for ext in extensions:
            if suffix.lower().endswith(ext.lower()):
                keys.add(suffix[: -len(ext)])
    return keys


class LinkResolver:
    """Resolves link targets: exact path, then path suffix at a `/` boundary, then base name anywhere;
    each tier with or without the extension; ties go to the fewest segments, then code-point order.

    This class looks ids up in memory (built once for bulk work); subclasses answer the same three
    lookups from elsewhere (the index database) and share the tiers."""

    def __init__(self, ids: Iterable[str], extensions: tuple[str, ...]) -> None:
        self.extensions = extensions
        self.exact: set[str] = set()
        self.suffix: dict[str, list[str]] = {}
        self.basename: dict[str, list[str]] = {}
        for note_id in ids:
            self.add(note_id)

    def add(self, note_id: str) -> None:
        self.exact.add(note_id)
        parts = note_id.split("/")
        for start in range(1, len(parts)):
            self.suffix.setdefault("/".join(parts[start:]), []).append(note_id)
        self.basename.setdefault(parts[-1], []).append(note_id)

    def find_exact(self, candidates: list[str]) -> list[str]:
        return [c for c in candidates if c in self.exact]

    def find_suffix(self, candidates: list[str]) -> list[str]:
        """Ids that end with `/` + a candidate."""
        return [i for c in candidates for i in self.suffix.get(c, ())]

    def find_basename(self, names: list[str]) -> list[str]:
        return [i for c in names for i in self.basename.get(c, ())]

    def resolve(self, target: str) -> str | None:
        key = normalise_target(target)
        if not key:
            return None
        candidates = _with_extensions(key, self.extensions)
        found = self.find_exact(candidates)
        if found:
            return found[0]  # the target as written wins over the target plus an extension
        found = self.find_suffix(candidates)
        if not found:
            found = self.find_basename(_with_extensions(key.rsplit("/", 1)[-1], self.extensions))
        return min(found, key=_sort_key) if found else None
