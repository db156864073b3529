"""Keyword search over the vault: a tokenizer that reads Chinese, Japanese and Korean, an inverted index
kept in the vault index's database, and BM25 ranking with title weighting, phrase and link-graph boosts.

Storage (tables in the index database, updated inside its refresh transaction):

- `search_terms`: one row per term with its postings as two packed arrays — note rowids, ascending, and
  per note the term's counts in the body, the title and the id (see `_pack`). One row per term keeps a
  warm query to a handful of reads, and a refresh that changes one note rewrites only that note's terms.
- `search_docs`: per note, the ids of its terms (to take it out again), its body as the phrase check
  reads it and its folded title (for `--exact-title`).
- `search_meta` 'lens': body lengths by note rowid, plus one (0: no such note), as one array, so that
  N, the average length and every note's length come from a single read.

Ranking is SPEC §4: BM25F with k1 = 1.2, b = 0.75, IDF ln(1 + (N − df + 0.5)/(df + 0.5)); per query word
the note's counts are combined as 3·(id + title) + backlinking ids + body and then saturated, normalised
by the body's length. A query word matches the terms it is a prefix of. The backlinking-ids field is
computed at query time from the links table, so it can never disagree with the links.

Choices the spec leaves open:

- The graph boost re-ranks notes that match; it does not add notes that contain none of the query words.
  The source tool promises that "notes linked from strong hits get a boost", and keeping `total` the
  number of notes that match makes it mean the same with or without links. The linking notes' scores
  are taken before their own boosts (BM25 and phrase bonus), so boosts do not chain along links.
- A CJK run in the query is one query word that matches notes containing all of its character bigrams
  (a single character matches that character); its count in a note is the smallest bigram count.
- The phrase check compares the query and the field after the same folding (NFKC, case folding, words
  joined by one space, no space between two CJK characters): "contains" means the folded query occurs
  there starting at a word, its last word possibly the start of a longer one (`auth tok` is in
  "auth token", `auth token` is not in "oauth token").
- The id is tokenised without its extension, so that `md` does not match every note.
- Ties, after rounding scores to 6 decimals so that float noise cannot decide them, go to the smaller id.
"""

from __future__ import annotations

import bisect
import functools
import math
import operator
import re
import sqlite3
import time
import unicodedata
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ..report import Reporter
from .index import IndexedNote, run_in, select_in

if TYPE_CHECKING:
    from .semantic import SearchRanker

K1 = 1.2
B = 0.75
HEAD_WEIGHT = 3  # id and title
GRAPH_BOOST = 0.15
SNIPPET_CHARS = 160
SNIPPET_BEFORE = 50

SCHEMA = """
CREATE TABLE search_terms (
    tid INTEGER PRIMARY KEY,
    term TEXT NOT NULL UNIQUE,
    docs BLOB NOT NULL,        -- array('i'): note rowids, ascending
    tfs BLOB NOT NULL          -- array('Q'): per note, body | title << 32 | id << 48 (see _pack)
);
CREATE TABLE search_docs (
    doc INTEGER PRIMARY KEY,   -- notes.rowid
    tids BLOB NOT NULL,        -- array('i'): the note's terms, to remove its postings
    form TEXT NOT NULL,        -- the body as the phrase check sees it
    title_key TEXT NOT NULL    -- the title folded for --exact-title
);
CREATE INDEX search_docs_title ON search_docs (title_key);
CREATE TABLE search_meta (key TEXT PRIMARY KEY, value BLOB NOT NULL);
"""

# --- tokenizer ---------------------------------------------------------------------------------------

#: Han (with extensions and compatibility ideographs), kana, Hangul, and the iteration marks 々〆〇.
_CJK_RANGES = (
    (0x1100, 0x11FF),
    (0x3005, 0x3007),
    (0x3040, 0x309F),
    (0x30A0, 0x30FF),
    (0x3130, 0x318F),
    (0x31F0, 0x31FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xA960, 0xA97F),
    (0xAC00, 0xD7FF),
    (0xF900, 0xFAFF),
    (0x20000, 0x3134F),
)
_CJK_CHARS = "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in _CJK_RANGES)
_CJK_STARTS = [lo for lo, _ in _CJK_RANGES]
_MARKS = (
    "\u0300-\u036f\u0483-\u0489\u0591-\u05c7\u0610-\u061a\u064b-\u065f\u0670\u06d6-\u06ed"
    "\u0900-\u0dff\u0e31-\u0e3a\u0e47-\u0e4e\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
)
_WORD = re.compile(rf"[\w{_MARKS}]+")  # used on text whose "_" became " ": one class is twice as fast
_TITLE_SEPARATORS = re.compile(r"[\s\-_]+")


@functools.cache
def _cjk_pattern(kind: str) -> re.Pattern[str]:
    """CJK regexes, compiled on first use: their wide character classes take milliseconds to compile,
    which an ASCII query need not pay at start-up."""
    if kind == "split":
        return re.compile(f"([{_CJK_CHARS}]+)")
    return re.compile(f"(?<=[{_CJK_CHARS}]) (?=[{_CJK_CHARS}])")  # a space between two CJK characters


def is_cjk(char: str) -> bool:
    code = ord(char)
    i = bisect.bisect_right(_CJK_STARTS, code) - 1
    return i >= 0 and code <= _CJK_RANGES[i][1]


def fold(text: str) -> str:
    """The form every comparison uses: NFKC, then case folding."""
    return unicodedata.normalize("NFKC", text).casefold()


def word_runs(text: str) -> list[str]:
    """Maximal runs of letters, digits and marks in the folded text."""
    return _WORD.findall(fold(text).replace("_", " "))


def phrase_form(runs: Sequence[str]) -> str:
    """Runs joined by one space, with no space between two CJK characters (CJK is written unspaced)."""
    form = " ".join(runs)
    return form if form.isascii() else _cjk_pattern("gap").sub("", form)


def contains_phrase(form: str, phrase: str) -> bool:
    """Whether a phrase form occurs in a field's form starting at a word: after a space, a CJK character
    or the start (CJK phrases may start anywhere, as CJK words match inside runs). The last word may be
    the start of a longer word, as query words match words they are a prefix of."""
    if is_cjk(phrase[0]):
        return phrase in form
    start = form.find(phrase)
    while start >= 0:
        if start == 0 or form[start - 1] == " " or is_cjk(form[start - 1]):
            return True
        start = form.find(phrase, start + 1)
    return False


def terms_of(runs: Sequence[str]) -> tuple[list[str], int]:
    """Index terms of some runs, and their length: a word without CJK is one term; a CJK stretch gives
    each character and each overlapping pair of characters, so 1- and 2-character queries find it.
    The length counts words and CJK characters."""
    text = " ".join(runs)
    if text.isascii():
        return list(runs), len(runs)
    # One split of the whole text rather than a look at every word: the work stays in C.
    parts = _cjk_pattern("split").split(text)
    terms: list[str] = _WORD.findall(" ".join(parts[0::2]))
    length = len(terms)
    for stretch in parts[1::2]:
        terms.extend(stretch)
        terms.extend(map(operator.add, stretch, stretch[1:]))
        length += len(stretch)
    return terms, length


def title_key(title: str) -> str:
    """A title folded for --exact-title: NFC, case folding, runs of spaces, '-' and '_' as one separator."""
    folded = unicodedata.normalize("NFC", unicodedata.normalize("NFC", title).casefold())
    return _TITLE_SEPARATORS.sub(" ", folded).strip(" ")


def _id_stem(note_id: str) -> str:
    dot = note_id.rfind(".")
    return note_id[:dot] if dot > note_id.rfind("/") else note_id


# --- postings ----------------------------------------------------------------------------------------
#
# A posting's counts are packed into one integer so that the counts of several terms in one note (a
# prefix matching several terms) add up with one `+`: body in bits 0-31, title in 32-47, id in 48-63.
# Sums stay exact as long as a title and an id have fewer than 65,536 words, which the caps ensure.

_BODY_MAX = 0xFFFFFFFF
_FIELD_MAX = 0xFFFF
_LOW32 = 0xFFFFFFFF


def _pack(body: int, title: int, ident: int) -> int:
    return min(body, _BODY_MAX) | min(title, _FIELD_MAX) << 32 | min(ident, _FIELD_MAX) << 48


def _head(packed: int) -> int:
    """id + title count of a packed posting."""
    return (packed >> 32 & _FIELD_MAX) + (packed >> 48)


class _Analysed:
    """One note as the search index stores it."""

    __slots__ = ("doc", "postings", "length", "form", "title_key")

    def __init__(self, note: IndexedNote) -> None:
        body_runs = word_runs(note.body)
        body_terms, self.length = terms_of(body_runs)
        title_terms = terms_of(word_runs(note.title))[0][:_FIELD_MAX]
        id_terms = terms_of(word_runs(_id_stem(note.id)))[0][:_FIELD_MAX]
        packed: dict[str, int] = dict(Counter(body_terms))
        for term, count in Counter(title_terms).items():
            packed[term] = packed.get(term, 0) | count << 32
        for term, count in Counter(id_terms).items():
            packed[term] = packed.get(term, 0) | count << 48
        self.doc = note.rowid
        self.postings = packed
        self.form = phrase_form(body_runs)
        self.title_key = title_key(note.title)


# --- index maintenance (called by VaultIndex inside its write transaction) ---------------------------


def remove_notes(conn: sqlite3.Connection, rowids: list[int]) -> None:
    """Note rowids whose postings must go. Only recorded here: add_notes, which the refresh always calls
    last, removes them all at once, so that a refresh that changes many notes rewrites each term once.
    The temporary table is part of the transaction, so a rolled-back refresh leaves nothing behind."""
    if not rowids:
        return
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS search_pending (doc INTEGER PRIMARY KEY)")
    conn.executemany("INSERT OR IGNORE INTO temp.search_pending (doc) VALUES (?)", [(r,) for r in rowids])


def add_notes(conn: sqlite3.Connection, notes: list[IndexedNote]) -> None:
    """Remove the notes recorded by remove_notes, then index `notes`, rewriting each affected term once."""
    pending = _take_pending(conn)
    if not pending and not notes:
        return
    lens = _load_lens(conn)
    removals: dict[int, list[int]] = {}  # tid → docs to drop
    if pending:
        for doc, tids_blob in select_in(conn, "SELECT doc, tids FROM search_docs WHERE doc IN ({})", pending):
            tids = array("i")
            tids.frombytes(tids_blob)
            for tid in tids:
                removals.setdefault(tid, []).append(doc)
        run_in(conn, "DELETE FROM search_docs WHERE doc IN ({})", pending)
        for doc in pending:
            if doc < len(lens):
                lens[doc] = 0

    progress = _Progress(len(notes))
    analysed = []
    for note in notes:
        analysed.append(_Analysed(note))
        progress.step()
    analysed.sort(key=lambda item: item.doc)  # so that every term's new postings come out ascending
    additions: dict[str, tuple[array[int], array[int]]] = {}
    for item in analysed:
        doc = item.doc
        for term, packed in item.postings.items():
            pair = additions.get(term)
            if pair is None:
                additions[term] = (array("i", (doc,)), array("Q", (packed,)))
            else:
                pair[0].append(doc)
                pair[1].append(packed)

    tids_of = _known_tids(conn, additions)
    next_tid = (conn.execute("SELECT max(tid) FROM search_terms").fetchone()[0] or 0) + 1
    new_rows: list[tuple[int, str, bytes, bytes]] = []
    for term, (docs, tfs) in additions.items():
        if term not in tids_of:
            tids_of[term] = next_tid
            new_rows.append((next_tid, term, docs.tobytes(), tfs.tobytes()))
            next_tid += 1
    conn.executemany("INSERT INTO search_terms (tid, term, docs, tfs) VALUES (?, ?, ?, ?)", new_rows)

    # Terms that existed already: merge removals and additions into their postings, one rewrite each.
    fresh = {row[0] for row in new_rows}
    touched: dict[int, tuple[array[int], array[int]] | None] = {tid: None for tid in removals}
    for term, pair in additions.items():
        tid = tids_of[term]
        if tid not in fresh:
            touched[tid] = pair
    if touched:
        updates: list[tuple[bytes, bytes, int]] = []
        emptied: list[int] = []
        for tid, docs_blob, tfs_blob in select_in(
            conn, "SELECT tid, docs, tfs FROM search_terms WHERE tid IN ({})", list(touched)
        ):
            docs, tfs = array("i"), array("Q")
            docs.frombytes(docs_blob)
            tfs.frombytes(tfs_blob)
            docs, tfs = _merge(docs, tfs, removals.get(tid, ()), touched[tid])
            if docs:
                updates.append((docs.tobytes(), tfs.tobytes(), tid))
            else:
                emptied.append(tid)
        conn.executemany("UPDATE search_terms SET docs = ?, tfs = ? WHERE tid = ?", updates)
        run_in(conn, "DELETE FROM search_terms WHERE tid IN ({})", emptied)

    rows = []
    if analysed and analysed[-1].doc >= len(lens):
        lens.extend(array("I", bytes(4 * (analysed[-1].doc + 1 - len(lens)))))
    for item in analysed:
        tids = array("i", [tids_of[term] for term in item.postings])
        rows.append((item.doc, tids.tobytes(), item.form, item.title_key))
        lens[item.doc] = item.length + 1
    conn.executemany("INSERT INTO search_docs (doc, tids, form, title_key) VALUES (?, ?, ?, ?)", rows)
    conn.execute("INSERT OR REPLACE INTO search_meta (key, value) VALUES ('lens', ?)", (lens.tobytes(),))


class _Progress:
    """Progress of the search terms on stderr, as the index shows its own: only on a terminal, and only
    once the build has taken more than a second (a cold build of a large vault). The first build in a
    process is timed from when this module was imported, which the index does as it opens, before its
    scan: the index's own part of a build may stay under a second while the whole takes longer."""

    def __init__(self, total: int) -> None:
        import sys

        global _first_build_start
        self.clock = time.monotonic
        self.stream = sys.stderr
        self.total = total
        self.count = 0
        self.start = self.clock() if _first_build_start is None else _first_build_start
        _first_build_start = None
        self.tty = total > 0 and self.stream.isatty()

    def step(self) -> None:
        self.count += 1
        if self.tty and (self.count % 500 == 0 or self.count == self.total) and self.clock() - self.start > 1:
            end = "\n" if self.count == self.total else ""
            self.stream.write(f"\ramem: indexing search terms {self.count}/{self.total} notes{end}")
            self.stream.flush()


_first_build_start: float | None = time.monotonic()


def _take_pending(conn: sqlite3.Connection) -> list[int]:
    if conn.execute("SELECT 1 FROM sqlite_temp_master WHERE name = 'search_pending'").fetchone() is None:
        return []
    pending = [row[0] for row in conn.execute("SELECT doc FROM temp.search_pending")]
    conn.execute("DELETE FROM temp.search_pending")
    return pending


def _load_lens(conn: sqlite3.Connection) -> array[int]:
    lens = array("I")
    row = conn.execute("SELECT value FROM search_meta WHERE key = 'lens'").fetchone()
    if row is not None:
        lens.frombytes(row[0])
    return lens


def _known_tids(conn: sqlite3.Connection, terms: dict[str, Any]) -> dict[str, int]:
    if not terms or conn.execute("SELECT 1 FROM search_terms LIMIT 1").fetchone() is None:
        return {}
    if len(terms) > 5000:
        # Many terms (a large change): one pass over the term table beats thousands of lookups.
        return {term: tid for term, tid in conn.execute("SELECT term, tid FROM search_terms") if term in terms}
    return dict(select_in(conn, "SELECT term, tid FROM search_terms WHERE term IN ({})", list(terms)))


def _merge(
    docs: array[int], tfs: array[int], removed: Iterable[int], added: tuple[array[int], array[int]] | None
) -> tuple[array[int], array[int]]:
    """Postings with `removed` docs taken out and `added` ones put in, still ascending by doc."""
    removed = set(removed)
    if not removed and added is not None and (not docs or added[0][0] > docs[-1]):
        docs.extend(added[0])  # the usual case: new notes have the largest rowids
        tfs.extend(added[1])
        return docs, tfs
    if len(removed) + (len(added[0]) if added is not None else 0) <= 32:
        # A few notes changed (the other usual case): edit in place rather than rebuild the list.
        for doc in removed:
            i = bisect.bisect_left(docs, doc)
            if i < len(docs) and docs[i] == doc:
                del docs[i]
                del tfs[i]
        for doc, packed in zip(*(added or ((), ())), strict=True):
            i = bisect.bisect_left(docs, doc)
            if i < len(docs) and docs[i] == doc:
                tfs[i] = packed
            else:
                docs.insert(i, doc)
                tfs.insert(i, packed)
        return docs, tfs
    merged = dict(zip(docs, tfs, strict=True))
    for doc in removed:
        merged.pop(doc, None)
    if added is not None:
        merged.update(zip(added[0], added[1], strict=True))
    order = sorted(merged)
    return array("i", order), array("Q", [merged[d] for d in order])


# --- queries -----------------------------------------------------------------------------------------


class _Query:
    """The query as the ranker sees it: distinct words (each a Latin prefix or a CJK run), the number
    of words as written (the phrase bonus needs two or more) and the folded phrase."""

    def __init__(self, text: str) -> None:
        runs = word_runs(text)
        words: list[tuple[str, bool]] = []
        for run in runs:
            parts = [run] if run.isascii() else _cjk_pattern("split").split(run)
            words.extend((part, bool(i % 2)) for i, part in enumerate(parts) if part)
        self.count = len(words)
        self.words = list(dict.fromkeys(words))
        self.phrase = phrase_form(runs)

    def pattern(self) -> re.Pattern[str] | None:
        """A regex finding the first place a word matches in unfolded text, for the snippet."""
        if not self.words:
            return None
        parts = [re.escape(word) if cjk else rf"(?<![^\W_]){re.escape(word)}" for word, cjk in self.words]
        return re.compile("|".join(parts), re.IGNORECASE)


def _prefix_end(word: str) -> str:
    """The smallest string greater than every string starting with `word` (UTF-8 order is code-point order)."""
    last = ord(word[-1]) + 1
    if 0xD800 <= last <= 0xDFFF:
        last = 0xE000  # surrogates cannot be stored; nothing sorts between them anyway
    return word[:-1] + chr(last)


def _term_postings(conn: sqlite3.Connection, sql: str, args: tuple[str, ...]) -> list[dict[int, int]]:
    result = []
    for docs_blob, tfs_blob in conn.execute(sql, args):
        docs, tfs = array("i"), array("Q")
        docs.frombytes(docs_blob)
        tfs.frombytes(tfs_blob)
        result.append(dict(zip(docs, tfs, strict=True)))
    return result


def _word_postings(conn: sqlite3.Connection, word: str, cjk: bool) -> dict[int, int]:
    """doc → packed counts of one query word, summed over the terms it matches."""
    if not cjk:
        lists = _term_postings(
            conn, "SELECT docs, tfs FROM search_terms WHERE term >= ? AND term < ?", (word, _prefix_end(word))
        )
        if not lists:
            return {}
        lists.sort(key=len, reverse=True)
        acc = lists[0]
        for more in lists[1:]:
            get = acc.get
            for doc, packed in more.items():
                acc[doc] = get(doc, 0) + packed
        return acc
    if len(word) <= 2:
        lists = _term_postings(conn, "SELECT docs, tfs FROM search_terms WHERE term = ?", (word,))
        return lists[0] if lists else {}
    # A longer run: every bigram must be there; its count is the rarest bigram's, field by field.
    bigrams = list(dict.fromkeys(word[i : i + 2] for i in range(len(word) - 1)))
    lists = []
    for bigram in bigrams:
        found = _term_postings(conn, "SELECT docs, tfs FROM search_terms WHERE term = ?", (bigram,))
        if not found:
            return {}
        lists.append(found[0])
    lists.sort(key=len)
    result = {}
    for doc in lists[0]:
        values = [postings.get(doc) for postings in lists]
        if None in values:
            continue
        counts = [v for v in values if v is not None]
        combined = _pack(
            min(v & _LOW32 for v in counts), min(v >> 32 & _FIELD_MAX for v in counts), min(v >> 48 for v in counts)
        )
        if combined:  # 0: the bigrams are all there, but not together in any one field
            result[doc] = combined
    return result


_ID_ONE = 1 << 48
#: Scores are compared rounded to 6 decimals; a cut-off keeps everything within this of it.
_MARGIN = 1e-6
_IN_HEAD = 1
_IN_BODY = 2


def _best_first(
    lower: dict[int, float],
    upper: dict[int, float],
    limit: int,
    slack: float,
    exact: Callable[[Sequence[int]], dict[int, float]],
) -> dict[int, float]:
    """Exact scores, from `exact`, of every note that could be among the best `limit`: notes are taken by
    `upper` bound, highest first, in growing batches, until the next one's bound plus `slack` (what
    later stages may still add) falls below the `limit`-th exact score found (less _MARGIN, so that
    scores rounding to the same 6 decimals are kept). `lower` bounds the exact scores from below."""
    import heapq

    floor = heapq.nlargest(limit, lower.values())[-1] if len(lower) > limit else -math.inf
    order = sorted(
        (doc for doc, bound in upper.items() if bound + slack >= floor - _MARGIN), key=upper.__getitem__, reverse=True
    )
    done: dict[int, float] = {}
    best: list[float] = []  # min-heap of the `limit` best exact scores so far
    pos, batch = 0, max(2 * limit, 32)
    while pos < len(order):
        if len(best) == limit and upper[order[pos]] + slack < best[0] - _MARGIN:
            break
        chunk = order[pos : pos + batch]
        pos += len(chunk)
        batch *= 2
        for doc, score in exact(chunk).items():
            done[doc] = score
            if len(best) < limit:
                heapq.heappush(best, score)
            elif score > best[0]:
                heapq.heapreplace(best, score)
    return done


class _Ranker:
    """BM25F over one snapshot of the index, for one query."""

    def __init__(self, conn: sqlite3.Connection, query: _Query) -> None:
        self.conn = conn
        self.query = query
        self.lens = _load_lens(conn)
        self.n = len(self.lens) - self.lens.count(0)
        self.postings = [_word_postings(conn, word, cjk) for word, cjk in query.words]
        self.ids: dict[int, str] = {}
        self.base: dict[int, float] = {}
        self.scored: dict[int, float] = {}  # base + phrase bonus
        self.phrase_max = 0.0
        self.eligible: dict[int, int] = {}  # see _phrase_candidates

    def rank(self, limit: int) -> tuple[list[tuple[int, float]], int]:
        """The best `limit` (doc, score) pairs, best first, and how many notes match in all."""
        base, idfs = self._bm25()
        if not base:
            return [], 0
        total = len(base)
        self.base = base
        self.phrase_max = sum(idfs) if self.query.count >= 2 else 0.0
        # The phrase bonus and the graph boost only add: the bonus at most phrase_max (half when only the
        # body can hold the phrase, nothing unless the note has every word), the boost at most GRAPH_BOOST
        # × the best score. So rather than check every note's phrase and links, the phrase is checked
        # best bound first until no note left could reach the `limit`-th score even with the largest
        # boost, and then the links are read best score first until none left could reach the
        # `limit`-th final score. On a large vault most notes are never looked at twice.
        self.eligible = self._phrase_candidates() if self.phrase_max else {}
        bound = dict(base)  # base + the phrase bonus the note could get
        for doc, fields in self.eligible.items():
            bound[doc] += self.phrase_max if fields & _IN_HEAD else self.phrase_max / 2
        boost_max = GRAPH_BOOST * max(bound.values())
        scored = _best_first(base, bound, limit, boost_max, self._with_phrases)
        unchecked = max((b for doc, b in bound.items() if doc not in scored), default=-math.inf)
        boost_max = GRAPH_BOOST * max(max(scored.values()), unchecked)
        final = _best_first(scored, scored, limit, boost_max, self._with_boosts)
        self._load_ids(list(final))
        ids = self.ids
        ranked = sorted(final.items(), key=lambda item: (-round(item[1], 6), ids[item[0]]))
        return ranked[:limit], total

    def _with_phrases(self, docs: Sequence[int]) -> dict[int, float]:
        self._score_phrases(docs)
        return {doc: self.scored[doc] for doc in docs}

    def _with_boosts(self, docs: Sequence[int]) -> dict[int, float]:
        """Final scores of `docs`: base and phrase bonus, plus GRAPH_BOOST × the best such score among
        the hits linking to each."""
        base, scored = self.base, self.scored
        linking: dict[int, list[int]] = {}
        for target, src in select_in(
            self.conn,
            "SELECT DISTINCT n.rowid, l.src FROM notes n JOIN links l ON l.resolved = n.id WHERE n.rowid IN ({})",
            docs,
        ):
            if src != target and src in base:
                linking.setdefault(target, []).append(src)
        self._score_phrases([src for sources in linking.values() for src in sources])
        final = {doc: scored[doc] for doc in docs}
        for target, sources in linking.items():
            final[target] += GRAPH_BOOST * max(scored[src] for src in sources)
        return final

    def _score_phrases(self, docs: Iterable[int]) -> None:
        todo = list(dict.fromkeys(doc for doc in docs if doc not in self.scored))
        bonus = self._phrase_bonus(todo, self.phrase_max)
        for doc in todo:
            self.scored[doc] = self.base[doc] + bonus.get(doc, 0.0)

    def _bm25(self) -> tuple[dict[int, float], list[float]]:
        n, lens = self.n, self.lens
        if n == 0:
            return {}, []
        avgdl = (sum(lens) - n) / n  # lens hold length + 1
        # c1 + c2·lens[d] = K1·(1 − b + b·len/avgdl); when every body is empty, each is of average length.
        c2 = K1 * B / avgdl if avgdl else 0.0
        c1 = K1 * (1 - B) - c2 if avgdl else K1
        backlinks = self._backlink_counts()
        scores: dict[int, float] = {}
        idfs = []
        get = scores.get
        for postings, linked in zip(self.postings, backlinks, strict=True):
            df = len(postings) + sum(1 for doc in linked if doc not in postings)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            idfs.append(idf)
            top = idf * (K1 + 1)
            for doc, packed in postings.items():
                f = (packed & _LOW32) + HEAD_WEIGHT * ((packed >> 32 & _FIELD_MAX) + (packed >> 48))
                if linked:
                    f += linked.get(doc, 0)
                scores[doc] = get(doc, 0.0) + top * f / (f + c1 + c2 * lens[doc])
            for doc, f in linked.items():
                if doc not in postings:
                    scores[doc] = get(doc, 0.0) + top * f / (f + c1 + c2 * lens[doc])
        return scores, idfs

    def _backlink_counts(self) -> list[dict[int, int]]:
        """Per query word: doc → how often the word occurs in the ids of the notes linking to doc."""
        in_ids = [
            {doc: packed >> 48 for doc, packed in postings.items() if packed >= _ID_ONE} for postings in self.postings
        ]
        sources = set().union(*in_ids) if in_ids else set()
        counts: list[dict[int, int]] = [{} for _ in in_ids]
        if not sources:
            return counts
        lens = self.lens
        select = "SELECT DISTINCT l.src, n.rowid FROM links l JOIN notes n ON n.id = l.resolved WHERE n.rowid != l.src"
        if len(sources) * 4 > self.n:
            pairs: Iterable[tuple[Any, ...]] = self.conn.execute(select)
        else:
            pairs = select_in(self.conn, select + " AND l.src IN ({})", sorted(sources))
        for src, target in pairs:
            if src not in sources or target >= len(lens) or not lens[target]:
                continue
            for words_ids, word_counts in zip(in_ids, counts, strict=True):
                count = words_ids.get(src)
                if count:
                    word_counts[target] = word_counts.get(target, 0) + count
        return counts

    def _phrase_candidates(self) -> dict[int, int]:
        """doc → where the phrase could be (_IN_HEAD, _IN_BODY bits), for the notes holding every word."""
        docs = set(self.postings[0])
        for postings in self.postings[1:]:
            docs.intersection_update(postings.keys())
        candidates = {}
        for doc in docs:
            values = [postings[doc] for postings in self.postings]
            fields = (_IN_HEAD if all(_head(v) for v in values) else 0) | (
                _IN_BODY if all(v & _LOW32 for v in values) else 0
            )
            if fields:
                candidates[doc] = fields
        return candidates

    def _phrase_bonus(self, docs: Sequence[int], phrase_max: float) -> dict[int, float]:
        """doc → the phrase bonus of those notes that have one: ΣIDF when the id or title contains the
        whole query, half of it when the body does."""
        if not phrase_max or not docs:
            return {}
        phrase = self.query.phrase
        eligible = self.eligible
        head = [doc for doc in docs if eligible.get(doc, 0) & _IN_HEAD]
        bonus: dict[int, float] = {}
        for doc, note_id, title in select_in(self.conn, "SELECT rowid, id, title FROM notes WHERE rowid IN ({})", head):
            if contains_phrase(phrase_form(word_runs(title)), phrase) or contains_phrase(
                phrase_form(word_runs(_id_stem(note_id))), phrase
            ):
                bonus[doc] = phrase_max
        body = [doc for doc in docs if eligible.get(doc, 0) & _IN_BODY and doc not in bonus]
        # SQLite looks for the phrase (instr, in C), so bodies are not copied into Python; only a body
        # holding it elsewhere than at its start or after a space is read here, for a start after CJK.
        anywhere = is_cjk(phrase[0])
        recheck = []
        for start in range(0, len(body), 900):
            chunk = body[start : start + 900]
            sql = (
                f"SELECT doc, instr(' ' || form, ' ' || ?) > 0 FROM search_docs "
                f"WHERE doc IN ({','.join('?' * len(chunk))}) AND instr(form, ?) > 0"
            )
            for doc, aligned in self.conn.execute(sql, [phrase, *chunk, phrase]):
                if aligned or anywhere:
                    bonus[doc] = phrase_max / 2
                else:
                    recheck.append(doc)
        for doc, form in select_in(self.conn, "SELECT doc, form FROM search_docs WHERE doc IN ({})", recheck):
            if contains_phrase(form, phrase):
                bonus[doc] = phrase_max / 2
        return bonus

    def _load_ids(self, docs: list[int]) -> None:
        wanted = [doc for doc in docs if doc not in self.ids]
        self.ids.update(select_in(self.conn, "SELECT rowid, id FROM notes WHERE rowid IN ({})", wanted))


# --- results -----------------------------------------------------------------------------------------


def search(
    config: Any,
    query: str | None,
    *,
    limit: int | None = None,
    exact_title: str | None = None,
    semantic: bool | None = None,
    reporter: Reporter | None = None,
) -> dict[str, Any]:
    """Bring the index up to date and answer one search: SPEC §4's {hits, total, truncated, fused, semantic}.

    With `exact_title`, every note whose folded title equals it, by id, unranked; `query` then only
    steers the snippets. `semantic` (default: the config's `semantic`) fuses the keyword ranking with the
    semantic one; `exact_title` never does. Warnings go to `reporter`."""
    from ..errors import UsageError
    from .index import VaultIndex

    if query is None and exact_title is None:
        raise UsageError("search needs a QUERY or --exact-title TITLE")
    limit = config.max_search_results if limit is None else limit
    if limit < 1:
        raise UsageError(f"--limit must be at least 1, got {limit}")
    index = VaultIndex(config)
    try:
        # Damage the refresh does not touch (it reads only the notes table when nothing changed) shows
        # while ranking: the whole search is repaired and run again, not just the refresh.
        use_semantic = bool(getattr(config, "semantic", False) if semantic is None else semantic)
        semantic_on = use_semantic and exact_title is None and query is not None
        return index.repairing(lambda: _search(index, query, limit, exact_title, semantic_on, reporter or Reporter()))
    finally:
        index.close()


def _search(
    index: Any, query: str | None, limit: int, exact_title: str | None, semantic: bool, reporter: Reporter
) -> dict[str, Any]:
    index.refresh()
    conn = index.conn
    ranker = _semantic_ranker(index, reporter) if semantic else None
    parsed = _Query(query or "")
    conn.execute("BEGIN")  # one snapshot for every read, even if another process refreshes meanwhile
    try:
        if exact_title is not None:
            rows = conn.execute(
                "SELECT n.rowid FROM search_docs d JOIN notes n ON n.rowid = d.doc WHERE d.title_key = ? ORDER BY n.id",
                (title_key(exact_title),),
            ).fetchall()
            ranked: list[tuple[int, float | None]] = [(row[0], None) for row in rows[:limit]]
            total = len(rows)
        else:
            best, total = _Ranker(conn, parsed).rank(max(limit, ranker.depth) if ranker and ranker.fused else limit)
            if ranker is not None:
                best, total = ranker.fuse(query or "", best, total)
            ranked = [(doc, round(score, 6)) for doc, score in best[:limit]]
        hits = [_hit(index, doc, score, parsed) for doc, score in ranked]
    finally:
        conn.execute("COMMIT")
    fused, status = (ranker.fused, ranker.status) if ranker else (False, "unavailable")
    return {"hits": hits, "total": total, "truncated": total > len(hits), "fused": fused, "semantic": status}


def _semantic_ranker(index: Any, reporter: Reporter) -> SearchRanker:
    """The semantic ranker, imported only by a search that asks for it."""
    from .semantic import for_search

    return for_search(index, reporter)


def _hit(index: Any, doc: int, score: float | None, query: _Query) -> dict[str, Any]:
    import json

    note_id, title, frontmatter = index.conn.execute(
        "SELECT id, title, frontmatter FROM notes WHERE rowid = ?", (doc,)
    ).fetchone()
    expires = json.loads(frontmatter).get("expires")
    return {
        "id": note_id,
        "title": title,
        "score": score,
        "backlinks": index.backlinks(note_id),
        "expired": is_expired(expires, index.config.tz),
        "snippet": _snippet(index.config, note_id, query),
    }


def is_expired(value: Any, tz: Any) -> bool:
    """True when `value` (frontmatter `expires`) is a date or time in the past, in the zone `tz`
    (None: the system's local zone). A date expires after its last day; values that are no date never do."""
    if not isinstance(value, str):
        return False
    from datetime import date, datetime

    from ..timefmt import now

    text = value.strip()
    current = now(tz)
    try:
        if len(text) == 10:
            return date.fromisoformat(text) < current.date()
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return False
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=current.tzinfo)
    return moment < current


def _snippet(config: Any, note_id: str, query: _Query) -> str:
    """A short excerpt of the body around the first place a query word matches, else its opening."""
    import os

    from .notes import parse_note

    try:
        with open(os.path.join(config.vault_root, note_id), encoding="utf-8") as handle:
            body = parse_note(handle.read(), note_id).body
    except (OSError, UnicodeDecodeError):
        return ""  # gone or changed since the refresh: the hit stands, the excerpt cannot be shown
    pattern = query.pattern()
    if pattern is not None:
        for text in (body, fold(body)):
            match = pattern.search(text)
            if match:
                return _excerpt(text, match.start())
    return _excerpt(body, 0)


def _excerpt(text: str, pos: int) -> str:
    start = max(0, pos - SNIPPET_BEFORE)
    if start:
        space = text.find(" ", start, pos)
        start = space + 1 if space >= 0 else start  # start at a word unless the text has no spaces (CJK)
    end = min(len(text), start + SNIPPET_CHARS)
    if end < len(text):
        space = text.rfind(" ", pos + 1, end)
        end = space if space > 0 else end
    piece = " ".join(text[start:end].split())
    return ("…" if start else "") + piece + ("…" if end < len(text) and piece else "")
