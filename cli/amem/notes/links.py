"""Obsidian-style links: finding them outside code and HTML blocks (as `blocks` reads a body), and resolving
targets to note ids."""

from __future__ import annotations

import itertools
import re
import unicodedata
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import NamedTuple

#: [text](destination "title"): the destination bare (no spaces, balanced parentheses one deep) or in <>.
_MD_LINK_SOURCE = (
    r"(!?)\[((?:[^\[\]\n]|\[[^\[\]\n]*\])*)\]\([ \t]*"
    r"(<[^<>\n]*>|(?:[^\s()<>]|\([^\s()]*\))+)"
    r"(?:[ \t]+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^()\n]*\)))?[ \t]*\)"
)


class _Patterns:
    """The module's patterns, each compiled on its first use (then an attribute like any other): a note
    compiles only those of what it holds, where compiling all six cost a read of one note a millisecond."""

    #: name → source
    SOURCES = {  # noqa: RUF012 (read only)
        "link": r"(!?)\[\[([^\[\]\n]*?)\]\]",
        # `link` for text with no `![[`: starting with a literal, the engine skips to each `[[` in C (ten
        # times as fast over a note as the optional `!` lets it be).
        "plain_link": r"\[\[([^\[\]\n]*?)\]\]",
        "backticks": r"`+",
        "md_link": _MD_LINK_SOURCE,
        # `md_link` for text with no `![`, starting with a literal (see plain_link).
        "plain_md_link": _MD_LINK_SOURCE.removeprefix("(!?)"),
        "scheme": r"[A-Za-z][A-Za-z0-9+.-]*:",
    }

    def __getattr__(self, name: str) -> re.Pattern[str]:
        if name not in self.SOURCES:
            raise AttributeError(name)
        pattern = re.compile(self.SOURCES[name])
        setattr(self, name, pattern)
        return pattern

    link: re.Pattern[str]
    plain_link: re.Pattern[str]
    backticks: re.Pattern[str]
    md_link: re.Pattern[str]
    plain_md_link: re.Pattern[str]
    scheme: re.Pattern[str]


_P = _Patterns()


def link_key(text: str) -> str:
    """How link resolution compares names, as Obsidian does: Unicode NFC, then case-folded, so that
    `[[internal links]]` meets `Internal links.md` and NFD spellings meet NFC ones."""
    return unicodedata.normalize("NFC", text).casefold()


def alias_keys(value: object) -> list[str]:
    """The link keys of a frontmatter `aliases` value, a list or one string as Obsidian keeps them, each
    distinct once: how a read by name meets a note by another of its names."""
    names = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    keys = (link_key(normalise_target(name)) for name in names if isinstance(name, str))
    return list(dict.fromkeys(key for key in keys if key))


class Link(NamedTuple):
    target: str
    alias: str | None = None
    heading: str | None = None
    block: str | None = None
    embed: bool = False
    #: "wiki" ([[target]] in the body), "markdown" ([text](path.md), its target decoded and relative to the
    #: note's folder) or "frontmatter" (a [[target]] in a frontmatter value)
    kind: str = "wiki"

    def to_json(self, resolved: str | None) -> dict[str, object]:
        return {
            "target": self.target,
            "alias": self.alias,
            "heading": self.heading,
            "block": self.block,
            "embed": self.embed,
            "kind": self.kind,
            "resolved": resolved,
        }


def prose_lines(body: str) -> Iterator[str]:
    """The body's lines outside code and HTML blocks (a line's `\\r` left off), blank lines included."""
    from .blocks import blocks, body_lines, code_lines  # here: a body with no code needs no scan

    lines = body_lines(body)
    if not may_hold_code(body):
        return iter(lines)
    code = code_lines(blocks(body))
    return (line for number, line in enumerate(lines) if number not in code)


def may_hold_code(body: str) -> bool:
    """Whether any line of `body` may be code or HTML: a fence needs ``` or ~~~, indented code four columns
    of whitespace (past any container's markers), an HTML block `<`."""
    return "`" in body or "~~~" in body or "<" in body or "    " in body or "\t" in body


def _paragraphs(body: str) -> Iterator[list[tuple[int, str]]]:
    """The body's paragraphs and headings, each as its lines with their offsets in `body` (a line's `\\r`
    left off): the reach of one inline code span."""
    from .blocks import HEADING, PARAGRAPH, blocks

    lines = body.split("\n")
    at, row = 0, 0  # the offset of line `row`
    for block in blocks(body):
        if block.kind not in (PARAGRAPH, HEADING):
            continue
        while row < block.first:
            at += len(lines[row]) + 1
            row += 1
        paragraph = []
        for line in lines[block.first : block.end]:
            paragraph.append((at, line[:-1] if line.endswith("\r") else line))
            at += len(line) + 1
        row = block.end
        yield paragraph


def strip_code_spans(text: str) -> str:
    """Blank out inline code spans (a run of n backticks up to the next run of exactly n) with as many
    spaces, keeping line breaks, so that every other character stays at its offset."""
    out: list[str] = []
    pos = 0
    runs = list(_P.backticks.finditer(text))
    i = 0
    while i < len(runs):
        opening = runs[i]
        closing_index = next((j for j in range(i + 1, len(runs)) if len(runs[j].group()) == len(opening.group())), None)
        if closing_index is None:
            i += 1  # an unmatched run is literal text
            continue
        closing = runs[closing_index]
        out.append(text[pos : opening.start()])
        out.append(re.sub(r"[^\n]", " ", text[opening.start() : closing.end()]))
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


def _target_bounds(inner: str) -> tuple[int, int]:
    """Where the target is written inside a link's brackets: before the first `|` (or a table's `\\|`)
    and the first `#`, without the spaces around it."""
    end = inner.find("|")
    if end < 0:
        end = len(inner)
    elif end > 0 and inner[end - 1] == "\\":
        end -= 1
    fragment = inner.find("#", 0, end)
    if fragment >= 0:
        end = fragment
    written = inner[:end]
    start = len(written) - len(written.lstrip())
    return start, max(start, len(written.rstrip()))


class LinkSpan(NamedTuple):
    """A link and where it is written: `start`/`end` bound the whole `[[…]]` (or `![[…]]`) in the text it
    was found in, `target_start`/`target_end` the target as written (backslashes and all)."""

    link: Link
    start: int
    end: int
    target_start: int
    target_end: int


def link_spans(body: str, extensions: tuple[str, ...] = (".md",)) -> list[LinkSpan]:
    """Every [[link]], ![[embed]] and Markdown link to a note (see `markdown_spans`) in the body with its
    position, in order, outside code (fenced, indented and inline) and HTML blocks."""
    return list(iter_link_spans(body, extensions))


def iter_link_spans(body: str, extensions: tuple[str, ...] = (".md",)) -> Iterator[LinkSpan]:
    """link_spans one at a time, so that a reader that keeps only some of them holds no more."""
    wiki = "[[" in body
    markdown = "](" in body
    if not (wiki or markdown):
        return iter(())
    if not may_hold_code(body):
        return _spans_in_text(body, 0, wiki, markdown, extensions)  # every line is prose
    return _spans_by_paragraph(body, wiki, markdown, extensions)


def _spans_in_text(
    text: str, shift: int, wiki: bool, markdown: bool, extensions: tuple[str, ...]
) -> Iterator[LinkSpan]:
    """The links in `text` (prose, code blanked), their offsets moved by `shift`, in order."""
    wikis = _wiki_spans(text, shift) if wiki else iter(())
    if not markdown:
        return wikis
    import heapq  # here: only a note with Markdown links as well as [[links]] merges two scans

    found = (_shifted(span, shift) for span in iter_markdown_spans(text, extensions))
    return heapq.merge(wikis, found, key=lambda span: span.start)


def _wiki_spans(text: str, shift: int) -> Iterator[LinkSpan]:
    # Each distinct link text is parsed once, and shared: a note may write the same link a million times.
    parsed: dict[tuple[str, str], tuple[Link, int, int]] = {}
    for match in _P.link.finditer(text):
        embed, inner = match.group(1, 2)
        known = parsed.get((embed, inner))
        if known is None:
            known = parsed[embed, inner] = (parse_link(inner, bool(embed)), *_target_bounds(inner))
        link, first, last = known
        at = match.start(2) + shift
        yield LinkSpan(link, match.start() + shift, match.end() + shift, at + first, at + last)


def _shifted(span: LinkSpan, shift: int) -> LinkSpan:
    return LinkSpan(span.link, span.start + shift, span.end + shift, span.target_start + shift, span.target_end + shift)


def _spans_by_paragraph(body: str, wiki: bool, markdown: bool, extensions: tuple[str, ...]) -> Iterator[LinkSpan]:
    """link_spans paragraph by paragraph (and heading by heading), code and HTML blocks left out and inline
    code blanked."""
    for paragraph in _paragraphs(body):
        text = "\n".join(line for _, line in paragraph)
        has_wiki, has_markdown = wiki and "[[" in text, markdown and "](" in text
        if not (has_wiki or has_markdown):
            continue
        if "`" in text:
            text = strip_code_spans(text)
        # offsets of each line in `text` and in `body`: a link never crosses a line
        in_text: list[int] = []
        at = 0
        for _, line in paragraph:
            in_text.append(at)
            at += len(line) + 1
        for span in _spans_in_text(text, 0, has_wiki, has_markdown, extensions):
            row = bisect_right(in_text, span.start) - 1
            yield _shifted(span, paragraph[row][0] - in_text[row])


def frontmatter_spans(block: str) -> list[LinkSpan]:
    """The [[links]] written in a frontmatter block's values (Obsidian properties hold them so), with
    their offsets in the block; comment lines are left out."""
    if "[[" not in block:
        return []
    spans: list[LinkSpan] = []
    for span in _spans_in_text(block, 0, True, False, ()):
        line_start = block.rfind("\n", 0, span.start) + 1
        if block[line_start : span.start].lstrip().startswith("#"):
            continue
        spans.append(span._replace(link=span.link._replace(kind="frontmatter")))
    return spans


# --- Markdown links ---------------------------------------------------------------------------------


def markdown_spans(text: str, extensions: tuple[str, ...]) -> list[LinkSpan]:
    """The Markdown links in `text` that can name a note (see `iter_markdown_spans`)."""
    return list(iter_markdown_spans(text, extensions))


def iter_markdown_spans(text: str, extensions: tuple[str, ...]) -> Iterator[LinkSpan]:
    """The Markdown links in `text` that can name a note: not a URL with a scheme, not only a #fragment,
    and ending in a note extension (or, for a link that is not an image, in no extension at all). The
    target is the path as written with %XX decoded; target_start/target_end bound that path as written
    (inside the <> of the pointed form), the #fragment left out."""
    parsed: dict[tuple[str, str, str], Link | None] = {}  # each distinct link parsed once
    for match in _P.md_link.finditer(text):
        raw = match.group(3)
        start = match.start(3)
        if raw.startswith("<"):
            raw, start = raw[1:-1], start + 1
        key = (match.group(1), match.group(2), raw)
        if key not in parsed:
            parsed[key] = _markdown_link(raw, bool(match.group(1)), match.group(2), extensions)
        link = parsed[key]
        if link is not None:
            path_length = len(raw.partition("#")[0])
            yield LinkSpan(link, match.start(), match.end(), start, start + path_length)


def _markdown_link(raw: str, embed: bool, text: str, extensions: tuple[str, ...]) -> Link | None:
    path, hash_sep, fragment = raw.partition("#")
    if not path or _P.scheme.match(path) or path.endswith("/"):
        return None
    decoded = _unquote(path)
    if not _names_a_note(decoded, embed, extensions):
        return None
    heading = block = None
    if hash_sep and fragment.startswith("^"):
        block = fragment[1:]
    elif hash_sep:
        heading = _unquote(fragment)
    return Link(decoded, text.strip() or None, heading, block, embed, "markdown")


def _unquote(text: str) -> str:
    """`urllib.parse.unquote`, which returns a text without `%` as it is: only a link with an escape loads
    `urllib.parse` (and the `ipaddress` it imports)."""
    if "%" not in text:
        return text
    from urllib.parse import unquote

    return unquote(text)


def _names_a_note(path: str, embed: bool, extensions: tuple[str, ...]) -> bool:
    name = path.rsplit("/", 1)[-1].lower()
    if any(name.endswith(ext.lower()) for ext in extensions):
        return True
    return not embed and "." not in name.lstrip(".")


def markdown_path(note_id: str, target: str) -> str | None:
    """The vault path a Markdown link's (decoded) target names from note `note_id`: relative to the note's
    folder, or to the vault root with a leading `/`; None when it climbs out of the vault."""
    target = target.replace("\\", "/")
    if target.startswith("/"):
        parts: list[str] = []
        target = target.lstrip("/")
    else:
        parts = note_id.split("/")[:-1]
    for part in target.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                return None
            parts.pop()
        else:
            parts.append(part)
    return "/".join(parts) or None


#: How the index and `resolve_stored` write a Markdown link's target: its vault path after this mark,
#: which no [[link]] target keeps (normalise_target drops a leading `/`).
PATH_MARK = "/"


def stored_target(link: Link, note_id: str) -> str | None:
    """The target as the index stores it: a [[link]]'s normalised target, or for a Markdown link its
    vault path after PATH_MARK (it resolves by that path only); None when it names nothing."""
    if link.kind != "markdown":
        return normalise_target(link.target) or None
    path = markdown_path(note_id, link.target)
    return PATH_MARK + path if path else None


def resolve_stored(resolver: LinkResolver, target: str) -> str | None:
    """What a stored target (see `stored_target`) resolves to."""
    if target.startswith(PATH_MARK):
        found = resolver.ranked_path(target[len(PATH_MARK) :])
        return found[0] if found else None
    return resolver.resolve(target)


def extract_links(body: str, extensions: tuple[str, ...] = (".md",)) -> list[Link]:
    """Every [[link]], ![[embed]] and Markdown link to a note in the body, in order, outside code."""
    return [span.link for span in link_spans(body, extensions)]


def note_links(frontmatter_text: str | None, body: str, extensions: tuple[str, ...]) -> list[Link]:
    """A note's links: those in its frontmatter values first, then those of its body."""
    return link_census(frontmatter_text, body, extensions, limit=None).listed


class LinkCensus:
    """What `link_census` finds of a note's links. A plain class rather than a NamedTuple: every read and
    write pays for defining each NamedTuple it imports."""

    __slots__ = ("listed", "distinct", "total", "counts", "lines")

    def __init__(
        self,
        listed: list[Link],
        distinct: list[Link],
        total: int,
        counts: tuple[int, ...] = (),
        lines: tuple[int, ...] = (),
    ) -> None:
        #: the note's links in order, the first `limit` of them
        self.listed = listed
        #: each distinct link once, in the order first written
        self.distinct = distinct
        #: how many links the note holds
        self.total = total
        #: how many times each of `distinct` is written, in the same order
        self.counts = counts
        #: the line (from 0) where each of `distinct` is first written, in the same order: in the
        #: frontmatter block for a frontmatter link, else in the body
        self.lines = lines


#: A distinct link as the census first meets it: where (the order first written), the link, its line.
_First = tuple[int, Link, int]


def link_census(frontmatter_text: str | None, body: str, extensions: tuple[str, ...], limit: int | None) -> LinkCensus:
    """A note's links (frontmatter values first, then the body): the first `limit` in order, and each
    distinct one once with the line it is first written on, counted without a record per link, so that a
    note of a million links costs about its size."""
    head = frontmatter_spans(frontmatter_text) if frontmatter_text else []
    spans = itertools.chain(head, iter_link_spans(body, extensions))
    listed = [span.link for span in (spans if limit is None else itertools.islice(spans, limit))]
    first: dict[tuple[str, ...], _First] = {}
    written: Counter[tuple[str, ...]] = Counter()
    line, counted = 0, 0
    for at, span in enumerate(head, start=-len(head)):
        head_key: tuple[str, ...] = ("f", span.link.target, str(span.link))
        line += frontmatter_text.count("\n", counted, span.start) if frontmatter_text else 0
        counted = span.start
        first.setdefault(head_key, (at, span.link, line))
        written[head_key] += 1
    total = len(head)
    for offset, row, text, wiki, markdown in _prose_texts(body):
        total += _count_links(text, (offset, row), wiki, markdown, extensions, first, written)
    distinct: dict[Link, int] = {}
    lines: dict[Link, int] = {}
    for seen, (_, link, where) in sorted(first.items(), key=lambda item: item[1][0]):
        lines.setdefault(link, where)  # the first written: the earliest line
        distinct[link] = distinct.get(link, 0) + written[seen]
    return LinkCensus(listed, list(distinct), total, tuple(distinct.values()), tuple(lines.values()))


def _prose_texts(body: str) -> Iterator[tuple[int, int, str, bool, bool]]:
    """The body's prose as iter_link_spans reads it: (offset, line (from 0) it starts on, text with code
    blanked, has [[, has ]( )."""
    wiki, markdown = "[[" in body, "](" in body
    if not (wiki or markdown):
        return
    if not may_hold_code(body):
        yield 0, 0, body, wiki, markdown
        return
    row, counted = 0, 0  # the line of offset `counted`
    for paragraph in _paragraphs(body):
        text = "\n".join(line for _, line in paragraph)
        has_wiki, has_markdown = wiki and "[[" in text, markdown and "](" in text
        if has_wiki or has_markdown:
            start = paragraph[0][0]
            row += body.count("\n", counted, start)
            counted = start
            yield start, row, strip_code_spans(text) if "`" in text else text, has_wiki, has_markdown


#: How much text `_count_links` hands the regular expressions at once: their matches are held a chunk
#: at a time, never a whole note's.
_COUNT_CHUNK = 1 << 16


def _count_links(
    text: str,
    start: tuple[int, int],
    wiki: bool,
    markdown: bool,
    extensions: tuple[str, ...],
    first: dict[tuple[str, ...], _First],
    written: Counter[tuple[str, ...]],
) -> int:
    """How many links `text` holds (it starts at offset and line `start` of the body); each not met
    before goes into `first` with where it was met and its line, and `written` counts each one's
    occurrences. The matches are counted a chunk (whole lines: no link crosses one) at a time, in C."""
    offset, line = start
    total = 0
    for at, piece in _line_chunks(text):
        met: list[tuple[int, tuple[str, ...], Link]] = []  # links first met in this chunk
        if wiki and "[[" in piece:
            total += _count_wiki(piece, first, written, met)
        if markdown and "](" in piece:
            total += _count_markdown(piece, extensions, first, written, met)
        met.sort(key=lambda item: item[0])
        where, counted = line, 0
        for pos, key, link in met:
            where += piece.count("\n", counted, pos)
            counted = pos
            first[key] = (offset + at + pos, link, where)
        line += piece.count("\n")
    return total


def _count_wiki(
    piece: str,
    first: dict[tuple[str, ...], _First],
    written: Counter[tuple[str, ...]],
    met: list[tuple[int, tuple[str, ...], Link]],
) -> int:
    """_count_links for the [[links]] of one chunk: how many it holds; those not met before are added to
    `met`, each at its first match."""
    total = 0
    places: dict[tuple[str, ...], int] | None = None
    for (embed, inner), count in _wiki_counts(piece).items():
        total += count
        key = ("w", embed, inner)
        written[key] += count
        if key not in first:
            places = places if places is not None else _wiki_places(piece)
            met.append((places[key], key, parse_link(inner, bool(embed))))
    return total


def _count_markdown(
    piece: str,
    extensions: tuple[str, ...],
    first: dict[tuple[str, ...], _First],
    written: Counter[tuple[str, ...]],
    met: list[tuple[int, tuple[str, ...], Link]],
) -> int:
    """_count_links for the Markdown links of one chunk: how many it holds; those not met before are added
    to `met`, each at its first match."""
    total = 0
    places: dict[tuple[str, ...], int] | None = None
    for (embed, label, raw), count in _markdown_counts(piece).items():
        key = ("m", embed, label, raw)
        if key not in first:
            path = raw[1:-1] if raw.startswith("<") else raw
            link = _markdown_link(path, bool(embed), label, extensions)
            if link is None:
                continue
            places = places if places is not None else _markdown_places(piece)
            met.append((places[key], key, link))
        total += count
        written[key] += count
    return total


def _wiki_places(piece: str) -> dict[tuple[str, ...], int]:
    """Where each distinct [[link]] of `piece` is first written, by its `_count_links` key: found by the
    link pattern itself (a text search would find `[[a]]` inside an earlier `![[a]]`)."""
    places: dict[tuple[str, ...], int] = {}
    if "![[" in piece:
        for match in _P.link.finditer(piece):
            places.setdefault(("w", *match.group(1, 2)), match.start())
    else:
        for match in _P.plain_link.finditer(piece):
            places.setdefault(("w", "", match.group(1)), match.start())
    return places


def _markdown_places(piece: str) -> dict[tuple[str, ...], int]:
    """Where each distinct Markdown link of `piece` is first written, by its `_count_links` key."""
    places: dict[tuple[str, ...], int] = {}
    if "![" in piece:
        for match in _P.md_link.finditer(piece):
            places.setdefault(("m", *match.group(1, 2, 3)), match.start())
    else:
        for match in _P.plain_md_link.finditer(piece):
            places.setdefault(("m", "", *match.group(1, 2)), match.start())
    return places


def _wiki_counts(piece: str) -> dict[tuple[str, str], int]:
    """(embed mark, inner text) of each distinct [[link]] in `piece`, and how many times it is written."""
    if "![[" in piece:
        return Counter(_P.link.findall(piece))
    return {("", inner): count for inner, count in Counter(_P.plain_link.findall(piece)).items()}


def _markdown_counts(piece: str) -> dict[tuple[str, str, str], int]:
    """(embed mark, label, destination) of each distinct Markdown link in `piece`, and its count."""
    if "![" in piece:
        return Counter(_P.md_link.findall(piece))
    return {("", label, raw): count for (label, raw), count in Counter(_P.plain_md_link.findall(piece)).items()}


def _line_chunks(text: str) -> Iterator[tuple[int, str]]:
    start = 0
    while start < len(text):
        end = text.find("\n", start + _COUNT_CHUNK)
        end = len(text) if end < 0 else end + 1
        yield start, text[start:end]
        start = end


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
    """Every normalised target that could resolve to `note_id`, as link keys: its path suffixes and base
    name, each with and without the extension. Used to find the links a new or removed note can change."""
    parts = link_key(note_id).split("/")
    keys: set[str] = set()
    for start in range(len(parts)):
        suffix = "/".join(parts[start:])
        keys.add(suffix)
        for ext in extensions:
            if suffix.endswith(link_key(ext)):
                keys.add(suffix[: -len(link_key(ext))])
    return keys


class LinkResolver:
    """Resolves link targets as Obsidian does: exact path, then path suffix at a `/` boundary, then, for a
    bare name without `/` only, base name anywhere (a target with a folder that no suffix matches resolves
    to nothing); each tier with or without the extension, and each comparing by `link_key` (case and
    Unicode normalisation ignored). Within the first tier that matches, a note spelled exactly as written
    wins, then the fewest path segments, then code-point order of the id (in the exact tier, the target
    as written wins over the target plus an extension, in the configured extensions' order).

    The lookups, for a subclass that answers them from elsewhere (the index database), all receive link
    keys and return actual note ids, every one that matches, in any order, duplicates allowed:

    - `find_exact(keys)`: ids whose `link_key(id)` is one of `keys`;
    - `find_suffix(keys)`: ids whose `link_key(id)` ends with `/` followed by one of `keys`;
    - `find_basename(keys)`: ids whose last segment's `link_key` is one of `keys`.

    Which of them wins is decided here, from the ids as spelled, so every subclass ranks alike. This
    class answers from memory (built once for bulk work); `add` and `remove` keep it current."""

    def __init__(self, ids: Iterable[str], extensions: tuple[str, ...]) -> None:
        self.extensions = extensions
        self.exact: dict[str, list[str]] = {}
        self.suffix: dict[str, list[str]] = {}
        self.basename: dict[str, list[str]] = {}
        for note_id in ids:
            self.add(note_id)

    def _keys_of(self, note_id: str) -> Iterator[tuple[dict[str, list[str]], str]]:
        key = link_key(note_id)
        yield self.exact, key
        parts = key.split("/")
        for start in range(1, len(parts)):
            yield self.suffix, "/".join(parts[start:])
        yield self.basename, parts[-1]

    def add(self, note_id: str) -> None:
        for table, key in self._keys_of(note_id):
            table.setdefault(key, []).append(note_id)

    def remove(self, note_id: str) -> None:
        for table, key in self._keys_of(note_id):
            ids = table.get(key)
            if ids is not None and note_id in ids:
                ids.remove(note_id)
                if not ids:
                    del table[key]

    def find_exact(self, keys: list[str]) -> list[str]:
        return [i for k in keys for i in self.exact.get(k, ())]

    def find_suffix(self, keys: list[str]) -> list[str]:
        return [i for k in keys for i in self.suffix.get(k, ())]

    def find_basename(self, keys: list[str]) -> list[str]:
        return [i for k in keys for i in self.basename.get(k, ())]

    def ranked(self, target: str) -> list[str]:
        """Every note of the first tier that matches `target`, best first (empty when none does): the
        first is what the link resolves to, and a link resolves uniquely when it is the only one."""
        path = normalise_target(target)
        if not path:
            return []
        written = _with_extensions(path, self.extensions)
        keys = [link_key(c) for c in written]
        found = set(self.find_exact(keys))
        if found:
            return sorted(found, key=lambda i: (i not in written, keys.index(link_key(i)), i))
        found = set(self.find_suffix(keys))
        if found or "/" in path:  # a target with a folder never falls back to the base name
            return sorted(found, key=lambda i: (not any(i.endswith("/" + c) for c in written), *_sort_key(i)))
        found = set(self.find_basename(keys))
        return sorted(found, key=lambda i: (i.rsplit("/", 1)[-1] not in written, *_sort_key(i)))

    def resolve(self, target: str) -> str | None:
        found = self.ranked(target)
        return found[0] if found else None

    def ranked_path(self, path: str) -> list[str]:
        """The notes at exactly vault path `path` (with or without an extension, case and Unicode form
        ignored), best first: how a Markdown link resolves, by its path and nothing else."""
        written = _with_extensions(path, self.extensions)
        keys = [link_key(c) for c in written]
        found = set(self.find_exact(keys))
        return sorted(found, key=lambda i: (i not in written, keys.index(link_key(i)), i))
