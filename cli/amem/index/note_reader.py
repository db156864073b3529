"""Reading a note as the index keeps it (its row, tags, link targets and, for a cold build, its search
fields), in the refresh's process or in a worker process that reads ahead while the refresh writes SQLite.

The worker (`python -m amem.index.note_reader`) receives the notes to read on its stdin, all at once, and
writes what it read to its stdout, a chunk at a time: the pipe holds it back when it is ahead, so its
output never piles up. A worker that dies costs nothing but time: the refresh reads the notes it did not
deliver itself (`WorkerReads`).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import IO, TYPE_CHECKING, NamedTuple

from ..digest import sha1_hex
from ..notes.ids import may_read, open_regular
from ..notes.links import alias_keys, link_census, link_key, stored_target

if TYPE_CHECKING:
    import subprocess
    from array import array

    from ..notes.links import LinkCensus

#: Notes a worker sends at once: large enough that a pickle's overhead is small, small enough that
#: the refresh waits little for the first.
CHUNK = 100
#: The worker's output pipe is widened to this (Linux), so that it reads on while the refresh writes
#: a batch or reads notes of its own: about three chunks of genvault notes.
PIPE_BYTES = 1 << 20


def _widen(stream: IO[bytes]) -> None:
    """Make the pipe under `stream` hold up to PIPE_BYTES (where the system allows it)."""
    try:
        import fcntl
    except ImportError:  # not on this system: the pipe stays as it is
        return
    set_size = getattr(fcntl, "F_SETPIPE_SZ", None)
    if set_size is None:
        return
    with contextlib.suppress(OSError):
        fcntl.fcntl(stream.fileno(), set_size, PIPE_BYTES)


class NoteRow(NamedTuple):
    """A row of the notes table, in the order of its columns after rowid."""

    id: str
    folder: str
    key: str
    name_key: str
    rkey: str
    mtime_ns: int
    size: int
    digest: str | None
    problem: str | None
    warning: str | None
    title: str
    title_key: str
    tags: str
    created: str | None
    frontmatter: str
    body_at: int
    search: int


class ReadNote(NamedTuple):
    """A note as a refresh read it: its row, its tags and its link targets (none when unreadable)."""

    row: NoteRow
    tags: list[str]
    #: each distinct stored target: (target, how many times written, how many of those as ![[embeds]], the
    #: line it is first written on)
    targets: list[tuple[str, int, int, int]]
    aliases: list[str]  # link keys of its frontmatter `aliases`, how `read` finds a note by another name
    #: its search fields but the backlinks (head, headings, body) and its headings' keys (see
    #: `fts.headings_fields`), when asked for and readable
    search: tuple[str, str, str, str] | None = None


class Reading(NamedTuple):
    """What reading notes needs, as plain data that a worker process receives."""

    root: str  # the vault, absolute
    real_root: str  # the vault, its links resolved
    racy_before: int  # an mtime from here on may hide a change: the row keeps the digest
    extensions: tuple[str, ...]
    search: bool  # make the search fields too (a cold build keeps them for its second pass)


def read_note(how: Reading, note_id: str, stat: tuple[int, int]) -> ReadNote:
    """One note as the index keeps it: read (if amem may read it), parsed, its row made. `stat` is the
    (mtime, size) the scan found, kept when the note cannot be read."""
    data, text, problem, stat = _note_bytes(how, note_id, stat)
    if problem is not None:
        return ReadNote(_row(how, note_id, stat, data, problem, None, "", "{}", None, 0, []), [], [], [])
    from ..notes.parse import note_title, parse_note  # here: a refresh that changes nothing parses nothing
    from ..notes.tags import note_tags

    parsed = parse_note(text, note_id)  # YAML only beyond the simple subset
    fields, body = parsed.frontmatter, parsed.body
    title = note_title(fields, body, note_id)
    tags = note_tags(fields, body)
    value = fields.get("created")
    created = str(value) if isinstance(value, str | int | float) and not isinstance(value, bool) else None
    frontmatter = json.dumps(fields, ensure_ascii=False, default=str)
    body_at = len(data) - len(body.encode("utf-8"))
    warning = parsed.warnings[0] if parsed.warnings else None  # a block that did not parse: `check` says why
    row = _row(how, note_id, stat, data, None, warning, title, frontmatter, created, body_at, tags)
    # Each distinct target once: a note that names one note a million times costs one row.
    census = link_census(parsed.frontmatter_text, body, how.extensions, limit=0)
    # Lines from 1 in the file, the BOM aside: the frontmatter block starts on the second.
    body_line = text.count("\n", 0, len(text) - len(body)) + 1
    targets = counted_targets(census, note_id, (2, body_line))
    search = search_fields(note_id, title, body) if how.search else None
    return ReadNote(row, tags, targets, alias_keys(fields.get("aliases")), search)


def search_fields(note_id: str, title: str, body: str) -> tuple[str, str, str, str]:
    """A note's search fields but the backlinks: (head, headings, body), as `fts` stores them, and its
    headings' keys."""
    from ..notes.tokenize import field_text
    from . import fts

    headings, keys = fts.headings_fields(body)
    return fts.head_text(note_id, title), headings, field_text(body), keys


def _note_bytes(how: Reading, note_id: str, stat: tuple[int, int]) -> tuple[bytes, str, str | None, tuple[int, int]]:
    """(bytes, text, problem, (mtime, size) of exactly these bytes); a problem when it cannot be read."""
    path = os.path.join(how.root, note_id)
    data = b""
    try:
        if os.path.islink(path) and not may_read(path, how.real_root):
            raise PermissionError(13, "it leads outside the vault")
        with open_regular(path) as handle:
            data = handle.read()
            st = os.fstat(handle.fileno())
        stat = (st.st_mtime_ns, st.st_size)
        return data, data.decode("utf-8"), None, stat
    except OSError as exc:
        return b"", "", f"cannot read it ({exc.strerror})", stat
    except UnicodeDecodeError:
        return data, "", "it is not UTF-8 text", stat


def _row(
    how: Reading,
    note_id: str,
    stat: tuple[int, int],
    data: bytes,
    problem: str | None,
    warning: str | None,
    title: str,
    frontmatter: str,
    created: str | None,
    body_at: int,
    tags: list[str],
) -> NoteRow:
    from ..notes.tokenize import title_key

    mtime_ns, size = stat
    cut = note_id.rfind("/") + 1
    key = link_key(note_id)
    return NoteRow(
        id=note_id,
        folder=note_id[:cut],
        key=key,
        name_key=link_key(note_id[cut:]),
        rkey=key[::-1],
        mtime_ns=mtime_ns,
        size=size,
        digest=sha1_hex(data) if mtime_ns >= how.racy_before else None,
        problem=problem,
        warning=warning,
        title=title,
        title_key=title_key(title),
        tags=json.dumps(tags, ensure_ascii=False),
        created=created,
        frontmatter=frontmatter,
        body_at=body_at,
        search=0 if problem else 1,
    )


def counted_targets(census: LinkCensus, note_id: str, starts: tuple[int, int]) -> list[tuple[str, int, int, int]]:
    """Each distinct stored target of a note once, in the order first written, with how many times it is
    written, how many of those are embeds and the line of the first (`starts`: the file's lines where the
    frontmatter block and the body start): a note that names one note a million times costs one row."""
    counted: dict[str, list[int]] = {}
    for link, count, line in zip(census.distinct, census.counts, census.lines, strict=True):
        target = stored_target(link, note_id)
        if target:
            start = starts[0] if link.kind == "frontmatter" else starts[1]
            tally = counted.setdefault(target, [0, 0, start + line])  # the first written is the earliest
            tally[0] += count
            tally[1] += count if link.embed else 0
    return [(target, count, embeds, line) for target, (count, embeds, line) in counted.items()]


# --- the worker --------------------------------------------------------------------------------------


class WorkerReads:
    """The notes of a cold build, read ahead by a worker process in the order given; `take` hands out
    the next ones. Should the worker die or send anything but what was asked, the notes it did not
    deliver are read here, and the build goes on as it would have without it."""

    def __init__(self, how: Reading, notes: Iterable[tuple[str, tuple[int, int]]]) -> None:
        import pickle  # here: only a big cold build starts a worker
        import subprocess

        self.how = how
        self._ahead: list[ReadNote] = []
        self._proc: subprocess.Popen[bytes] | None = None
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "amem.index.note_reader"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
            assert self._proc.stdin is not None and self._proc.stdout is not None
            _widen(self._proc.stdout)
            # All at once, then closed: the worker reads every request before it writes a result, so
            # neither side can wait on the other. Packed (the ids in one string, the stats in an array):
            # a list of tuples would cost the worker some 180 bytes a note.
            pickle.dump((how, *pack(notes)), self._proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
            self._proc.stdin.close()
        except OSError:
            self.close()

    def take(self, notes: Sequence[tuple[str, tuple[int, int]]]) -> list[ReadNote]:
        """These notes read, in this order (the next ones of those given at the start)."""
        found: list[ReadNote] = []
        for note_id, stat in notes:
            if not self._ahead and self._proc is not None:
                self._ahead = self._receive()
                self._ahead.reverse()
            note = self._ahead.pop() if self._ahead else None
            if note is None or note.row.id != note_id:
                self.close()  # out of step or gone: read the rest here
                note = read_note(self.how, note_id, stat)
            found.append(note)
        return found

    def ready(self) -> bool:
        """Whether notes the worker read are at hand without waiting (or it is gone: nothing to wait
        for). A hint, no promise: a chunk may be half written."""
        if self._ahead or self._proc is None:
            return True
        import select

        assert self._proc.stdout is not None
        try:
            return bool(select.select([self._proc.stdout], [], [], 0)[0])
        except (OSError, ValueError):
            return True

    def _receive(self) -> list[ReadNote]:
        import pickle

        assert self._proc is not None and self._proc.stdout is not None
        try:
            chunk = pickle.load(self._proc.stdout)
        except Exception:  # EOF or a torn pickle: the worker died
            return []
        return chunk if isinstance(chunk, list) else []

    def close(self) -> None:
        proc, self._proc = self._proc, None
        self._ahead = []
        if proc is None:
            return
        if proc.poll() is None:
            proc.kill()
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):  # what is left unsent goes nowhere
                    stream.close()
        proc.wait()


def pack(notes: Iterable[tuple[str, tuple[int, int]]]) -> tuple[bytes, array[int]]:
    """Notes and their (mtime, size) as the worker receives them: the ids NUL-separated (no file name
    holds a NUL), and each note's mtime and size in one array."""
    from array import array

    ids: list[str] = []
    stats = array("q")
    for note_id, (mtime_ns, size) in notes:
        ids.append(note_id)
        stats.append(mtime_ns)
        stats.append(size)
    return "\0".join(ids).encode("utf-8", "surrogateescape"), stats


def unpacked(ids: bytes, stats: array[int]) -> Iterator[list[tuple[str, tuple[int, int]]]]:
    """The notes `pack` packed, CHUNK at a time."""
    position = 0
    count = len(stats) // 2
    for first in range(0, count, CHUNK):
        chunk = []
        for i in range(first, min(first + CHUNK, count)):
            end = ids.find(b"\0", position)
            end = len(ids) if end < 0 else end
            chunk.append((ids[position:end].decode("utf-8", "surrogateescape"), (stats[2 * i], stats[2 * i + 1])))
            position = end + 1
        yield chunk


def _serve(source: IO[bytes], sink: IO[bytes]) -> None:
    import pickle

    how, ids, stats = pickle.load(source)
    for chunk in unpacked(ids, stats):
        pickle.dump([read_note(how, note_id, stat) for note_id, stat in chunk], sink, protocol=pickle.HIGHEST_PROTOCOL)
        sink.flush()


if __name__ == "__main__":
    # Through the module's own name, so that what it sends unpickles as the refresh's own classes.
    import contextlib

    from amem.index.note_reader import _serve as serve

    # The refresh went, or stopped wanting more: nothing to say.
    with contextlib.suppress(BrokenPipeError, EOFError, KeyboardInterrupt):
        serve(sys.stdin.buffer, sys.stdout.buffer)
    sys.exit(0)
