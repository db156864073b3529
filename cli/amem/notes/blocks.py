"""A note body's block structure as CommonMark reads it, line by line: which lines are code (fenced or
indented), HTML blocks, headings (ATX and setext) or paragraphs, through block quotes and list items.
Links, headings, titles, tags and `edit --section` all ask `blocks`, so that one reading decides them.

The scanner follows CommonMark's own two-phase algorithm (its spec's appendix) for the block phase: the
open containers are matched line by line, then new block starts are tried, then the line is a paragraph's
continuation (lazy or not) or starts one. It does not read link reference definitions: a paragraph made
only of them is still a paragraph, and a setext underline under one still makes a heading.
"""

from __future__ import annotations

import re

PARAGRAPH = "paragraph"
HEADING = "heading"
CODE = "code"
HTML = "html"

#: The first characters (after the indentation) that can start anything but a paragraph line.
_SPECIAL = frozenset("#`~*+_=<>-0123456789")
#: A line's first character ("": a blank line) when the line may be anything but a paragraph's at the top level.
_NOT_PLAIN = _SPECIAL | {" ", ""}
_DIGITS = frozenset("0123456789")


class Block:
    """A leaf block: its kind (PARAGRAPH, HEADING, CODE or HTML), the lines it spans (`first` up to but
    not including `end`, from 0), and for a heading its level and text. `nested`: inside a block quote or
    a list item. A plain class: a read pays nothing to define it."""

    __slots__ = ("end", "first", "kind", "level", "nested", "text")

    def __init__(self, kind: str, first: int, end: int, level: int = 0, text: str = "", nested: bool = False) -> None:
        self.kind = kind
        self.first = first
        self.end = end
        self.level = level
        self.text = text
        self.nested = nested

    def __repr__(self) -> str:
        return f"Block({self.kind!r}, {self.first}, {self.end}, {self.level}, {self.text!r}, {self.nested})"


def body_lines(body: str) -> list[str]:
    """The body's lines as the scanner reads them: split at LF, a CR before it left off."""
    lines = body.split("\n")
    if "\r" in body:
        lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    return lines


#: The last body scanned and its blocks: the readers of one note (links, headings, title, tags) share a
#: scan. Held by identity, so a body is never hashed or compared.
_last: tuple[str | None, list[Block]] = (None, [])


def blocks(body: str) -> list[Block]:
    """The leaf blocks of `body` that hold text, in order. Blank lines, thematic breaks and empty list
    items are in none; every other line is in exactly one."""
    global _last
    seen = _last
    if seen[0] is body:
        return seen[1]
    found = scan(body_lines(body))
    _last = (body, found)
    return found


def code_lines(found: list[Block]) -> set[int]:
    """The lines of code and HTML blocks among `found`: the lines that hold no prose."""
    return {line for block in found if block.kind in (CODE, HTML) for line in range(block.first, block.end)}


def headings(body: str) -> list[Block]:
    """The body's headings (ATX and setext, at any depth), in order."""
    if "#" not in body and "=" not in body and "-" not in body:
        return []  # no heading without `#` or an underline
    return [block for block in blocks(body) if block.kind == HEADING]


class _Patterns:
    """Patterns compiled on their first use: most notes have no HTML block."""

    _html: list[tuple[re.Pattern[str], re.Pattern[str] | None]] | None = None

    @classmethod
    def html(cls) -> list[tuple[re.Pattern[str], re.Pattern[str] | None]]:
        """CommonMark's seven HTML block starts, in order, each with its end (None: a blank line ends it)."""
        if cls._html is None:
            cls._html = [
                (re.compile(start, flags), re.compile(end, flags) if end else None)
                for start, end, flags in _HTML_SOURCES
            ]
        return cls._html


_BLOCK_NAMES = (
    "address|article|aside|base|basefont|blockquote|body|caption|center|col|colgroup|dd|details|dialog|dir|div|dl"
    "|dt|fieldset|figcaption|figure|footer|form|frame|frameset|h1|h2|h3|h4|h5|h6|head|header|hr|html|iframe|legend"
    "|li|link|main|menu|menuitem|nav|noframes|ol|optgroup|option|p|param|search|section|summary|table|tbody|td"
    "|tfoot|th|thead|title|tr|track|ul"
)
_ATTRIBUTE = r"""(?:\s+[a-zA-Z_:][a-zA-Z0-9:._-]*(?:\s*=\s*(?:[^"'=<>`\x00-\x20]+|'[^']*'|"[^"]*"))?)"""
_OPEN_CLOSE_TAG = rf"(?:<[A-Za-z][A-Za-z0-9\-]*{_ATTRIBUTE}*\s*/?>|</[A-Za-z][A-Za-z0-9\-]*\s*>)"
#: (start, end) of HTML block types 1 to 7; type 7 (a lone open or close tag) cannot interrupt a paragraph.
_HTML_SOURCES = (
    (r"<(?a:script|pre|style|textarea)(?=\s|>|$)", r"</(?a:script|pre|style|textarea)>", re.IGNORECASE),
    (r"<!--", r"-->", 0),
    (r"<\?", r"\?>", 0),
    (r"<![A-Za-z]", r">", 0),
    (r"<!\[CDATA\[", r"\]\]>", 0),
    (rf"</?(?a:{_BLOCK_NAMES})(?=\s|/?>|$)", "", re.IGNORECASE),
    (rf"{_OPEN_CLOSE_TAG}\s*$", "", 0),
)


# --- the scanner --------------------------------------------------------------------------------------


class _Container:
    """An open block quote or list item. An item's `indent` is the column its content starts at, counted
    from where its parent's content starts; `filled` once it holds a block (an item that opened empty
    ends at its first blank line)."""

    __slots__ = ("filled", "indent", "quote")

    def __init__(self, quote: bool, indent: int = 0, filled: bool = False) -> None:
        self.quote = quote
        self.indent = indent
        self.filled = filled


class _Leaf:
    """The open leaf block that takes more lines: a paragraph, a fence, indented code or an HTML block."""

    __slots__ = ("depth", "end", "fence", "first", "kind", "last", "starts")

    def __init__(self, kind: str, first: int, depth: int) -> None:
        self.kind = kind
        self.first = first
        self.last = first  # its last line so far (indented code: its last line that is not blank)
        self.depth = depth  # how many containers it lies in
        self.fence = ""  # a fence's opening run (``` or ~~~ and longer)
        self.end: re.Pattern[str] | None = None  # what ends an HTML block of types 1 to 5
        self.starts: list[int] = []  # a paragraph's lines: where each one's text starts


_FENCE = "fence"
_INDENTED = "indented"


def scan(lines: list[str]) -> list[Block]:
    """The leaf blocks of a body given as its lines (without line endings); see `blocks`."""
    scanner = _Scanner(lines)
    stack, feed = scanner.stack, scanner.feed
    for number, line in enumerate(lines):
        if "\t" in line:
            line = line.expandtabs(4)  # tab stops every 4 columns: columns are characters from here on
        leaf = scanner.leaf
        if not stack and leaf is not None and leaf.kind == _FENCE:
            # A fence at the top level: a line of code, unless it holds the fence and closes it.
            leaf.last = number
            if leaf.fence in line and _spaces(line, 0) <= 3 and _closes(line, _spaces(line, 0), leaf.fence):
                scanner.close_leaf()
            continue
        if not stack and (leaf is None or leaf.kind == PARAGRAPH):
            # The common lines at the top level: no container to match, no code or HTML block open.
            if line[:1] not in _NOT_PLAIN:
                # prose that could start nothing else
                if leaf is None:
                    scanner.leaf = leaf = _Leaf(PARAGRAPH, number, 0)
                leaf.last = number
                leaf.starts.append(0)
                continue
            if not line.strip(" "):
                if leaf is not None:
                    scanner.close_leaf()  # a blank line ends the paragraph
                continue
        feed(number, line)
    scanner.close_leaf()
    return scanner.found


def _spaces(text: str, pos: int) -> int:
    """The position of the first character at or after `pos` that is not a space."""
    end = len(text)
    while pos < end and text[pos] == " ":
        pos += 1
    return pos


class _Scanner:
    """CommonMark's block phase over one body: `feed` each line in turn, then `close_leaf`."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.stack: list[_Container] = []
        self.leaf: _Leaf | None = None
        self.found: list[Block] = []
        # where the line `tails_of` has its last character other than each mark and spaces (_thematic_break)
        self.tails_of: str | None = None
        self.tails: dict[str, int] = {}

    def feed(self, number: int, line: str) -> None:
        stack, leaf = self.stack, self.leaf
        pos, matched = self._match_containers(line)
        if (
            leaf is not None
            and leaf.kind != PARAGRAPH
            and matched == len(stack)
            and self._continue_leaf(number, line, pos)
        ):
            return
        self._starts(number, line, pos, matched)

    def _match_containers(self, line: str) -> tuple[int, int]:
        """(where the line's content starts, how many open containers it continues)."""
        pos = text = 0
        for depth, container in enumerate(self.stack):
            if text <= pos:
                text = _spaces(line, pos)  # else still where the text starts: found once for many items
            if container.quote:
                if text - pos > 3 or line[text : text + 1] != ">":
                    return pos, depth
                pos = text + 1
                if line[pos : pos + 1] == " ":
                    pos += 1
            elif text == len(line):
                if not container.filled:
                    return pos, depth  # an item that opened empty: a blank line ends it
                pos = text
            elif text - pos >= container.indent:
                pos += container.indent
            else:
                return pos, depth
        return pos, len(self.stack)

    def _continue_leaf(self, number: int, line: str, pos: int) -> bool:
        """Whether the open code or HTML block takes the line (its containers all continue); it is
        closed when it ends before the line."""
        leaf = self.leaf
        assert leaf is not None
        text = _spaces(line, pos)
        if leaf.kind == _FENCE:
            leaf.last = number
            if text - pos <= 3 and _closes(line, text, leaf.fence):
                self.close_leaf()
            return True
        blank = text == len(line)
        if leaf.kind == _INDENTED:
            if text - pos >= 4:
                leaf.last = number
                return True
            if blank:
                return True  # code for now: the block's last line says whether it ran on past it
            self.close_leaf()
            return False
        if blank and leaf.end is None:
            self.close_leaf()  # HTML of type 6 or 7 ends at a blank line
            return False
        leaf.last = number
        if leaf.end is not None and leaf.end.search(line, pos):
            self.close_leaf()
        return True

    def _starts(self, number: int, line: str, pos: int, matched: int) -> None:
        """Try the block starts at `pos`, under the first `matched` containers, then take the line as text."""
        leaf = self.leaf
        tip_paragraph = leaf is not None and leaf.kind == PARAGRAPH  # until a container starts on the line
        while True:
            text = _spaces(line, pos)
            if text == len(line):
                break
            if text - pos >= 4:
                if not tip_paragraph:
                    self._open(_Leaf(_INDENTED, number, matched), matched)
                    return
                break
            char = line[text]
            if char not in _SPECIAL:
                break
            # a paragraph whose containers all continue, the line not yet inside a new container
            in_paragraph = tip_paragraph and matched == len(self.stack)
            if char == ">":
                self._push(_Container(True), matched)
                matched += 1
                tip_paragraph = False
                pos = text + 2 if line[text + 1 : text + 2] == " " else text + 1
                continue
            if self._leaf_start(number, line, text, matched, in_paragraph, tip_paragraph):
                return
            item = _list_item(line, text, in_paragraph)
            if item is None:
                break
            content, padding = item
            self._push(_Container(False, text - pos + padding), matched)
            matched += 1
            tip_paragraph = False
            pos = content
        self._text(number, line, pos, matched, tip_paragraph)

    def _leaf_start(
        self, number: int, line: str, text: int, matched: int, in_paragraph: bool, tip_paragraph: bool
    ) -> bool:
        """Start the leaf block that `line` opens at `text` (a heading, a fence, HTML, a setext underline or
        a thematic break); False when it opens none of them."""
        char = line[text]
        if char == "#":
            heading = _atx(line, text)
            if heading is not None:
                self._open(None, matched)
                self.found.append(Block(HEADING, number, number + 1, heading[0], heading[1], matched > 0))
                return True
        elif char in "`~":
            fence = _fence(line, text)
            if fence:
                leaf = _Leaf(_FENCE, number, matched)
                leaf.fence = fence
                self._open(leaf, matched)
                return True
        elif char == "<":
            return self._html_start(number, line, text, matched, tip_paragraph)
        if in_paragraph and char in "=-" and not line[text:].rstrip(" ").strip(char):
            self._setext(number, 1 if char == "=" else 2)
            return True
        if char in "*-_" and self._thematic_break(line, text, char):
            self._open(None, matched)
            return True
        return False

    def _thematic_break(self, line: str, at: int, char: str) -> bool:
        """Whether the rest of the line from `at` is three `char`s or more and spaces: where the line's last
        other character is, found once a line (a line of list markers asks at each one)."""
        if self.tails_of is not line:
            self.tails_of, self.tails = line, {}
        tail = self.tails.get(char)
        if tail is None:
            tail = self.tails[char] = len(line.rstrip(char + " "))
        return tail <= at and line.count(char, at) >= 3

    def _html_start(self, number: int, line: str, text: int, matched: int, tip_paragraph: bool) -> bool:
        for kind, (start, end) in enumerate(_Patterns.html(), start=1):
            if start.match(line, text):
                if kind == 7 and tip_paragraph:
                    return False  # a lone tag cannot interrupt a paragraph
                leaf = _Leaf(HTML, number, matched)
                leaf.end = end
                self._open(leaf, matched)
                if end is not None and end.search(line, text):
                    self.close_leaf()
                return True
        return False

    def _setext(self, number: int, level: int) -> None:
        """The open paragraph, underlined on line `number`, becomes a heading."""
        leaf = self.leaf
        assert leaf is not None
        parts = [self._expanded(leaf.first + row)[start:] for row, start in enumerate(leaf.starts)]
        text = "\n".join(parts).strip(" ")
        self.found.append(Block(HEADING, leaf.first, number + 1, level, text, leaf.depth > 0))
        self.leaf = None

    def _expanded(self, number: int) -> str:
        line = self.lines[number]
        return line.expandtabs(4) if "\t" in line else line

    def _text(self, number: int, line: str, pos: int, matched: int, tip_paragraph: bool) -> None:
        """The line is text: a paragraph's next line (lazy, when some container did not continue), or the
        first of a new one; or blank."""
        text = _spaces(line, pos)
        blank = text == len(line)
        leaf = self.leaf
        if tip_paragraph and not blank and leaf is not None:
            leaf.last = number
            leaf.starts.append(text)
            return
        self._close_unmatched(matched)
        if blank:
            self.close_leaf()  # a paragraph ends at a blank line
        else:
            leaf = _Leaf(PARAGRAPH, number, matched)
            leaf.starts.append(text)
            self._open(leaf, matched)

    def _close_unmatched(self, matched: int) -> None:
        """Close the containers past the first `matched`, and the leaf when it lies in one of them."""
        del self.stack[matched:]
        if self.leaf is not None and self.leaf.depth > matched:
            self.close_leaf()

    def _open(self, leaf: _Leaf | None, matched: int) -> None:
        """A new block in the `matched`-th container: whatever was open there is closed first."""
        self._close_unmatched(matched)
        self.close_leaf()
        if self.stack:
            self.stack[-1].filled = True
        self.leaf = leaf

    def _push(self, container: _Container, matched: int) -> None:
        self._open(None, matched)
        self.stack.append(container)

    def close_leaf(self) -> None:
        leaf = self.leaf
        if leaf is None:
            return
        self.leaf = None
        kind = CODE if leaf.kind in (_FENCE, _INDENTED) else leaf.kind
        self.found.append(Block(kind, leaf.first, leaf.last + 1, nested=leaf.depth > 0))


def _atx(line: str, at: int) -> tuple[int, str] | None:
    """(level, text) of the ATX heading at `at`, if one is there."""
    end = at
    while end < len(line) and line[end] == "#":
        end += 1
    level = end - at
    if level > 6 or (end < len(line) and line[end] != " "):
        return None
    text = line[end:].strip(" ")
    closed = text.rstrip("#")
    if not closed or closed.endswith(" "):
        text = closed.rstrip(" ")
    return level, text


def _fence(line: str, at: int) -> str:
    """The run that opens a fence at `at` (``` or ~~~ or longer; a backtick fence's info string holds no
    backtick), or ""."""
    char = line[at]
    end = at
    while end < len(line) and line[end] == char:
        end += 1
    if end - at < 3 or (char == "`" and "`" in line[end:]):
        return ""
    return line[at:end]


def _closes(line: str, at: int, fence: str) -> bool:
    """Whether the line closes `fence` at `at`: a run of its character at least as long, then only spaces."""
    if not line.startswith(fence, at):
        return False
    return not line[at:].rstrip(" ").strip(fence[0])


def _list_item(line: str, at: int, in_paragraph: bool) -> tuple[int, int] | None:
    """(where its content starts, its marker's width with the spaces after it) of the list item whose
    marker is at `at`; None when there is none, or when it may not interrupt the paragraph it follows
    (only an ordered list that starts at 1 may, and never an empty item)."""
    char = line[at]
    end = at + 1
    if char in _DIGITS:
        while end < len(line) and line[end] in _DIGITS:
            end += 1
        if end - at > 9 or line[end : end + 1] not in (".", ")"):
            return None
        if in_paragraph and int(line[at:end]) != 1:
            return None
        end += 1
    elif char not in "*+-":
        return None
    if end < len(line) and line[end] != " ":
        return None
    text = _spaces(line, end)
    if text == len(line):
        if in_paragraph:
            return None
        return min(end + 1, len(line)), end - at + 1  # an empty item: its content one column past the marker
    spaces = text - end
    if spaces > 4:
        return end + 1, end - at + 1  # indented code starts its content
    return text, text - at
