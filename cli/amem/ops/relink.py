"""Text edits a move makes in a note, each on the bytes as written so that no other byte changes: the
`updated` line of the frontmatter, and the path of a Markdown link spelled again from the note's folder."""

from __future__ import annotations

import posixpath
import re

#: The top-level `updated` key of a frontmatter line, bare or quoted (`"updated":` is the same key).
_KEY = r"""(?:updated|"updated"|'updated')[ \t]*:"""
_UPDATED = re.compile(_KEY)
_UPDATED_LINE = re.compile(rf"({_KEY}[ \t]*)(.*?)([ \t]+#.*)?")
#: What a bare Markdown link destination cannot hold as itself; `%` is always written encoded, since a
#: note link's path is read with %XX decoded.
_BARE_ESCAPES = {" ": "%20", "(": "%28", ")": "%29", "<": "%3C", ">": "%3E", "\t": "%09"}


def _eol(line: str) -> str:
    return line[len(line.rstrip("\r\n")) :]


def stamp_updated(block: str, stamp: str, eol: str) -> str:
    """The frontmatter block (between its `---` lines, as written) with `updated` set to `stamp`: the last
    `updated:` line edited in place (its quotes, comment and line ending kept; the lines of a value
    written over several lines dropped), or a line added at the end in the line ending of the block's
    last line (`eol` when the block is empty). Every other line stays byte for byte."""
    lines = block.splitlines(keepends=True)
    positions = [i for i, line in enumerate(lines) if _UPDATED.match(line)]
    if not positions:
        ending = _eol(lines[-1]) if lines else eol
        return block + ("" if not lines or _eol(lines[-1]) else ending) + f"updated: {stamp}{ending}"
    at = positions[-1]
    line = lines[at]
    match = _UPDATED_LINE.fullmatch(line.rstrip("\r\n"))
    assert match is not None  # the pattern matches any line that starts like this
    key, value, comment = match.group(1), match.group(2), match.group(3) or ""
    if key.endswith(":"):
        key += " "
    quote = value[0] if len(value) > 1 and value[0] in "\"'" and value.endswith(value[0]) else ""
    end = at + 1
    if not value or value[0] in "|>":
        while end < len(lines) and lines[end][:1] in (" ", "\t", "-"):
            end += 1  # the rest of a value written over several lines
    lines[at:end] = [f"{key}{quote}{stamp}{quote}{comment}{_eol(line)}"]
    return "".join(lines)


def spell_markdown_path(written: str, meant: str, note_id: str, extensions: tuple[str, ...], pointed: bool) -> str:
    """How a Markdown link in note `note_id`, written `written` (as in the file, %XX and all), names the
    note `meant`: from the vault root when it was written so (a leading `/`), else relative to the note's
    folder; without the extension when it was written without one; encoded as it was (a bare
    destination always encodes what it cannot hold, `pointed` is the `<…>` form)."""
    lowered = written.lower()
    target = meant
    if not any(lowered.endswith(ext.lower()) for ext in extensions):
        ext = next((e for e in extensions if meant.lower().endswith(e.lower())), "")
        if ext and len(meant.rsplit("/", 1)[-1]) > len(ext):
            target = meant[: -len(ext)]
    if written.startswith("/"):
        path = "/" + target
    else:
        folder = note_id.rsplit("/", 1)[0] if "/" in note_id else ""
        path = posixpath.relpath("/" + target, "/" + folder)
    escapes = {"%": "%25"}
    if not pointed:
        escapes.update(_BARE_ESCAPES)
    elif "%20" in written:
        escapes[" "] = "%20"
    return "".join(escapes.get(char, char) for char in path)
