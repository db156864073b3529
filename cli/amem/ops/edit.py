"""`amem edit`: change part of a note (a find and replace, the section under a heading, a prepend) through
the one write path, leaving every byte it was not asked to change as it was, but the `updated` line.

The text is edited as text: the frontmatter is never re-rendered (the `updated` line is replaced in place
or added in the block's own line-ending style), CRLF stays CRLF, a BOM stays, and the body's headings are
those CommonMark reads (`notes.blocks`: setext ones too; none in code or HTML). `edit_note` is what `amem
edit` and the MCP tool `wiki_edit` call.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any, NamedTuple

from ..errors import AmemError, NotFound, UsageError
from ..notes.ids import resolve_note
from ..notes.parse import parse_note
from ..notes.sections import heading_key, sections
from ..output import quote
from ..timefmt import iso, now
from .relink import stamp_updated
from .write import save_note

if TYPE_CHECKING:
    from ..config import Config
    from ..report import Reporter
    from ..results import EditResult

_BOM = "\ufeff"
_LEADING_BLANK_LINES = re.compile(r"(?:[ \t]*\r?\n)*")


class Edit(NamedTuple):
    """One edit, as the caller asked for it: find/replace (all occurrences with `all`), the section under
    the heading `section` replaced by `content`, or `prepend` inserted at the start of the body."""

    find: str | None = None
    replace: str | None = None
    all: bool = False
    section: str | None = None
    content: str | None = None
    prepend: str | None = None

    def kind(self) -> str:
        """Which edit this is (find, section or prepend); a usage error unless exactly one is fully given."""
        chosen = [name for name in ("find", "section", "prepend") if getattr(self, name) is not None]
        if len(chosen) != 1:
            shown = ", ".join(chosen) if chosen else "none"
            raise UsageError(f"give exactly one edit: find with replace, section, or prepend (got {shown})")
        kind = chosen[0]
        if (self.replace is not None) != (kind == "find"):
            raise UsageError("find and replace go together: give both, or neither")
        if self.all and kind != "find":
            raise UsageError("all applies to find and replace only")
        if (self.content is not None) != (kind == "section"):
            raise UsageError("content goes with section (the new text under the heading), and only with it")
        if kind == "find" and not self.find:
            raise UsageError("nothing to find: the text to find is empty")
        if kind == "prepend" and not (self.prepend or "").strip():
            raise UsageError("nothing to prepend: the content is empty")
        if kind == "section" and not heading_key(self.section or "")[1]:
            raise UsageError("no heading: name the section's heading, e.g. 'Status' or '## Status'")
        return kind


class EditMismatch(UsageError):
    """The edit does not fit the note: its text or heading occurs too few or too many times."""


# --- the note's parts ---------------------------------------------------------------------------------


class _Parts(NamedTuple):
    bom: str
    #: the opening `---` line, the block and the closing line, as written; "" when the note has none
    head: str
    #: the frontmatter block (between the fences) as written; None when there is none, or it is malformed
    block: str | None
    body: str
    frontmatter: dict[str, Any]
    #: False for a block that does not parse (kept as body by the parser): its `updated` is not touched
    stampable: bool


def _split(text: str) -> _Parts:
    bom = _BOM if text.startswith(_BOM) else ""
    text = text[len(bom) :]
    note = parse_note(text)
    if note.frontmatter_text is None and note.warnings:
        # A block that does not parse: left exactly as written (no `updated`), and no edit reaches into it.
        from ..notes.simple_yaml import split_frontmatter

        body = split_frontmatter(text)[1]
        return _Parts(bom, text[: len(text) - len(body)], None, body, {}, False)
    head = text[: len(text) - len(note.body)]
    return _Parts(bom, head, note.frontmatter_text, note.body, note.frontmatter, True)


def newline_of(text: str) -> str:
    """The line ending most of `text`'s lines use: CRLF when more lines end so than not."""
    crlf = text.count("\r\n")
    return "\r\n" if crlf and crlf * 2 >= text.count("\n") else "\n"


def _stamped_head(parts: _Parts, stamp: str, nl: str) -> str:
    """The head with its `updated` line set to `stamp`, as a move stamps it (`stamp_updated`: the last
    `updated` line edited in place, else a line added in the block's own line ending), or, for a note
    without frontmatter, a new block."""
    if parts.block is None:
        return f"---{nl}updated: {stamp}{nl}---{nl}"
    opening = parts.head[: parts.head.index("\n") + 1]
    closing = parts.head[len(opening) + len(parts.block) :]
    return opening + stamp_updated(parts.block, stamp, "\r\n" if opening.endswith("\r\n") else "\n") + closing


def _head_for(parts: _Parts, stamp: str, nl: str, reporter: Reporter | None) -> str:
    """The new head: stamped, when the stamped block still reads as the same mapping with the new
    `updated`; otherwise (YAML this line edit cannot follow) as it was, with a warning."""
    if not parts.stampable:
        return parts.head
    head = _stamped_head(parts, stamp, nl)
    expected = {**parts.frontmatter, "updated": stamp}
    if parse_note(head).frontmatter != expected:
        if reporter is not None:
            reporter.warn("the frontmatter's `updated` could not be stamped without rewriting it: left as it was")
        return parts.head
    return head


# --- the edits on the body ----------------------------------------------------------------------------


def _mismatch(what: str, count: int, hint: str) -> EditMismatch:
    times = "once" if count == 1 else f"{count} times"
    return EditMismatch(f"{what} occurs {times} in the body; {hint}; nothing was written", matches=count)


def _occurrences(pattern: re.Pattern[str], body: str) -> int:
    """How many places `pattern` matches at, overlapping ones included: `aa` is twice in `aaa`, and a
    replacement of either would be a guess."""
    count = 0
    found = pattern.search(body)
    while found is not None:
        count += 1
        found = pattern.search(body, found.start() + 1)
    return count


def find_replace(body: str, find: str, replace: str, every: bool, nl: str) -> tuple[str, int]:
    """`body` with `find` replaced: its only occurrence, or with `every` each one (left to right, not
    overlapping). A line break in `find` matches LF or CRLF; the replacement's take the note's `nl`."""
    pattern = re.compile(r"\r?\n".join(re.escape(piece) for piece in find.replace("\r\n", "\n").split("\n")))
    starts = len(pattern.findall(body)) if every else _occurrences(pattern, body)
    if starts == 0:
        raise _mismatch("the text to find", 0, "nothing matched: copy it exactly from the note")
    if starts > 1 and not every:
        hint = "give more of the text around it to make it unique, or replace all of them (--all)"
        raise _mismatch("the text to find", starts, hint)
    text = replace.replace("\r\n", "\n").replace("\n", nl)
    return pattern.subn(lambda _: text, body, count=0 if every else 1)


def _clean(content: str, nl: str) -> str:
    return content.replace("\r\n", "\n").strip("\n").rstrip().replace("\n", nl)


def replace_section(body: str, heading: str, content: str, nl: str) -> tuple[str, int]:
    """`body` with what lies under `heading` (up to the next heading of the same or a higher level)
    replaced by `content`; the heading line stays, one blank line on each side of the new text."""
    matches = sections(body, heading)
    if len(matches) != 1:
        hint = "check the heading's text" if not matches else "the heading must be unique: rename one of them"
        raise _mismatch(f"the heading {quote(heading.strip())}", len(matches), hint)
    this, end = matches[0]
    text = _clean(content, nl)
    middle = "" if this.after > this.start and body[this.after - 1] == "\n" else nl
    if text:
        middle += nl + text + nl
    if end < len(body):  # a heading follows
        middle += nl
    return body[: this.after] + middle + body[end:], 1


def prepend_body(body: str, content: str, nl: str) -> tuple[str, int]:
    """`body` with `content` inserted at its start (after any blank lines it opens with), one blank line
    between it and what follows."""
    at = _LEADING_BLANK_LINES.match(body)
    start = at.end() if at else 0
    rest = body[start:]
    text = _clean(content, nl)
    return body[:start] + text + nl + (nl + rest if rest else ""), 1


def edit_text(text: str, edit: Edit, stamp: str, reporter: Reporter | None = None) -> tuple[str, int]:
    """The note's text after `edit`, with `updated` stamped; and how many occurrences or sections changed."""
    kind = edit.kind()
    parts = _split(text)
    nl = newline_of(parts.body if "\n" in parts.body else text)  # what it inserts follows the body's lines
    if kind == "find":
        body, replaced = find_replace(parts.body, edit.find or "", edit.replace or "", edit.all, nl)
    elif kind == "section":
        body, replaced = replace_section(parts.body, edit.section or "", edit.content or "", nl)
    else:
        body, replaced = prepend_body(parts.body, edit.prepend or "", nl)
    return parts.bom + _head_for(parts, stamp, nl, reporter) + body, replaced


# --- the operation ------------------------------------------------------------------------------------


def edit_note(
    config: Config,
    raw_id: str,
    edit: Edit,
    *,
    base_version: str | None = None,
    commit: bool = False,
    reporter: Reporter | None = None,
) -> EditResult:
    """`amem edit`: apply `edit` to an existing note under its lock, guarded by `base_version`, and commit
    it when `commit` or git.autoCommit asks. Returns {id, version, bytes, replaced}, plus `commit` when a
    commit was made. Nothing is written when the edit does not fit the note."""
    edit.kind()  # a malformed edit is a usage error before the note is even looked at
    ref = resolve_note(config, raw_id)
    if not os.path.lexists(ref.path):
        raise NotFound(f"cannot edit note {quote(ref.id)}: no such note")
    tz = config.tz
    replaced = [0]

    def transform(old: bytes | None) -> bytes:
        if old is None:
            raise NotFound(f"cannot edit note {quote(ref.id)}: no such note")
        try:
            text = old.decode("utf-8")
        except UnicodeDecodeError:
            raise UsageError(f"cannot edit note {quote(ref.id)}: it is not UTF-8 text") from None
        try:
            new, replaced[0] = edit_text(text, edit, iso(now(tz)), reporter)
        except EditMismatch as exc:
            exc.message = f"cannot edit note {quote(ref.id)}: {exc.message}"
            raise
        return new.encode("utf-8")

    result = save_note(config, ref, transform, base_version=base_version, require_existing=True, reporter=reporter)
    data: EditResult = {"id": result.id, "version": result.version, "bytes": result.bytes, "replaced": replaced[0]}
    if commit or config.git_auto_commit:
        from ..gitvault.git import maybe_commit

        try:
            sha = maybe_commit(config, ref, f"amem: edit {result.id}", commit, reporter=reporter)
        except AmemError as exc:
            exc.details["written"] = data  # the note is edited: say so, with its new version
            raise
        if sha:
            data["commit"] = sha
    return data
