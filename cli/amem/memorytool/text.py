"""The memory tool's results as the `anthropic` SDK's local-filesystem tool words them: sizes, numbered
lines, the snippet of an edit, and the lines an insert works on."""

from __future__ import annotations

from collections.abc import Sequence

#: The most lines a file the tool shows may have, and so the width of its line numbers.
MAX_LINES = 999_999
NUMBER_WIDTH = len(str(MAX_LINES))


def size_text(size: int) -> str:
    """A size as `ls -h` writes it: 0B, 512B, 4.0K, 1.5M."""
    if size == 0:
        return "0B"
    units = ["B", "K", "M", "G"]
    power = min((size.bit_length() - 1) // 10, len(units) - 1)
    value = size / (1024**power)
    return f"{int(value)}{units[power]}" if value == int(value) else f"{value:.1f}{units[power]}"


def numbered(lines: Sequence[str], first: int) -> str:
    """`lines` under their numbers, the first being `first`, each number right-aligned and a tab after it."""
    return "\n".join(f"{str(first + i).rjust(NUMBER_WIDTH)}\t{line}" for i, line in enumerate(lines))


def file_view(shown: str, content: str, view_range: Sequence[int] | None) -> str:
    """A file's text with line numbers, all of it or the lines `view_range` = [first, last] names (-1 for
    the end); the file's lines are split at LF, so a final newline shows as an empty last line."""
    lines = content.split("\n")
    first = 1
    if view_range is not None and len(view_range) == 2:
        start = max(1, view_range[0]) - 1
        end = len(lines) if view_range[1] == -1 else view_range[1]
        lines, first = lines[start:end], start + 1
    return f"Here's the content of {shown} with line numbers:\n" + numbered(lines, first)


def listing(shown: str, folder_size: int, entries: Sequence[tuple[int, str]]) -> str:
    """A folder's listing: its own size and path, then each entry's size and path below it."""
    base = shown.rstrip("/") or shown
    header = f"Here're the files and directories up to 2 levels deep in {shown}, excluding hidden items:"
    rows = [f"{size_text(folder_size)}\t{shown}", *(f"{size_text(size)}\t{base}/{rel}" for size, rel in entries)]
    return header + "\n" + "\n".join(rows)


def occurrence_lines(content: str, old: str) -> list[int]:
    """The line (from 1) where each occurrence of `old` starts, overlapping ones included."""
    found: list[int] = []
    at = content.find(old)
    while at != -1:
        found.append(content.count("\n", 0, at) + 1)
        at = content.find(old, at + 1)
    return found


def edit_snippet(new_content: str, changed_line: int) -> str:
    """The lines around the edited one (its index from 0), two before and two after, numbered."""
    lines = new_content.split("\n")
    start, end = max(0, changed_line - 2), min(len(lines), changed_line + 3)
    heading = "The memory file has been edited. Here is the snippet showing the change (with line numbers):"
    return heading + "\n" + numbered(lines[start:end], start + 1)


def lines_of(content: str) -> list[str]:
    """The lines an insert counts: split at LF (a CR stays in its line), with no empty line after a final
    newline."""
    lines = content.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines
