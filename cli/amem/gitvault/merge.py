"""The git merge driver for notes: edits merge line by line, appends made on two machines merge by content.

git runs it as `python -m amem.gitvault.merge %O %A %B %L %P` (registered by `amem sync`) for every note both
sides changed; `amem sync` applies the same `merge_texts` in-process. It reads the common ancestor (O), ours
(A) and theirs (B), writes the result into A, and exits 0 when the merge is clean or 1 for a real conflict
(the file then holds git's conflict markers, and git records a conflict).

- Frontmatter merges key by key: a key one side changed takes that side's value; when both changed it,
  `updated` takes the later timestamp and `created` the earlier; any other key changed differently on both
  sides is a conflict.
- The body: when one side left it alone, the other side's is taken as it is. Otherwise each side is split
  against the ancestor into three parts, and only the appends may move:
  1. the **ancestor's text as that side edited it**: everything but the two kinds of appends below;
  2. **paragraphs added to a `## <timestamp>` section of the ancestor** without changing any of the
     section's own paragraphs (what `amem write` does within the same second), each noted with its place:
     before which of the ancestor's paragraphs, or after the last;
  3. **whole `## <timestamp>` sections the ancestor does not have**.
  Part 1 of the two sides merges as a three-way line merge (`git merge-file`); if that conflicts, the note
  is a conflict. Into the result go both sides' part 2, each at its place in its section (two sides'
  additions at one place both, each side's in its order), and both sides' part 3, unioned by content
  (sections with the same heading become one; a paragraph both added is kept once), each placed among
  the sections in timestamp order. When an addition has no sure place (its section was removed or its
  neighbours edited away on the other side) the note is a conflict too, never a guess.
  So appends on any number of machines merge in any order, an edit stays under the heading it was made
  under, and only whole appended sections are ordered by timestamp.

Only the standard library is imported: git starts this once per conflicting note, so start-up is the cost.
"""

from __future__ import annotations

import os
import re
import sys
from datetime import datetime

TYPE_CHECKING = False  # not typing's: importing typing would cost the driver's start-up more than it merges
if TYPE_CHECKING:
    from collections.abc import Callable

    #: A three-way line merge of (base, ours, theirs); raises _Conflict when the sides' changes overlap.
    _LineMerge = Callable[[str, str, str], str]

_FENCE_LINE = re.compile(r"^---[ \t]*$")
_KEY_LINE = re.compile(r"^([^\s#:][^:]*?)[ \t]*:(?:[ \t]|$)")
_STAMP_HEADING = re.compile(r"^##[ \t]+(\S+)[ \t]*$")
_CODE_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


class _Conflict(Exception):
    """The two sides changed the same thing differently."""


# --- frontmatter ------------------------------------------------------------------------------------


def _split(text: str) -> tuple[str | None, str]:
    """(the frontmatter block without its `---` lines, or None; the body)."""
    lines = text.splitlines(keepends=True)
    if not lines or not _FENCE_LINE.match(lines[0].rstrip("\n")):
        return None, text
    for i in range(1, len(lines)):
        if _FENCE_LINE.match(lines[i].rstrip("\n")):
            return "".join(lines[1:i]), "".join(lines[i + 1 :])
    return None, text


def _keys(block: str) -> dict[str, str]:
    """Top-level keys of a frontmatter block → their lines as written (continuation lines included)."""
    entries: dict[str, str] = {}
    key = ""  # lines before the first key (comments) are kept under ""
    for line in block.splitlines(keepends=True):
        match = _KEY_LINE.match(line)
        if match:
            key = match.group(1)
            entries[key] = line
        else:
            entries[key] = entries.get(key, "") + line
    return entries


def _moment(entry: str) -> datetime | None:
    value = entry.split(":", 1)[1].strip().strip("'\"") if ":" in entry else ""
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _pick_time(ours: str, theirs: str, later: bool) -> str:
    a, b = _moment(ours), _moment(theirs)
    if a is None or b is None:
        raise _Conflict
    try:
        return theirs if (b > a if later else b < a) else ours
    except TypeError:  # one has an offset, the other not
        raise _Conflict from None


def merge_frontmatter(base: str | None, ours: str | None, theirs: str | None) -> str | None:
    if ours == theirs:
        return ours
    if ours is None or theirs is None:
        # One side has no frontmatter block: the block of the side that has one, when it is the change.
        if ours == base:
            return theirs
        if theirs == base:
            return ours
        raise _Conflict
    b, o, t = _keys(base or ""), _keys(ours), _keys(theirs)
    merged: dict[str, str] = {}
    for key in [*o, *(k for k in t if k not in o)]:
        bv, ov, tv = b.get(key), o.get(key), t.get(key)
        if ov == tv or tv == bv:
            value = ov
        elif ov == bv:
            value = tv
        elif key in ("updated", "created") and ov is not None and tv is not None:
            value = _pick_time(ov, tv, later=key == "updated")
        else:
            raise _Conflict
        if value is not None:
            merged[key] = value if value.endswith("\n") else value + "\n"
    return "".join(merged.values())


# --- body -------------------------------------------------------------------------------------------


def _stamp(text: str) -> float | None:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class _Block:
    """A `## <timestamp>` section (key: its heading line) or the text before the first one (key ""), as
    written, with its paragraphs: blocks between blank lines, a fenced block whole."""

    __slots__ = ("key", "lines", "moment", "paragraphs")

    def __init__(self, key: str, moment: float) -> None:
        self.key = key
        self.moment = moment
        self.lines: list[str] = []
        self.paragraphs: list[str] = []

    @property
    def text(self) -> str:
        """The block as written, without the blank lines that end it."""
        end = len(self.lines)
        while end and not self.lines[end - 1].strip():
            end -= 1
        return "\n".join(self.lines[:end])


def _blocks(body: str) -> list[_Block]:
    """The body cut, in order, at its `## <timestamp>` headings outside code."""
    current = _Block("", float("-inf"))
    blocks = [current]
    paragraph: list[str] = []
    fence: str | None = None

    def close() -> None:
        text = "\n".join(paragraph).strip("\n")
        if text.strip():
            current.paragraphs.append(text)
        paragraph.clear()

    for line in body.split("\n"):
        code = _CODE_FENCE.match(line) if line[:4].lstrip()[:1] in ("`", "~") else None
        if code:
            mark = code.group(1)
            if fence is None:
                fence = mark
            elif mark[0] == fence[0] and len(mark) >= len(fence) and not line.strip()[len(mark) :]:
                fence = None
        elif fence is None and line.startswith("##") and (heading := _STAMP_HEADING.match(line)):
            moment = _stamp(heading.group(1))
            if moment is not None:
                close()
                current = _Block(line.rstrip(), moment)
                current.lines.append(line)
                blocks.append(current)
                continue
        current.lines.append(line)
        if fence is None and not line.strip():
            close()
        else:
            paragraph.append(line)
    close()
    return blocks


def _counts(items: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for item in items:
        counts[item] = counts.get(item, 0) + 1
    return counts


def _union(one: list[str], other: list[str]) -> list[str]:
    """Two sides' appended paragraphs, each side's in its order, one both added kept once; the same list
    whichever side is which, so that two machines merging each other agree."""
    first, second = sorted((one, other))
    if second[: len(first)] == first:
        return second
    have = _counts(first)
    merged = list(first)
    for paragraph in second:
        if have.get(paragraph, 0) > 0:
            have[paragraph] -= 1
        else:
            merged.append(paragraph)
    return merged


def _union_gaps(ours: list[list[str]], theirs: list[list[str]]) -> list[list[str]]:
    """Both sides' additions to one section, gap by gap; a paragraph the two sides added at different
    places is kept once, at its first place."""
    wanted = _counts([p for gap in ours for p in gap])
    for paragraph, count in _counts([p for gap in theirs for p in gap]).items():
        wanted[paragraph] = max(wanted.get(paragraph, 0), count)
    merged: list[list[str]] = []
    for mine, other in zip(ours, theirs, strict=True):
        kept = []
        for paragraph in _union(mine, other):
            if wanted[paragraph] > 0:
                wanted[paragraph] -= 1
                kept.append(paragraph)
        merged.append(kept)
    return merged


class _Side:
    """One side's body relative to the ancestor's: the ancestor's text as this side edited it (`head`),
    the paragraphs it added to the ancestor's timestamp sections without changing theirs (`inserted`:
    for each such section, what it added before each of the ancestor's paragraphs and after the last),
    and the whole timestamp sections the ancestor does not have (`added`)."""

    def __init__(self, blocks: list[_Block], base: dict[str, _Block | None]) -> None:
        keys = _counts([block.key for block in blocks])
        self.inserted: dict[str, list[list[str]]] = {}
        self.added: dict[str, _Block] = {}
        kept: list[str] = []
        for block in blocks:
            if block.key and block.key not in base:
                section = self.added.setdefault(block.key, _Block(block.key, block.moment))
                section.paragraphs += block.paragraphs
                continue
            old = base.get(block.key)
            gaps = _gaps(old.paragraphs, block.paragraphs) if old is not None and keys[block.key] == 1 else None
            if old is not None and gaps is not None:
                kept.append(old.text)
                if any(gaps):
                    self.inserted[block.key] = gaps
            else:
                kept.append(block.text)
        self.head = "\n\n".join(text for text in kept if text.strip())


def _gaps(old: list[str], new: list[str]) -> list[list[str]] | None:
    """When `new` is `old` with paragraphs added: what was added before each of old's paragraphs, and
    after the last; None when `new` changed, removed or reordered any of old's."""
    gaps: list[list[str]] = [[] for _ in range(len(old) + 1)]
    matched = 0
    for paragraph in new:
        if matched < len(old) and paragraph == old[matched]:
            matched += 1
        else:
            gaps[matched].append(paragraph)
    return gaps if matched == len(old) else None


def _sides(blocks: list[_Block], ours: str, theirs: str) -> tuple[str, _Side, _Side]:
    """The ancestor's text, and each side split against the ancestor's blocks."""
    keys = _counts([block.key for block in blocks])
    # A heading the ancestor has twice cannot say which section a side added to: only edits there.
    index: dict[str, _Block | None] = {b.key: (b if keys[b.key] == 1 and b.key else None) for b in blocks}
    base_head = "\n\n".join(text for block in blocks if (text := block.text).strip())
    return base_head, _Side(_blocks(ours), index), _Side(_blocks(theirs), index)


def _anchor(paragraphs: list[str], old: list[str], gap: int) -> int:
    """Where in the merged section `paragraphs` the additions made at `gap` of the ancestor's `old` go:
    before the ancestor's paragraph that followed them, else after the one before them; the start and the
    end of the section are always sure. Raises _Conflict when the other side's edits leave no sure place."""
    if gap == 0:
        return 0
    if gap == len(old):
        return len(paragraphs)
    if paragraphs.count(old[gap]) == 1:
        return paragraphs.index(old[gap])
    if paragraphs.count(old[gap - 1]) == 1:
        return paragraphs.index(old[gap - 1]) + 1
    raise _Conflict


def _insert(head: list[_Block], key: str, gaps: list[list[str]], old: list[str]) -> None:
    """Add both sides' additions to the merged text's section `key`, each where it was added, less those
    the section already has (both sides added them, or the other side's edits brought them)."""
    found = [block for block in head if block.key == key]
    if len(found) != 1:
        raise _Conflict  # the section was removed or doubled on the other side: not sure where they go
    block = found[0]
    already = _counts(block.paragraphs)
    for paragraph, count in _counts(old).items():
        already[paragraph] = already.get(paragraph, 0) - count
    places: list[tuple[int, int, str]] = []
    for gap, added in enumerate(gaps):
        for paragraph in added:
            if already.get(paragraph, 0) > 0:
                already[paragraph] -= 1
            else:
                places.append((_anchor(block.paragraphs, old, gap), gap, paragraph))
    if places:
        places.sort(key=lambda place: (place[0], place[1]))  # stable: a gap's paragraphs stay in order
        merged = [p for at, _, p in places if at == 0]
        for n, paragraph in enumerate(block.paragraphs, 1):
            merged += [paragraph, *(p for at, _, p in places if at == n)]
        block.paragraphs = merged
        block.lines = ["\n\n".join([block.key, *merged])]


def _place(head: list[_Block], sections: list[_Block]) -> list[_Block]:
    """The appended sections put among the merged text's sections in timestamp order: each goes before
    the first of the merged text's sections that is later (the merged text keeps its own order)."""
    if {block.key for block in head} & {section.key for section in sections}:
        raise _Conflict  # the other side's edits made a heading that this side appended
    merged: list[_Block] = []
    at = 0
    for section in sorted(sections, key=lambda s: (s.moment, s.key)):
        order = (section.moment, section.key)
        while at < len(head) and not (head[at].key and (head[at].moment, head[at].key) > order):
            merged.append(head[at])
            at += 1
        section.lines = ["\n\n".join([section.key, *section.paragraphs])]
        merged.append(section)
    return merged + head[at:]


def merge_body(base: str, ours: str, theirs: str, merge_lines: _LineMerge) -> str:
    """The merged body; raises _Conflict when the sides' edits conflict or the appends have no sure place.

    Each side is split into the ancestor's text as it edited it and what it appended (see the module's
    docstring); the edited texts merge line by line, and the appends are added to that, by content."""
    ancestor = _blocks(base)
    base_head, mine, other = _sides(ancestor, ours, theirs)
    if mine.head == other.head or other.head == base_head:
        head = mine.head
    elif mine.head == base_head:
        head = other.head
    else:
        head = merge_lines(base_head + "\n", mine.head + "\n", other.head + "\n")
    blocks = _blocks(head)
    old = {block.key: block.paragraphs for block in ancestor}
    for key in dict.fromkeys([*mine.inserted, *other.inserted]):
        before = old[key]
        none: list[list[str]] = [[] for _ in range(len(before) + 1)]
        ours_gaps, theirs_gaps = mine.inserted.get(key, none), other.inserted.get(key, none)
        _insert(blocks, key, _union_gaps(ours_gaps, theirs_gaps), before)
    added: dict[str, _Block] = {}
    for side in (mine, other):
        for key, section in side.added.items():
            if key in added:
                section.paragraphs = _union(added[key].paragraphs, section.paragraphs)
            added[key] = section
    texts = [text for block in _place(blocks, list(added.values())) if (text := block.text).strip()]
    return "\n\n".join(texts) + "\n" if texts else ""


def _merge_file(base: str, ours: str, theirs: str, labels: tuple[str, str, str], marker: str) -> tuple[int, str]:
    """git's own three-way line merge of three texts: (exit status, result with markers on conflict)."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="amem-merge-") as scratch:
        paths = []
        for name, text in (("ours", ours), ("base", base), ("theirs", theirs)):
            path = os.path.join(scratch, name)
            with open(path, "w", encoding="utf-8", newline="") as handle:
                handle.write(text)
            paths.append(path)
        argv = ["git", "merge-file", "--stdout", f"--marker-size={marker}"]
        for label in (labels[0], labels[1], labels[2]):
            argv += ["-L", label]
        proc = subprocess.run(argv + paths, capture_output=True, check=False)
    return (0 if proc.returncode == 0 else 1), proc.stdout.decode("utf-8", "surrogateescape")


def merge_texts(base: str, ours: str, theirs: str, *, name: str = "note", marker: str = "7") -> tuple[bool, str]:
    """(clean, merged text) for three versions of a note."""
    crlf = "\r\n" in ours
    bom = "\ufeff" if ours.startswith("\ufeff") else ""
    b, o, t = (x.removeprefix("\ufeff").replace("\r\n", "\n") for x in (base, ours, theirs))
    (bf, bb), (of, ob), (tf, tb) = _split(b), _split(o), _split(t)
    labels = (f"ours:{name}", f"base:{name}", f"theirs:{name}")

    def merge_lines(base: str, ours: str, theirs: str) -> str:
        status, merged = _merge_file(base, ours, theirs, labels, marker)
        if status != 0:
            raise _Conflict
        return merged

    try:
        front = merge_frontmatter(bf, of, tf)
        if ob == tb or tb == bb:
            body = ob
        elif ob == bb:
            body = tb
        else:
            body = merge_body(bb, ob, tb, merge_lines)
    except _Conflict:
        _, marked = _merge_file(b, o, t, labels, marker)
        return False, marked
    text = body if front is None else f"---\n{front}---\n{body}"
    if crlf:
        text = re.sub(r"(?<!\r)\n", "\r\n", text)
    return True, bom + text


def _read(path: str) -> str:
    with open(path, "rb") as handle:
        return handle.read().decode("utf-8", "surrogateescape")


def main(argv: list[str]) -> int:
    """`%O %A %B [%L [%P]]`: merge into %A; 0 when clean, 1 on a conflict, 2 on bad arguments."""
    if len(argv) < 3:
        sys.stderr.write("usage: python -m amem.gitvault.merge BASE OURS THEIRS [MARKER-SIZE [PATH]]\n")
        return 2
    base_path, ours_path, theirs_path = argv[:3]
    marker = argv[3] if len(argv) > 3 and argv[3].isdigit() else "7"
    name = argv[4] if len(argv) > 4 else os.path.basename(ours_path)
    try:
        clean, text = merge_texts(_read(base_path), _read(ours_path), _read(theirs_path), name=name, marker=marker)
        with open(ours_path, "wb") as handle:
            handle.write(text.encode("utf-8", "surrogateescape"))
    except OSError as exc:
        sys.stderr.write(f"amem merge: cannot merge {name}: {exc.strerror}\n")
        return 2
    return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
