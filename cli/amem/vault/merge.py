"""The git merge driver for notes: appends made on two machines merge, in timestamp order.

git runs it as `python -m amem.vault.merge %O %A %B %L %P` (registered by `amem sync`) for every note both
sides changed. It reads the common ancestor (O), ours (A) and theirs (B), writes the result into A, and exits
0 when the merge is clean or 1 for a real conflict (git then records one).

- Frontmatter merges key by key: a key one side changed takes that side's value; when both changed it,
  `updated` takes the later timestamp and `created` the earlier; any other key changed differently on both
  sides is a conflict.
- The body merges by content: it is cut into `## <timestamp>` sections (keyed by the heading) and each
  section into paragraphs, and each section ends with the paragraphs of both sides (a paragraph one side
  removed is removed; one both added is kept once), sections in timestamp order, one blank line between
  blocks. So appends made on two machines always merge, whatever order earlier merges put them in. When
  one side left the body alone, the other side's body is taken as it is. When both sides removed or edited
  something of the ancestor's, git's own line merge (`git merge-file`) decides; when it cannot, the file
  gets git's conflict markers and the merge is a conflict.

Only the standard library is imported: git starts this once per conflicting note, so start-up is the cost.
"""

from __future__ import annotations

import os
import re
import sys
from datetime import datetime

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


class _Section:
    """A `## <timestamp>` section (or the text before the first one): its heading and its paragraphs."""

    __slots__ = ("heading", "moment", "paragraphs")

    def __init__(self, heading: str, moment: float) -> None:
        self.heading = heading
        self.moment = moment
        self.paragraphs: list[str] = []


def _sections(body: str) -> dict[str, _Section]:
    """The body cut at its `## <timestamp>` headings (outside code), and each section into paragraphs
    (blocks between blank lines, a fenced block whole). A heading that occurs twice is one section."""
    preamble = _Section("", float("-inf"))
    sections = {"": preamble}
    current = preamble
    block: list[str] = []
    fence: str | None = None

    def close() -> None:
        text = "\n".join(block).strip("\n")
        if text.strip():
            current.paragraphs.append(text)
        block.clear()

    for line in body.split("\n"):
        code = _CODE_FENCE.match(line)
        if code:
            mark = code.group(1)
            if fence is None:
                fence = mark
            elif mark[0] == fence[0] and len(mark) >= len(fence) and not line.strip()[len(mark) :]:
                fence = None
        elif fence is None and (heading := _STAMP_HEADING.match(line)):
            moment = _stamp(heading.group(1))
            if moment is not None:
                close()
                key = line.rstrip()
                current = sections.setdefault(key, _Section(key, moment))
                continue
        if fence is None and not line.strip():
            close()
        else:
            block.append(line)
    close()
    return sections


def _counts(items: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for item in items:
        counts[item] = counts.get(item, 0) + 1
    return counts


def _removed(base: dict[str, _Section], side: dict[str, _Section]) -> bool:
    """True when `side` lost a paragraph the ancestor had: it edited or deleted, not only appended."""
    for key, section in base.items():
        have = _counts(side[key].paragraphs) if key in side else {}
        for paragraph, count in _counts(section.paragraphs).items():
            if have.get(paragraph, 0) < count:
                return True
    return False


def merge_appends(base: str, ours: str, theirs: str) -> str | None:
    """Both sides' sections and paragraphs merged, sections in timestamp order; None when both sides
    removed or edited something of the ancestor's (a real conflict, or git's line merge to decide).

    The merge is by content, not by position: each section (keyed by its heading) ends with the
    paragraphs of both sides, so two machines that merged each other's appends in different orders
    still agree on what a note holds."""
    b, o, t = _sections(base), _sections(ours), _sections(theirs)
    if _removed(b, o) and _removed(b, t):
        return None
    keys = list(dict.fromkeys([*o, *t]))
    merged: list[_Section] = []
    for key in keys:
        mine = o[key].paragraphs if key in o else []
        other = t[key].paragraphs if key in t else []
        before = _counts(b[key].paragraphs) if key in b else {}
        cm, co = _counts(mine), _counts(other)
        wanted: dict[str, int] = {}
        for paragraph in dict.fromkeys([*mine, *other]):
            cb, x, y = before.get(paragraph, 0), cm.get(paragraph, 0), co.get(paragraph, 0)
            wanted[paragraph] = y if x == cb else x if y == cb else max(x, y)
        section = _Section(key, (o.get(key) or t[key]).moment)
        for paragraph in [*mine, *other]:
            if wanted.get(paragraph, 0) > 0:
                section.paragraphs.append(paragraph)
                wanted[paragraph] -= 1
        in_both = key in o and key in t
        if section.paragraphs or key == "" or in_both or key not in b:
            merged.append(section)
    merged.sort(key=lambda s: (s.moment, s.heading))
    blocks = []
    for section in merged:
        parts = ([section.heading] if section.heading else []) + section.paragraphs
        if parts:
            blocks.append("\n\n".join(parts))
    return "\n\n".join(blocks) + "\n" if blocks else ""


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
    try:
        front = merge_frontmatter(bf, of, tf)
        if ob == tb or tb == bb:
            body = ob
        elif ob == bb:
            body = tb
        else:
            appended = merge_appends(bb, ob, tb)
            if appended is None:
                status, appended = _merge_file(bb, ob, tb, labels, marker)
                if status != 0:
                    raise _Conflict
            body = appended
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
        sys.stderr.write("usage: python -m amem.vault.merge BASE OURS THEIRS [MARKER-SIZE [PATH]]\n")
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
