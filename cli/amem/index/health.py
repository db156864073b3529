"""What `amem check` asks of the index and of the vault's folders: unresolved and crowded links, case twins,
aliases, notes the index could not read, orphans, sizes; and the files beside the notes (attachments,
amem's temporaries), listed by the scan's folder rules."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, NamedTuple

from ..atomicfile import TEMP_SUFFIX
from ..notes.links import LinkResolver, link_key, normalise_target, resolve_stored
from .scan import VaultScan, Walker, is_utf8, shown_name
from .sql import select_in

if TYPE_CHECKING:
    from ..config import Config
    from .index import VaultIndex


class VaultFiles(NamedTuple):
    """The files of the vault's indexed folders that are not notes: attachments (`![[diagram.png]]` names
    one) and amem's temporary files, each by vault-relative path; and the files and folders whose name is
    not UTF-8, which every scan skips, as `shown_name` prints them."""

    attachments: list[str]
    temporaries: list[str]
    #: a folder's ends in `/`; its files are not listed
    not_utf8: tuple[str, ...] = ()


def vault_files(config: Config) -> VaultFiles:
    """List the vault's folders as a scan does (the same folders skipped), keeping what is not a note.
    No file is stat'ed: a listing costs about the number of entries."""
    walker = Walker(config, VaultScan())
    attachments: list[str] = []
    temporaries: list[str] = []
    not_utf8: list[str] = []
    stack = [""]
    while stack:
        rel = stack.pop()
        try:
            entries = os.scandir(walker.folder_path(rel))
        except OSError:
            continue
        with entries:
            for entry in entries:
                name = entry.name
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if walker.skips_folder(name):
                            continue
                        if is_utf8(name):
                            stack.append(f"{rel}{name}/")
                        else:
                            not_utf8.append(f"{rel}{name}/")
                    elif not is_utf8(name):
                        not_utf8.append(rel + name)
                    elif name.endswith(TEMP_SUFFIX):
                        temporaries.append(rel + name)
                    elif not name.lower().endswith(walker.extensions) and entry.is_file():
                        attachments.append(rel + name)
                except OSError:
                    continue  # gone during the listing
    return VaultFiles(sorted(attachments), sorted(temporaries), tuple(sorted(map(shown_name, not_utf8))))


def attachment_resolver(paths: list[str]) -> LinkResolver:
    """Resolves a link target to an attachment as Obsidian does a note (exact path, path suffix, base name
    for a bare name, case ignored), the name taken as written: `![[diagram.png]]` finds `assets/Diagram.png`."""
    return LinkResolver(paths, ())


def attachment_of(resolver: LinkResolver, target: str) -> str | None:
    """The attachment a stored target (see `stored_target`) names, or None."""
    return resolve_stored(resolver, target)


class BaseNames:
    """How many readable notes each base name could answer for: the link keys of the notes' last segments,
    counted under each key a link's last segment would be written as (with the extension or without).

    Every note of the tier that decides a target bears the name its last segment gives, with or without
    an extension, so a target can tie between notes only when its count is at least 2, and can resolve at
    all only when it is at least 1: only those targets need resolving again."""

    def __init__(self, name_keys: Iterable[str], extensions: tuple[str, ...]) -> None:
        notes = Counter(name_keys)
        self.counts: dict[str, int] = dict(notes)
        for suffix in sorted({link_key(ext) for ext in extensions} - {""}):
            cut = len(suffix)
            for key, count in notes.items():
                if key.endswith(suffix):
                    stem = key[:-cut]
                    self.counts[stem] = self.counts.get(stem, 0) + count

    def crowded(self) -> list[str]:
        """The keys (a link's `nkey`) that two notes or more answer for."""
        return sorted(key for key, count in self.counts.items() if count > 1)

    def naming(self, target: str) -> bool:
        """Whether any note bears the name a [[link]] target written so ends with."""
        return self.counts.get(link_key(normalise_target(target).rsplit("/", 1)[-1]), 0) > 0


class Health:
    """The index's answers for `amem check`, over the notes whose id starts with `prefix` ('' for all).
    Call `VaultIndex.refresh()` first."""

    def __init__(self, index: VaultIndex, prefix: str = "") -> None:
        self.conn = index.conn
        self.prefix = prefix
        # `id >= prefix AND id < prefix + max`: an index range, not a scan with LIKE (which would also
        # read `_` and `%` as patterns)
        self._range = (prefix, prefix + "\U0010ffff")

    def _in_prefix(self, column: str) -> str:
        # The whole vault: a scan of the table, not of the id index looking every row up (and the queries
        # order by `+id`, so that sorting the few rows found does not choose that index either).
        return f"{column} >= ? AND {column} < ?" if self.prefix else f"+{column} >= ? AND +{column} < ?"

    def notes(self) -> int:
        sql = f"SELECT count(*) FROM notes WHERE {self._in_prefix('id')}"
        return int(self.conn.execute(sql, self._range).fetchone()[0])

    def ids(self) -> list[str]:
        """Every readable note's id, in the whole vault: what links resolve among."""
        return [row[0] for row in self.conn.execute("SELECT id FROM notes WHERE problem IS NULL")]

    def ids_containing(self, text: str) -> list[str]:
        """The prefix's notes whose id holds `text` (a conflict copy's infix), in no order."""
        sql = f"SELECT id FROM notes WHERE instr(id, ?) > 0 AND {self._in_prefix('id')}"
        return [row[0] for row in self.conn.execute(sql, (text, *self._range))]

    def name_keys(self) -> list[str]:
        """The link key of every readable note's base name (`notes.name_key`), once per note."""
        # A scan of the table: the name_key index would look every row up again for its `problem`.
        return [row[0] for row in self.conn.execute("SELECT name_key FROM notes WHERE +problem IS NULL")]

    def unresolved(self) -> list[tuple[str, str, str, int | None]]:
        """(note id, stored target, its last segment's key, line) of each link of the prefix's notes that
        resolves to no note (the links table holds each target once per note)."""
        sql = (
            "SELECT n.id, l.target, l.nkey, l.line FROM links l JOIN notes n ON n.rowid = l.src "
            f"WHERE l.resolved IS NULL AND {self._in_prefix('n.id')}"
        )
        return list(self.conn.execute(sql, self._range))

    def resolved_targets(self, nkeys: list[str]) -> list[str]:
        """Each distinct stored target of the prefix's notes that resolves to a note and whose last
        segment's key is one of `nkeys`."""
        sql = (
            "SELECT DISTINCT l.target FROM links l JOIN notes n ON n.rowid = l.src "
            "WHERE l.nkey IN ({}) AND l.resolved IS NOT NULL AND n.id >= ? AND n.id < ?"
        )
        found: set[str] = set()
        for start in range(0, len(nkeys), 900):
            chunk = nkeys[start : start + 900]
            found.update(
                row[0] for row in self.conn.execute(sql.format(",".join("?" * len(chunk))), [*chunk, *self._range])
            )
        return sorted(found)

    def linking(self, targets: list[str]) -> Iterator[tuple[str, str, int | None]]:
        """(note id, stored target, line) of the links to `targets` from the prefix's notes."""
        sql = (
            "SELECT n.id, l.target, l.line FROM links l JOIN notes n ON n.rowid = l.src "
            "WHERE l.target IN ({}) AND n.id >= ? AND n.id < ?"
        )
        for start in range(0, len(targets), 900):
            chunk = targets[start : start + 900]
            yield from self.conn.execute(sql.format(",".join("?" * len(chunk))), [*chunk, *self._range])

    def case_twins(self) -> list[list[str]]:
        """Groups of ids equal but for case or Unicode form (the same link key), each sorted."""
        rows = self.conn.execute(
            "SELECT key, id FROM notes WHERE key IN (SELECT key FROM notes GROUP BY key HAVING count(*) > 1) "
            "ORDER BY key, id"
        )
        groups: dict[str, list[str]] = {}
        for key, note_id in rows:
            groups.setdefault(key, []).append(note_id)
        return list(groups.values())

    def aliases(self) -> list[tuple[str, str, str]]:
        """(note id, alias key, frontmatter JSON) of every alias of every readable note."""
        sql = (
            "SELECT n.id, a.key, n.frontmatter FROM note_aliases a CROSS JOIN notes n ON n.rowid = a.note "
            "WHERE n.problem IS NULL ORDER BY n.id"
        )
        return list(self.conn.execute(sql))

    def unreadable(self) -> list[tuple[str, str]]:
        """(note id, why) of the prefix's notes the index could not read."""
        sql = f"SELECT id, problem FROM notes WHERE problem IS NOT NULL AND {self._in_prefix('id')} ORDER BY id"
        return list(self.conn.execute(sql, self._range))

    def malformed(self) -> list[tuple[str, str]]:
        """The prefix's readable notes whose frontmatter block did not parse, with why (as the index read
        them: no note is opened for it)."""
        sql = f"SELECT id, warning FROM notes WHERE warning IS NOT NULL AND {self._in_prefix('id')} ORDER BY +id"
        return [(row[0], row[1]) for row in self.conn.execute(sql, self._range)]

    def orphans(self) -> list[str]:
        """The prefix's readable notes that no other note's link reaches and whose links reach no other note."""
        sql = (
            "SELECT n.id FROM notes n WHERE n.problem IS NULL AND "
            f"{self._in_prefix('n.id')} "
            "AND NOT EXISTS (SELECT 1 FROM links l WHERE l.src = n.rowid AND l.resolved IS NOT NULL "
            "AND l.resolved != n.id) "
            "AND NOT EXISTS (SELECT 1 FROM links l WHERE l.resolved = n.id AND l.src != n.rowid) ORDER BY +n.id"
        )
        return [row[0] for row in self.conn.execute(sql, self._range)]

    def larger_than(self, size: int) -> list[tuple[str, int]]:
        sql = f"SELECT id, size FROM notes WHERE size > ? AND {self._in_prefix('id')} ORDER BY +id"
        return list(self.conn.execute(sql, (size, *self._range)))

    def sizes(self, note_ids: list[str]) -> dict[str, int]:
        return dict(select_in(self.conn, "SELECT id, size FROM notes WHERE id IN ({})", note_ids))


class Attachments:
    """The vault's attachments as link targets, listed on first need: a read pays for the listing only when
    one of its links names no note."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self._resolver: LinkResolver | None = None

    def __call__(self, target: str) -> str | None:
        """The file a stored target names when it names no note, or None."""
        if self._resolver is None:
            self._resolver = attachment_resolver(vault_files(self.config).attachments)
        return attachment_of(self._resolver, target)
