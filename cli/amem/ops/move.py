"""Moving a note while every [[link]] that pointed at it is rewritten to point at its new place, with a
journal that lets an interrupted move be finished: `move_note` is what `amem move` and `wiki_move` call.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..digest import sha1_hex
from ..errors import Conflict, GitError, InvalidId, NotFound, UsageError
from ..notes.ids import NoteRef, read_regular, resolve_note
from ..notes.links import (
    Link,
    LinkResolver,
    frontmatter_spans,
    link_key,
    link_spans,
    markdown_path,
    normalise_target,
    resolution_keys,
)
from ..notes.parse import parse_note, version_of
from ..output import quote
from ..report import Reporter
from ..store.write import check_version, make_parents, note_lock, remove_folders, write_failure
from ..timefmt import iso, now
from .delete import check_current, lock_key, read_existing
from .relink import spell_markdown_path, stamp_updated
from .write import save_note

#: Characters a link target cannot hold: they end it or start its heading, block or alias part.
LINK_SYNTAX = "[]|#"
#: How many notes a move rewrites at once.
REWRITE_THREADS = 16

if TYPE_CHECKING:
    from ..config import Config
    from ..index.index import VaultIndex
    from ..results import MoveResult


# --- link rewriting ----------------------------------------------------------------------------------------


class _Swapped(LinkResolver):
    """`base` as if note `gone` were not there and note `new` were: the vault on the other side of a move,
    answered through the resolver's lookups without copying the base."""

    def __init__(self, base: LinkResolver, gone: str, new: str) -> None:
        super().__init__((new,), base.extensions)
        self.base = base
        self.gone = gone

    def find_exact(self, keys: list[str]) -> list[str]:
        return [i for i in self.base.find_exact(keys) if i != self.gone] + super().find_exact(keys)

    def find_suffix(self, keys: list[str]) -> list[str]:
        return [i for i in self.base.find_suffix(keys) if i != self.gone] + super().find_suffix(keys)

    def find_basename(self, keys: list[str]) -> list[str]:
        return [i for i in self.base.find_basename(keys) if i != self.gone] + super().find_basename(keys)


def _names(target: str, extensions: tuple[str, ...]) -> set[str]:
    """The last segment's link key, with and without an extension: a link can name a note only when
    these meet the note's own."""
    name = link_key(normalise_target(target).rsplit("/", 1)[-1])
    return {name, *(name[: -len(e)] for e in map(link_key, extensions) if name.endswith(e) and name != e)}


def _namesakes(index: VaultIndex, old: str, new: str, extensions: tuple[str, ...]) -> list[str]:
    """The notes the index holds that share a name with `old` or `new`: the only ones a link that can
    name either resolves among, so the only ones a move's resolvers need."""
    names = _names(old, extensions) | _names(new, extensions)
    keys = sorted({*names, *(n + link_key(e) for n in names for e in extensions)})
    return sorted(set(index.resolver().find_basename(keys)))


def _path_targets(index: VaultIndex, ref: NoteRef, old: str, new: str) -> set[str]:
    """The notes the moved note's Markdown links name, read from its old folder and from its new one:
    the resolvers must know them, since those links are spelled again from the new folder."""
    try:
        text = Path(ref.path).read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return set()
    if "](" not in text:
        return set()
    extensions = index.config.extensions
    resolver = index.resolver()
    found: set[str] = set()
    for span in link_spans(parse_note(text).body, extensions):
        if span.link.kind != "markdown":
            continue
        for folder_of in (old, new):
            path = markdown_path(folder_of, span.link.target)
            if path:
                found.update(resolver.ranked_path(path))
    return found


class _Move:
    """What a link means before and after moving `old` to `new`."""

    def __init__(self, before: LinkResolver, after: LinkResolver, old: str, new: str) -> None:
        self.before = before
        self.after = after
        self.old = old
        self.new = new
        self.new_keys = resolution_keys(new, after.extensions)
        self.names = _names(old, after.extensions) | _names(new, after.extensions)

    def retarget(self, written: str) -> str | None:
        """The new text for a link target written as `written`, or None when it is to stay as it is.

        A link that resolved to `old` must resolve to `new`, and by a path that names `new` (not merely
        through the base-name fallback with a folder that is no longer right); one that resolved to
        another note must still resolve to it (the moved note could take it over); an unresolved one
        stays as it is."""
        if self.names.isdisjoint(_names(written, self.after.extensions)):
            return None  # it can name neither the old place nor the new one
        was = self.before.resolve(written)
        if was is None:
            return None
        if was != self.old:
            return None if self.after.resolve(written) == was else self._spell(written, was)
        if self.after.resolve(written) == self.new and link_key(normalise_target(written)) in self.new_keys:
            return None
        return self._spell(written, self.new)

    def _spell(self, written: str, meant: str) -> str:
        """`meant` written in the style of `written`: as many path segments (a base name stays a base name)
        when that resolves uniquely, else the fewest segments that do, else the whole path; with the
        extension if `written` had one; with `\\` separators if `written` used them."""
        path = normalise_target(written)
        extensions = self.after.extensions
        with_extension = any(path.lower().endswith(ext.lower()) for ext in extensions)
        parts = meant.split("/")
        if not with_extension:
            ext = next((e for e in extensions if parts[-1].lower().endswith(e.lower())), "")
            if ext and len(parts[-1]) > len(ext):
                parts[-1] = parts[-1][: -len(ext)]
        style = min(path.count("/") + 1, len(parts))
        tried = [style, *(n for n in range(1, len(parts) + 1) if n != style)]
        separator = "\\" if "\\" in written else "/"
        for count in tried:
            candidate = "/".join(parts[-count:])
            if self.after.ranked(candidate) == [meant]:
                return candidate.replace("/", separator)
        return "/".join(parts).replace("/", separator)  # the whole path: the exact tier, spelled exactly

    def retarget_path(self, written: str, link: Link, note_before: str, note_after: str, pointed: bool) -> str | None:
        """The new text for a Markdown link's path written as `written` in a note that was `note_before`
        and is `note_after` (they differ for the moved note: its relative links start from a new
        folder), or None when it is to stay: it must still name the note it named, OLD meaning NEW."""
        if note_before == note_after and self.names.isdisjoint(_names(link.target, self.after.extensions)):
            return None  # it can name neither the old place nor the new one, from a folder that stays
        was_path = markdown_path(note_before, link.target)
        was = self.before.ranked_path(was_path)[:1] if was_path else []
        if not was:
            return None
        meant = self.new if was[0] == self.old else was[0]
        now_path = markdown_path(note_after, link.target)
        if now_path and self.after.ranked_path(now_path)[:1] == [meant]:
            return None
        return spell_markdown_path(written, meant, note_after, self.after.extensions, pointed)

    def rewrite_body(
        self, body: str, note_before: str = "", note_after: str = "", frontmatter: bool = False
    ) -> tuple[str, int]:
        """The body (or with `frontmatter`, the frontmatter block) with every link that needs it
        retargeted, and how many were; every other byte stays."""
        pieces: list[str] = []
        at = 0
        count = 0
        spans = frontmatter_spans(body) if frontmatter else link_spans(body, self.after.extensions)
        for span in spans:
            written = body[span.target_start : span.target_end]
            if not span.link.target:
                continue
            if span.link.kind == "markdown":
                pointed = body[span.target_start - 1 : span.target_start] == "<"
                replacement = self.retarget_path(written, span.link, note_before, note_after, pointed)
            else:
                replacement = self.retarget(written)
            if replacement is None:
                continue
            pieces += [body[at : span.target_start], replacement]
            at = span.target_end
            count += 1
        if not count:
            return body, 0
        pieces.append(body[at:])
        return "".join(pieces), count


def rewrite_note_text(
    text: str, move: _Move, stamp: str | None, tz: Any, note_before: str = "", note_after: str = ""
) -> tuple[str, int]:
    """A note's text with its links (in the body and in frontmatter values) retargeted for `move` and
    `updated` stamped (unless `stamp` is None); unchanged (and 0) when no link needs it. Only the link
    targets and the `updated` line change: dates, comments, flow lists, a BOM and each line's ending stay
    as written (a note with no frontmatter gets a block holding `updated`, in the line ending of its first
    line)."""
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    raw = text[len(bom) :]
    note = parse_note(raw)  # a block that does not parse leaves the whole text as the body
    block, body = note.frontmatter_text, note.body
    body, count = move.rewrite_body(body, note_before, note_after)
    if block is not None:
        block, in_block = move.rewrite_body(block, frontmatter=True)
        count += in_block
    if not count:
        return text, 0
    first_eol = "\r\n" if raw.split("\n", 1)[0].endswith("\r") else "\n"
    if block is None:
        malformed = bool(note.warnings) or stamp is None
        head = "" if malformed else f"---{first_eol}updated: {stamp}{first_eol}---{first_eol}"
        return bom + head + body, count
    opening = raw[: raw.index("\n") + 1]
    closing = raw[len(opening) + len(note.frontmatter_text or "") : len(raw) - len(note.body)]
    stamped = block if stamp is None else stamp_updated(block, stamp, first_eol)
    return bom + opening + stamped + closing + body, count


# --- the move journal --------------------------------------------------------------------------------------


class _Journal:
    """What a move has done so far, kept in the cache (never in the vault) so that running the same move
    again after a crash finishes it. One JSON object a line: first the plan, then one line per note
    about to be rewritten with its version before and after, written under that note's lock before the
    file is replaced; so a note whose version is the `after` of its line is done."""

    def __init__(self, config: Config, old: str, new: str) -> None:
        name = sha1_hex(f"{old}\0{new}".encode("utf-8", "surrogateescape"))
        self.path: Path = config.cache_dir / "moves" / f"{name}.jsonl"
        self.old = old
        self.new = new
        self.plan: dict[str, Any] | None = None
        self.steps: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def load(self) -> bool:
        """Read a journal left by an earlier run of this move; False when there is none (or it is unusable)."""
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            return False
        records = []
        for line in lines:
            try:
                records.append(json.loads(line))
            except ValueError:
                break  # a line cut short by a crash: what follows it was never written
        if not records or records[0].get("from") != self.old or records[0].get("to") != self.new:
            return False
        self.plan = records[0]
        for record in records[1:]:
            if isinstance(record, dict) and isinstance(record.get("note"), str):
                self.steps[record["note"]] = record
        return True

    def start(self, version: str, sources: list[str]) -> None:
        self.plan = {"from": self.old, "to": self.new, "version": version, "sources": sources}
        self.steps = {}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(self.plan, ensure_ascii=False) + "\n")

    def record(self, note_id: str, before: str, after: str, links: int) -> None:
        step = {"note": note_id, "before": before, "after": after, "links": links}
        with self._lock:
            self.steps[note_id] = step
            with open(self.path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(step, ensure_ascii=False) + "\n")

    def finish(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


# --- move ----------------------------------------------------------------------------------------------


def _same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Whether `b` is the moved `a`: the same file (a hard link), or for a symlinked note, a symlink that
    leads to the same place."""
    try:
        if not os.path.islink(a):
            return os.path.samefile(a, b)
        if os.path.islink(b):
            return os.lstat(a) == os.lstat(b) or os.path.realpath(a) == os.path.realpath(b)
        return False
    except OSError:
        return False


def _ordered_locks(config: Config, refs: Iterable[NoteRef]) -> contextlib.ExitStack:
    """The write locks of several notes, always taken in the same order, so two moves cannot deadlock."""
    stack = contextlib.ExitStack()
    for key in sorted({lock_key(ref) for ref in refs}):
        stack.enter_context(note_lock(config, key))
    return stack


def _link_or_rename(old: NoteRef, new: NoteRef) -> None:
    try:
        # A hard link never replaces a file that appeared at `new` meanwhile, as rename would.
        os.link(old.path, new.path, follow_symlinks=False)
    except OSError as exc:
        if isinstance(exc, FileExistsError) or exc.errno not in (
            errno.EPERM,
            errno.EXDEV,
            errno.ENOTSUP,
            errno.EMLINK,
            errno.ENOSYS,
        ):
            raise
        os.rename(old.path, new.path)  # a file system without hard links; `new` was checked above


def _relink(old: NoteRef, new: NoteRef) -> None:
    """Make `new` a symlink that leads where the symlinked note `old` leads: a relative target is
    written again from `new`'s folder, an absolute one is kept. Refused, with nothing left at `new`, when
    the new link would not reach the same file."""
    target = os.readlink(old.path)
    if not os.path.isabs(target):
        reached = os.path.normpath(os.path.join(os.path.realpath(os.path.dirname(old.path)), target))
        target = os.path.relpath(reached, os.path.realpath(os.path.dirname(new.path)))
    os.symlink(target, new.path)  # never replaces a file that appeared at `new` meanwhile
    if os.path.realpath(new.path) != os.path.realpath(old.path):
        os.unlink(new.path)
        raise Conflict(
            f"cannot move note {quote(old.id)} to {quote(new.id)}: it is a symlink that would no longer "
            "lead to its target from there; move the file it leads to instead"
        )


def _rename(
    config: Config, old: NoteRef, new: NoteRef, base_version: str | None, journal: _Journal, sources: list[str]
) -> str:
    """Move the file from `old` to `new` under both notes' locks; never replaces a note at `new`."""
    with _ordered_locks(config, (old, new)):
        data = read_existing(old, "move")
        version = version_of(data)
        check_current(old, "move", base_version, version)
        if os.path.lexists(new.path):
            raise Conflict(f"cannot move note {quote(old.id)} to {quote(new.id)}: a note already exists there")
        journal.start(version, sources)
        created: list[str] = []
        try:
            make_parents(os.path.dirname(new.path), created)
            try:
                if os.path.islink(old.path):
                    _relink(old, new)
                else:
                    _link_or_rename(old, new)
            except FileExistsError:
                raise Conflict(
                    f"cannot move note {quote(old.id)} to {quote(new.id)}: a note already exists there"
                ) from None
            with contextlib.suppress(FileNotFoundError):
                os.unlink(old.path)
        except OSError as exc:
            remove_folders(created)
            journal.finish()
            raise write_failure(new.id, exc, "move") from None
        except BaseException:
            remove_folders(created)
            journal.finish()
            raise
    from ..index.index import remember_written

    remember_written(config, new.id, version)
    return version


def _sources(index: VaultIndex, before: LinkResolver, old: str, new: str) -> list[str]:
    """The notes whose links the move can change: those linking to `old`, and those linking to a note that
    `new` could take their links from (one with the same base name), all found through the backlinks."""
    found = set(index.backlinks(old))
    name = new.rsplit("/", 1)[-1]
    stem = next((name[: -len(e)] for e in before.extensions if name.lower().endswith(e.lower())), name)
    for rival in set(before.find_basename([link_key(n) for n in [stem, *(stem + e for e in before.extensions)]])):
        if rival != old:
            found.update(index.backlinks(rival))
    found.discard(old)
    found.discard(new)
    return sorted(found)


def move_note(
    config: Config,
    old_raw: str,
    new_raw: str,
    base_version: str | None = None,
    reporter: Reporter | None = None,
    *,
    commit: bool = False,
    after: bool = False,
    unstamped: Callable[[str], bool] | None = None,
) -> MoveResult:
    """`amem move`: rename note OLD to NEW and rewrite every link in the vault that resolved to OLD so that it
    resolves to NEW (and any link NEW would take over so that it keeps its note), each rewrite through the
    locked write path. Returns {id: NEW, from: OLD, version, rewritten: [{id, links}], commit}.

    Interrupted at any point, the same call finishes the job: a journal in the cache says what was planned
    and done. With `after` (a rename made by hand, or a journal lost), OLD must be gone and NEW there, and
    the vault's links are rewritten as they would have resolved with OLD in NEW's place; without it and
    without a journal, a missing OLD is not found and nothing is touched, so a typo never rewrites links.
    A note for which `unstamped(id)` is true has its links rewritten and no `updated` stamped (the memory
    tool's files hold only what the model wrote)."""
    reporter = reporter or Reporter()
    old = resolve_note(config, old_raw)
    new = resolve_note(config, new_raw)
    check_version(base_version)
    _check_move_ids(old, new)
    journal = _Journal(config, old.id, new.id)
    move = _plan_move(config, old, new, journal, base_version, after)
    assert journal.plan is not None
    written: dict[str, bytes] = {}
    from concurrent.futures import ThreadPoolExecutor  # here: only a move needs it

    notes = [*journal.plan.get("sources", []), new.id]
    # Notes are rewritten side by side: each waits mostly on its own flush to disk.
    with ThreadPoolExecutor(max_workers=REWRITE_THREADS) as pool:
        counts = list(
            pool.map(
                lambda note_id: _rewrite_one(
                    config, journal, move, note_id, written, stamped=not (unstamped and unstamped(note_id))
                ),
                notes,
            )
        )
    rewritten = {note_id: count for note_id, count in zip(notes, counts, strict=True) if count}

    if not _indexed(config, new.id):
        reporter.warn(
            f"note {quote(new.id)} is now in a folder that scans skip (excludeDirs or a hidden folder): "
            "search does not find it and amem no longer resolves links to it"
        )
    sha = _commit_move(config, old, new, rewritten, written, reporter) if commit or config.git_auto_commit else None
    journal.finish()
    try:
        version = version_of(Path(new.path).read_bytes())
    except OSError:
        version = version_of(written.get(new.id, b""))
    return {
        "id": new.id,
        "from": old.id,
        "version": version,
        "rewritten": [{"id": i, "links": n} for i, n in sorted(rewritten.items())],
        "commit": sha,
    }


def _check_move_ids(old: NoteRef, new: NoteRef) -> None:
    if old.id == new.id:
        raise UsageError(f"cannot move note {quote(old.id)}: the new id is the same as the old one")
    unlinkable = sorted(set(new.id) & set(LINK_SYNTAX))
    if unlinkable:
        raise InvalidId(
            f"cannot move note {quote(old.id)} to {quote(new.id)}: a [[link]] cannot name a note "
            f"whose id holds {' '.join(unlinkable)}"
        )


def _plan_move(
    config: Config, old: NoteRef, new: NoteRef, journal: _Journal, base_version: str | None, after: bool
) -> _Move:
    """Rename the file (or find it renamed: by an interrupted run, or by hand with `after`), start or
    resume the journal, and return what every link means before and after the move."""
    from ..index.index import VaultIndex

    resumed = journal.load() and journal.plan is not None
    index = VaultIndex(config)
    try:
        index.refresh()
        old_there, new_there = os.path.lexists(old.path), os.path.lexists(new.path)
        if old_there and new_there and resumed and _same_file(old.path, new.path):
            with _ordered_locks(config, (old, new)):
                os.unlink(old.path)  # killed between linking NEW and unlinking OLD
            old_there = False
            index.refresh()
        namesakes = _namesakes(index, old.id, new.id, config.extensions)
        namesakes = sorted({*namesakes, *_path_targets(index, old if old_there else new, old.id, new.id)})
        if old_there:
            if after:
                raise Conflict(
                    f"cannot record a move of note {quote(old.id)} to {quote(new.id)}: {quote(old.id)} still "
                    "exists (--after records a rename already made; without it, move renames the note)"
                )
            return _start_rename(config, index, namesakes, old, new, journal, base_version, new_there)
        if new_there and (after or resumed):
            return _finish_rename(config, index, namesakes, old, new, journal, base_version, resumed)
        if new_there:
            raise NotFound(
                f"cannot move note {quote(old.id)}: no such note (to record a rename made by hand, "
                f"run amem move --after {quote(old.id)} {quote(new.id)})"
            )
        raise NotFound(f"cannot move note {quote(old.id)}: no such note")
    finally:
        index.close()


def _start_rename(
    config: Config,
    index: VaultIndex,
    namesakes: list[str],
    old: NoteRef,
    new: NoteRef,
    journal: _Journal,
    base_version: str | None,
    new_there: bool,
) -> _Move:
    if new_there:
        raise Conflict(f"cannot move note {quote(old.id)} to {quote(new.id)}: a note already exists there")
    from .names import refuse_case_twin  # here: only a move that will happen lists NEW's folders

    refuse_case_twin(config, new, f"cannot move note {quote(old.id)} to {quote(new.id)}", besides=old.id)
    before = LinkResolver(namesakes, config.extensions)
    sources = _sources(index, before, old.id, new.id)
    if old.id not in namesakes:
        # The index holds no links to a note it does not hold (in a folder scans skip): any note may name it.
        before.add(old.id)
        sources = sorted(set(index.ids()) - {old.id, new.id})
    afterwards = _Swapped(before, old.id, new.id)
    _rename(config, old, new, base_version, journal, sources)
    return _Move(before, afterwards, old.id, new.id)


def _finish_rename(
    config: Config,
    index: VaultIndex,
    namesakes: list[str],
    old: NoteRef,
    new: NoteRef,
    journal: _Journal,
    base_version: str | None,
    resumed: bool,
) -> _Move:
    """The file is already at NEW: the vault as it is now is the vault after the move."""
    afterwards = LinkResolver(namesakes, config.extensions)
    if new.id not in namesakes:
        afterwards.add(new.id)
    before = _Swapped(afterwards, new.id, old.id)
    if resumed and journal.plan is not None:
        check_current(old, "move", base_version, str(journal.plan.get("version")))
    else:
        # No journal (lost, or the file was renamed by hand): every note may hold such a link.
        moved = version_of(read_existing(new, "move"))
        check_current(new, "move", base_version, moved)
        journal.start(moved, [i for i in index.ids() if i != new.id])
    return _Move(before, afterwards, old.id, new.id)


def _commit_move(
    config: Config,
    old: NoteRef,
    new: NoteRef,
    rewritten: dict[str, int],
    written: dict[str, bytes],
    reporter: Reporter,
) -> str | None:
    from ..gitvault.git import commit_notes

    vault = Path(config.vault_root)
    paths: list[tuple[Path | str, bytes | None]] = [(Path(old.path), None)]
    paths += ((_note_path(vault, i), written.get(i)) for i in [new.id, *sorted(rewritten)])
    try:
        outcome = commit_notes(config, list(dict.fromkeys(paths)), f"amem: move {old.id} to {new.id}")
    except GitError as exc:
        raise GitError(
            f"moved note {quote(old.id)} to {quote(new.id)} but did not commit it: {exc.message}",
            moved={"id": new.id, "from": old.id},
        ) from None
    for message in outcome.warnings:
        reporter.warn(message)
    return outcome.hash


def _indexed(config: Config, note_id: str) -> bool:
    """Whether scans index a note at `note_id` (its folders are neither skipped nor excluded)."""
    from ..index.scan import ALWAYS_SKIPPED

    for folder in note_id.split("/")[:-1]:
        if folder in ALWAYS_SKIPPED or folder in config.exclude_dirs:
            return False
        if folder.startswith(".") and not config.index_hidden_dirs:
            return False
    return True


def _note_path(vault: Path, note_id: str) -> Path:
    return vault.joinpath(*note_id.split("/"))


def _rewrite_one(
    config: Config, journal: _Journal, move: _Move, note_id: str, written: dict[str, bytes], *, stamped: bool = True
) -> int:
    """Rewrite one note's links for `move` through the write path; the number of links it has rewritten,
    in this run or (as its journal line shows) an earlier one."""
    try:
        ref = resolve_note(config, note_id)  # the same path, and so the same lock, as any other write
    except InvalidId:
        return 0  # a file amem refuses to write (a name it does not accept as an id)
    step = journal.steps.get(note_id)
    try:
        current = read_regular(ref.path)
    except OSError:
        return 0  # gone since the index saw it: no links left to rewrite
    if step is not None and version_of(current) == step.get("after"):
        return int(step.get("links", 0))  # done by the run that was interrupted
    tz = config.tz

    before_id = move.old if note_id == move.new else note_id

    def rewrite(data: bytes) -> tuple[str, int]:
        if b"[[" not in data and b"](" not in data:
            return "", 0
        try:
            stamp = iso(now(tz)) if stamped else None
            return rewrite_note_text(data.decode("utf-8"), move, stamp, tz, before_id, note_id)
        except UnicodeDecodeError:
            return "", 0

    # Worked out before taking the lock, so that notes with nothing to change are never locked; used
    # under the lock when the note is still the same, else worked out again from what it is now.
    planned = rewrite(current)
    if not planned[1]:
        return 0
    counted = [0]

    def transform(old: bytes | None) -> bytes:
        if old is None:
            raise _Nothing()
        new_text, count = planned if old == current else rewrite(old)
        if not count:
            raise _Nothing()
        data = new_text.encode("utf-8")
        journal.record(note_id, version_of(old), version_of(data), count)
        counted[0] = count
        written[note_id] = data
        return data

    try:
        save_note(config, ref, transform)
    except _Nothing:
        return 0
    return counted[0]


class _Nothing(Exception):
    """Raised from a rewrite's transform when the note has no link to change: nothing is written."""
