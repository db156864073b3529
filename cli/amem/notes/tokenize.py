"""How text becomes search terms, for notes and for queries alike.

Every comparison folds text the same way (NFKC, then case folding). A Latin word becomes one term, its
English stem (`files` → `file`, `linking` → `link`); a run of Chinese, Japanese or Korean characters
becomes, at each character, the pair starting there (the last character alone), so that a one-character
query matches every place that character occurs (as the prefix of its pair) and a longer one is a phrase
of pairs. The terms of a field are stored space-separated, in order, so that the search engine (SQLite
FTS5 with its plain `ascii` tokenizer) sees exactly these terms and their positions.

Queries: a CJK run matches each of its pairs, and ranks notes holding the whole run first (the
phrase bonus). Stop words and one-letter words ("how to embed a file") are dropped when the query has other
words, so they neither match every note nor count in `total`; a query of nothing else matches them
exactly. Other Latin words match every term they are a prefix of (`auth` finds `authentication`).
"""

from __future__ import annotations

import bisect
import functools
import operator
import re
import unicodedata
from collections.abc import Sequence

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

#: Words too common to tell notes apart; with other words in the query they are ignored.
STOP_WORDS = frozenset(
    """a an and are as at be been but by can could did do does for from had has have how i if in into is it
    its itself me my no not of on or our so than that the their them then there these they this those to
    too us was we were what when where which while who whom why will with would you your yours""".split()  # noqa: SIM905
)


#: Chinese question words and fillers, as character pairs: in a question they name no topic.
CJK_STOP_PAIRS = frozenset(
    """怎么 怎样 如何 什么 为什 么让 么样 哪些 哪里 哪个 应该 可以 需要
    我的 我们 一个 一下 时候 是否 有没 没有 能不 不能 的时 候的""".split()  # noqa: SIM905
)


@functools.cache
def _cjk_split() -> re.Pattern[str]:
    """Compiled on first use: the wide character class takes milliseconds to compile."""
    return re.compile(f"([{_CJK_CHARS}]+)")


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


def title_key(title: str) -> str:
    """A title folded for --exact-title: NFC, case folding, runs of spaces, '-' and '_' as one separator."""
    folded = unicodedata.normalize("NFC", unicodedata.normalize("NFC", title).casefold())
    return _TITLE_SEPARATORS.sub(" ", folded).strip(" ")


def id_stem(note_id: str) -> str:
    """The id without its extension, so that `md` does not match every note."""
    dot = note_id.rfind(".")
    return note_id[:dot] if dot > note_id.rfind("/") else note_id


# --- stemming ----------------------------------------------------------------------------------------
#
# Step 1 of Porter's English stemmer (plurals, -ed, -ing, final -y): the part that makes inflected forms
# of one word meet, without the derivational steps that merge unrelated words.

_VOWELS = frozenset("aeiou")


def _is_consonant(word: str, i: int) -> bool:
    char = word[i]
    if char in _VOWELS:
        return False
    if char == "y":
        return i == 0 or not _is_consonant(word, i - 1)
    return True


def _measure(stem: str) -> int:
    """Porter's m: the number of vowel-consonant sequences in `stem`."""
    m, previous_vowel = 0, False
    for i in range(len(stem)):
        consonant = _is_consonant(stem, i)
        if consonant and previous_vowel:
            m += 1
        previous_vowel = not consonant
    return m


def _has_vowel(stem: str) -> bool:
    return any(not _is_consonant(stem, i) for i in range(len(stem)))


def _ends_cvc(word: str) -> bool:
    n = len(word)
    return (
        n >= 3
        and _is_consonant(word, n - 3)
        and not _is_consonant(word, n - 2)
        and _is_consonant(word, n - 1)
        and word[-1] not in "wxy"
    )


@functools.lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The English stem of a folded word; words that are not plain ASCII letters stay as they are."""
    if len(word) <= 3 or not word.isascii() or not word.isalpha():
        return word
    return _final_y(_past_or_progressive(_plural(word)))


def _plural(word: str) -> str:
    """Step 1a: `caresses` → `caress`, `ponies` → `poni`, `cats` → `cat`; `-ss`, `-us`, `-is` stay."""
    if word.endswith("sses") or word.endswith("ies"):
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss") and not word.endswith("us") and not word.endswith("is"):
        return word[:-1]
    return word


def _past_or_progressive(word: str) -> str:
    """Step 1b: `agreed` → `agree`, `linking` → `link`, `hopping` → `hop`, `filing` → `file`."""
    if word.endswith("eed"):
        return word[:-1] if _measure(word[:-3]) > 0 else word
    # Unlike Porter, "-ed" leaves at least four letters: "embed" is no past tense of "emb".
    for suffix, shortest in (("ed", 4), ("ing", 3)):
        if word.endswith(suffix) and _has_vowel(word[: -len(suffix)]) and len(word) - len(suffix) >= shortest:
            return _restore_ending(word[: -len(suffix)])
    return word


def _restore_ending(word: str) -> str:
    """After `-ed`/`-ing` went: `conflat` → `conflate`, `hopp` → `hop` (not `-ll`, `-ss`, `-zz`), `fil` → `file`."""
    if word.endswith(("at", "bl", "iz")):
        return word + "e"
    if len(word) >= 2 and word[-1] == word[-2] and _is_consonant(word, len(word) - 1):
        return word if word[-1] in "lsz" else word[:-1]
    if _measure(word) == 1 and _ends_cvc(word):
        return word + "e"
    return word


def _final_y(word: str) -> str:
    """Step 1c: `happy` → `happi`, when a vowel comes before the `y`."""
    if word.endswith("y") and len(word) > 2 and _has_vowel(word[:-1]):
        return word[:-1] + "i"
    return word


# --- terms -------------------------------------------------------------------------------------------


def terms_of(runs: Sequence[str]) -> list[str]:
    """The terms of some word runs, in order: a Latin word gives its stem; a CJK stretch gives, per
    character, the pair starting there, and its last character alone."""
    text = " ".join(runs)
    if text.isascii():
        return [stem(run) for run in runs]
    terms: list[str] = []
    for run in runs:
        if run.isascii():
            terms.append(stem(run))
            continue
        for i, part in enumerate(_cjk_split().split(run)):
            if not part:
                continue
            if i % 2:
                terms.extend(part[j : j + 2] for j in range(len(part)))
            else:
                terms.append(stem(part))
    return terms


#: Past this many characters a field is tokenized a slice at a time (`sliced_field_text`): a note of 200 MB
#: held its folded text and a list of every word at once, 3.3 GB.
SLICE = 1 << 20


def field_text(text: str) -> str:
    """A field as the search engine stores it: its terms (as `terms_of` gives them), space-separated.
    The hot loop of a build: one regex pass over the folded text finds each run of letters, digits, marks
    and CJK characters, and each distinct run is turned into its terms once (`_run_terms`, cached), so
    that the work per word stays in C."""
    if len(text) > SLICE:
        return sliced_field_text(text, SLICE)
    return _field_text(text)


def sliced_field_text(text: str, size: int) -> str:
    """`field_text` of `text`, about `size` characters at a time, each slice cut after a line break, else
    after a space (else at the next one): no run of letters spans a cut, and neither NFKC nor case folding
    changes across one (a line break or a space composes with nothing), so the terms are the whole's."""
    pieces = []
    start, end = 0, len(text)
    while start < end:
        stop = start + size
        if stop < end:
            cut = text.rfind("\n", start, stop)
            if cut < 0:
                cut = text.rfind(" ", start, stop)
            if cut < 0:
                cut = min((i for i in (text.find("\n", stop), text.find(" ", stop)) if i >= 0), default=end - 1)
            stop = cut + 1
        piece = _field_text(text[start:stop])
        if piece:
            pieces.append(piece)
        start = stop
    return " ".join(pieces)


def _field_text(text: str) -> str:
    folded = fold(text).replace("_", " ")
    if folded.isascii():
        return " ".join(map(stem, _WORD.findall(folded)))
    return " ".join(map(_run_terms, _word_or_cjk().findall(folded)))


@functools.cache
def _word_or_cjk() -> re.Pattern[str]:
    """A run of letters, digits, marks and CJK characters (a CJK character that is no letter, such as
    `・`, still belongs to its CJK stretch)."""
    return re.compile(rf"[\w{_MARKS}{_CJK_CHARS}]+")


@functools.lru_cache(maxsize=65536)
def _run_terms(run: str) -> str:
    """The terms of one run of `_word_or_cjk`, space-separated: its Latin stretches stemmed, its CJK
    stretches as pairs and their last character."""
    if run.isascii():
        return stem(run)
    out = []
    for i, part in enumerate(_cjk_split().split(run)):
        if i % 2:
            out.append(" ".join(map(operator.add, part, part[1:])))
            out.append(part[-1])
        elif part:
            out.append(stem(part))
    return " ".join(piece for piece in out if piece)


# --- queries -----------------------------------------------------------------------------------------


class QueryWord:
    """One word of a query: its terms in order, whether its last term is matched as a prefix, and
    whether it counts (not a stop word or a one-letter word)."""

    __slots__ = ("terms", "prefix", "meaningful")

    def __init__(self, terms: list[str], prefix: bool, meaningful: bool) -> None:
        self.terms = terms
        self.prefix = prefix
        self.meaningful = meaningful

    def expression(self) -> str:
        """The word as an FTS5 query: a term, a prefix, or a phrase of CJK pairs."""
        return _phrase(self.terms, self.prefix)


def _phrase(terms: Sequence[str], prefix: bool) -> str:
    return '"' + " ".join(terms) + '"' + ("*" if prefix else "")


class Query:
    """A query as the engine runs it: `words` are what matching and ranking use (the meaningful words,
    or every word of a query that has none), and `phrases` what the phrase bonus looks for."""

    def __init__(self, text: str) -> None:
        self.text = text
        words: list[QueryWord] = []
        for run in word_runs(text):
            parts = [run] if run.isascii() else _cjk_split().split(run)
            for i, part in enumerate(parts):
                if not part:
                    continue
                if i % 2:  # CJK, written unspaced: one character is the prefix of its pair; longer
                    # runs are their pairs, each a word (a run is often a whole question)
                    if len(part) == 1:
                        words.append(QueryWord([part], True, True))
                    else:
                        pairs = [part[j : j + 2] for j in range(len(part) - 1)]
                        words += [QueryWord([pair], False, pair not in CJK_STOP_PAIRS) for pair in pairs]
                else:
                    meaningful = len(part) > 1 and part not in STOP_WORDS
                    words.append(QueryWord([stem(part)], meaningful, meaningful))
        chosen = [w for w in words if w.meaningful] or [QueryWord(w.terms, False, True) for w in words]
        seen: dict[str, QueryWord] = {}
        for word in chosen:
            seen.setdefault(word.expression(), word)
        self.words = list(seen.values())
        self.count = len(chosen)
        self.phrases = self._phrases(word_runs(text)) if len(self.words) >= 2 else []

    @staticmethod
    def _phrases(runs: list[str]) -> list[str]:
        """The whole query as a phrase, and its meaningful words alone as one, in the terms notes are
        stored with; the last term is a prefix (a Latin word's longer forms, a CJK character's pair)."""
        found: list[str] = []
        meaningful = [r for r in runs if not (r.isascii() and (len(r) <= 1 or r in STOP_WORDS))]
        for group in (runs, meaningful):
            terms = terms_of(group)
            if len(terms) < 2:
                continue
            last = group[-1]
            phrase = _phrase(terms, not (last.isascii() and (len(last) <= 1 or last in STOP_WORDS)))
            if phrase not in found:
                found.append(phrase)
        return found

    def expression(self) -> str | None:
        """Notes matching any of the words, as an FTS5 query; None when the query has no words."""
        if not self.words:
            return None
        return " OR ".join(word.expression() for word in self.words)

    def pattern(self) -> re.Pattern[str] | None:
        """A regex finding the first place a query word occurs in folded text, for the snippet: a Latin word
        where a word starts, a CJK one anywhere. The Latin words share one word-start test, which re then
        tries once at each position rather than once per word: a note without a match is searched in a
        third of the time."""
        cjk: list[str] = []
        latin: list[str] = []
        for word in self.words:
            first = word.terms[0]
            (cjk if first and is_cjk(first[0]) else latin).append(re.escape(first))
        parts = ([rf"(?<![^\W_])(?:{'|'.join(latin)})"] if latin else []) + cjk
        return re.compile("|".join(parts), re.IGNORECASE) if parts else None
