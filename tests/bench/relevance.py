"""Relevance of amem's search on real documentation, side by side with a plain SQLite FTS5 baseline.

    python tests/bench/relevance.py [--corpus vue-docs-en vue-docs-zh] [--sets headings titles …]
                                    [--rankers amem fts5] [--json] [--write-queries] [--also]

Each corpus under the shared corpora folder (or --corpora DIR) is copied into a temporary vault. Query
sets live in tests/bench/queries/ as JSON lines `{"query": …, "relevant": [note id, …]}`, named
`<corpus>.<set>.jsonl`:

- `headings`: every `## ` heading (its `{#anchor}` and inline markup dropped) whose relevant answer is the
  page that holds it; headings found on more than one page are dropped as generic.
- `titles`: every page title (the first `# ` heading), when no other page has the same title.
- `paraphrases`: hand-written questions whose answer is a given page, in other words than its headings.
- `heldout`: 30 more hand-written questions per language, written before the per-query fusion was tuned and
  never tuned on: the fair test of a ranking chosen on the sets above.

A third corpus ships in the repository, `tests/bench/corpora/hatch-docs` (Hatch's docs/, MIT; source in its
SOURCE.txt): `--corpora tests/bench/corpora --corpus hatch-docs`. Its `heldout` set (30 questions, one page
each) was written before any ranking was run on it; tests/bench/queries/README.md says how.

`--also` asks each query of a set with the agent's own wordings of it, from `<corpus>.<set>.expansions.jsonl`
(`{"query": …, "also": [keywords, a sentence the answer would hold]}`, written from the question alone
before any result was seen), as `amem search QUERY --also …` does; a set without that file is asked as
usual. Only the rankers that call search() take them (`amem`, `amem-semantic`, `search:MODEL`).

`--write-queries` derives the headings and titles sets from the corpus again (the paraphrases are written
by hand and never regenerated). Each ranker is a function query → note ids, best first; the table gives
MRR@10, recall@1 and recall@5 per corpus, set and ranker, and `--json` prints the same numbers as JSON.

Rankers: `amem` calls the public `amem.search.query.search()` on the vault (so it follows whatever engine
stands behind it), `amem-cli` runs the installed `amem search` per query (slow, whole process), and `fts5`
is stdlib sqlite3 FTS5 `bm25()` over id, title and body, with Chinese, Japanese and Korean text pre-split
into single characters and bigrams. Per model (`static`, `minilm`; also the loaders' own names):
`semantic:MODEL` ranks by the model alone, `fused:MODEL` fuses it with amem's keyword ranking per query
as search() does (amem.search.fusion), `search:MODEL` is search() itself with semantic search on and that
model, and `rrf:MODEL` at one constant weight for every query (--rrf-k,
--semantic-weight; default amem's former constants, k = 5 and 0.2). `minilm@256`, `minilm@128` and
`minilm@128w` are minilm with texts cut to 256 or 128 tokens, or split into 128-token windows (VARIANTS).
More rankers register through `RANKERS`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
QUERIES = HERE / "queries"
CORPORA = Path(os.environ.get("AMEM_CORPORA", "/work/shared/corpora"))
SETS = ("headings", "titles", "paraphrases", "heldout")
DEPTH = 10  # MRR@10: a relevant note below rank 10 scores 0

#: A ranker answers one query with note ids, best first (at least DEPTH of them when it can).
Ranker = Callable[[str], list[str]]
#: A ranker factory is handed the vault's folder and a scratch folder of its own.
Factory = Callable[[Path, Path], Ranker]

#: A heading's trailing anchor: `{#id}`, or the attribute-list form `## {: #id }` that some sites write.
_ANCHOR = re.compile(r"\s*(#+\s*)?\{:?\s*#[^}]*\}\s*$")
_TAG = re.compile(r"<[^>]+>")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_WORD = re.compile(r"\w+")


# --- corpus and queries ----------------------------------------------------------------------------------


def corpus_notes(root: Path) -> dict[str, str]:
    """Note id (path relative to the corpus, `/`-separated) → text, for every Markdown file."""
    return {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8") for p in sorted(root.rglob("*.md"))}


def clean_heading(text: str) -> str:
    """A heading as a user would type it: no `{#anchor}`, no HTML tags, no Markdown emphasis or code marks."""
    text = _ANCHOR.sub("", text)
    text = _TAG.sub(" ", text)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # [label](url) → label
    text = re.sub(r"[`*_]+", "", text)
    text = text.replace("\\", "")
    return " ".join(text.split())


def headings_of(text: str, level: int) -> list[str]:
    """The level-`level` ATX headings of a note, outside fenced code, cleaned."""
    from amem.notes.links import prose_lines
    from amem.notes.parse import parse_note

    marker = "#" * level + " "
    found = []
    for line in prose_lines(parse_note(text).body):
        if line.startswith(marker):
            heading = clean_heading(line[len(marker) :])
            if heading:
                found.append(heading)
    return found


def derive_queries(notes: dict[str, str]) -> dict[str, list[dict[str, Any]]]:
    """The headings and titles query sets of a corpus: texts unique to one page, each answered by that page."""
    sets: dict[str, list[dict[str, Any]]] = {}
    for name, level in (("headings", 2), ("titles", 1)):
        pages: dict[str, set[str]] = {}
        for note_id, text in notes.items():
            found = headings_of(text, level)
            for heading in found[:1] if level == 1 else found:
                pages.setdefault(heading.casefold(), set()).add(note_id)
        chosen = []
        seen: set[str] = set()
        for note_id, text in notes.items():
            found = headings_of(text, level)
            for heading in found[:1] if level == 1 else found:
                key = heading.casefold()
                if len(pages[key]) == 1 and key not in seen and _WORD.search(heading):
                    seen.add(key)
                    chosen.append({"query": heading, "relevant": [note_id]})
        sets[name] = chosen
    return sets


def query_file(corpus: str, name: str) -> Path:
    return QUERIES / f"{corpus}.{name}.jsonl"


def write_queries(corpus: str, sets: dict[str, list[dict[str, Any]]]) -> None:
    QUERIES.mkdir(parents=True, exist_ok=True)
    for name, queries in sets.items():
        with open(query_file(corpus, name), "w", encoding="utf-8") as handle:
            for query in queries:
                handle.write(json.dumps(query, ensure_ascii=False) + "\n")


def load_queries(corpus: str, name: str, notes: dict[str, str]) -> list[dict[str, Any]] | None:
    """One stored query set, or None when the corpus has none of that name. Every relevant id must exist."""
    path = query_file(corpus, name)
    if not path.exists():
        return None
    queries = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for query in queries:
        missing = [r for r in query["relevant"] if r not in notes]
        if missing:
            raise SystemExit(f"{path.name}: {query['query']!r} names notes the corpus lacks: {missing}")
    return queries


def make_vault(corpus_root: Path, into: Path) -> Path:
    """A writable copy of the corpus's Markdown files: the vault every ranker searches."""
    vault = into / "vault"
    for note_id, text in corpus_notes(corpus_root).items():
        target = vault / note_id
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return vault


# --- rankers ---------------------------------------------------------------------------------------------


def _isolated_env(scratch: Path) -> None:
    """Keep amem's cache, state and config for this vault inside the scratch folder, away from the user's."""
    for name in ("XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME"):
        os.environ[name] = str(scratch / name.lower())


def amem_config(vault: Path, scratch: Path, **overrides: Any) -> Any:
    """The Config amem would load for `vault`, with no user config files, plus `overrides` (fields of Config)."""
    from amem.config import load_config

    _isolated_env(scratch)
    config = load_config(cwd=vault, env={}, vault=vault)
    return config._replace(**overrides) if overrides else config


def search_ranker(config: Any, **options: Any) -> Ranker:
    """A ranker calling amem's public search() on `config`, with extra keyword `options` when given."""
    from amem.search.query import search

    def rank(query: str, also: Sequence[str] = ()) -> list[str]:
        extra: dict[str, Any] = {"also": also} if also else {}  # an amem without --also ranks the sets
        result = search(config, query, limit=DEPTH, **options, **extra)
        return [hit["id"] for hit in result["hits"]]

    return rank


def amem_library(vault: Path, scratch: Path) -> Ranker:
    return search_ranker(amem_config(vault, scratch))


def amem_cli(vault: Path, scratch: Path) -> Ranker:
    """The installed console script beside this interpreter, one process per query."""
    _isolated_env(scratch)
    amem = str(Path(sys.executable).parent / "amem")
    env = {**os.environ, "AMEM_VAULT": str(vault)}

    def rank(query: str) -> list[str]:
        done = subprocess.run(
            [amem, "search", "--limit", str(DEPTH), "--", query], capture_output=True, text=True, env=env, check=True
        )
        return [hit["id"] for hit in json.loads(done.stdout)["hits"]]

    return rank


def fts_terms(text: str) -> list[str]:
    """Words for the FTS5 baseline: NFKC and case folded; a run of CJK characters becomes its single
    characters and its bigrams, other text its Unicode word characters."""
    terms: list[str] = []
    for word in _WORD.findall(unicodedata.normalize("NFKC", text).casefold()):
        run: list[str] = []
        for char in word + " ":
            if _CJK.match(char):
                run.append(char)
                continue
            if run:
                terms.extend(run)
                terms.extend(a + b for a, b in zip(run, run[1:], strict=False))
                run = []
        rest = "".join(" " if _CJK.match(c) else c for c in word).split()
        terms.extend(rest)
    return terms


def fts_query_terms(text: str) -> list[str]:
    """A query's FTS5 terms: CJK runs as their bigrams (a lone character as itself), other words whole."""
    out: list[str] = []
    for term in fts_terms(text):
        if _CJK.match(term[0]) and len(term) == 1:
            continue
        out.append(term)
    if not out:  # the query was single CJK characters only
        out = fts_terms(text)
    return list(dict.fromkeys(out))


def fts5_baseline(vault: Path, scratch: Path) -> Ranker:
    """Plain SQLite FTS5: one row per note (id, title, body), unicode61 over pre-split text, bm25() ranking,
    query words OR-ed."""
    from amem.notes.parse import note_title, parse_note

    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE docs USING fts5(id, title, body, tokenize='unicode61')")
    ids: dict[int, str] = {}
    for rowid, (note_id, text) in enumerate(corpus_notes(vault).items(), start=1):
        parsed = parse_note(text, note_id)
        title = note_title(parsed.frontmatter, parsed.body, note_id)
        columns = (" ".join(fts_terms(note_id)), " ".join(fts_terms(title)), " ".join(fts_terms(parsed.body)))
        conn.execute("INSERT INTO docs (rowid, id, title, body) VALUES (?, ?, ?, ?)", (rowid, *columns))
        ids[rowid] = note_id
    conn.commit()

    def rank(query: str) -> list[str]:
        terms = fts_query_terms(query)
        if not terms:
            return []
        match = " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
        rows = conn.execute(
            "SELECT rowid FROM docs WHERE docs MATCH ? ORDER BY bm25(docs), rowid LIMIT ?", (match, DEPTH)
        ).fetchall()
        return [ids[row[0]] for row in rows]

    return rank


def amem_semantic(vault: Path, scratch: Path) -> Ranker:
    """amem's search() with semantic fusion on, as `amem search --semantic` runs it (the default model)."""
    return search_ranker(amem_config(vault, scratch), semantic=True)


#: Model names as a user's config gives them (`semantic.model`), and the loader's name for each in an amem
#: that has no such config key yet.
MODEL_ALIASES = {"static": "wordllama"}


#: Configurations of a transformer model to compare (`MODEL@VARIANT`): `@256` and `@128` cut every text to
#: that many tokens; `@128w` cuts none, but splits a text longer than 128 tokens into windows of 128 (each
#: embedded as a chunk of its own, the note scored by its best, as chunks are), so no text is dropped.
VARIANTS = ("@256", "@128", "@128w")


def load_model(model: str) -> Any:
    """The embedder for `model`, by the user's name where amem knows it, else by the loader's own; a
    VARIANTS suffix sets the tokens a text is cut to."""
    from amem.semantic import semantic

    model, _, variant = model.partition("@")
    known = getattr(semantic, "MODELS", {})
    embedder = semantic.load_embedder(model if model in known or model not in MODEL_ALIASES else MODEL_ALIASES[model])
    if variant:
        embedder.tokenizer.enable_truncation(int(variant.rstrip("w")))
    return embedder


def windowed(tokenizer: Any, size: int, split: Any) -> Any:
    """`split` (semantic.chunks) with each piece longer than `size` tokens (its [CLS] and [SEP] counted)
    cut, at token boundaries, into consecutive windows of `size` tokens."""

    def chunks(title: str, body: str) -> list[str]:
        out: list[str] = []
        for piece in split(title, body):
            tokenizer.no_truncation()
            encoding = tokenizer.encode(piece)
            tokenizer.enable_truncation(size)
            spans = [
                span
                for span, special in zip(encoding.offsets, encoding.special_tokens_mask, strict=True)
                if not special
            ]
            inner = size - 2
            if len(spans) <= inner:
                out.append(piece)
                continue
            for at in range(0, len(spans), inner):
                window = spans[at : at + inner]
                out.append(piece[window[0][0] : window[-1][1]])
        return out

    return chunks


class SemanticBench:
    """One vault's keyword index and semantic vectors of one model, for the rankers built on them."""

    def __init__(self, vault: Path, scratch: Path, model: str) -> None:
        from amem.index.index import VaultIndex
        from amem.report import Reporter
        from amem.semantic import semantic

        self.config = amem_config(vault, scratch)
        self.index = VaultIndex(self.config)
        self.index.refresh()
        self.model = model.partition("@")[0]
        self.embedder = load_model(model)
        split = semantic.chunks
        if model.endswith("w"):
            semantic.chunks = windowed(self.embedder.tokenizer, int(model.partition("@")[2][:-1]), split)
        try:
            semantic.sync(
                self.index.conn,
                self.embedder,
                semantic.index_stamps(self.index.conn),
                semantic.note_reader(self.config, self.index.conn),
                Reporter(),
            )
        finally:
            semantic.chunks = split

    def semantic(self, query: str) -> list[tuple[str, float]]:
        from amem.semantic import semantic

        return semantic.rank(self.index.conn, self.embedder, query)

    def keyword(self, query: str) -> list[tuple[str, float | None]]:
        """amem's keyword ranking (note id, score) as deep as fusion takes it."""
        from amem.search.query import search
        from amem.semantic.semantic import FUSION_DEPTH

        hits = search(self.config, query, limit=FUSION_DEPTH, semantic=False)["hits"]
        return [(hit["id"], hit["score"]) for hit in hits]

    def plan(self, query: str, keyword: list[tuple[str, float | None]], **constants: Any) -> Any:
        """The fusion search() would choose for `query` (with other constants, for a sweep)."""
        from amem.search import fusion
        from amem.semantic.semantic import ALIASES

        profile = fusion.profile_of(ALIASES.get(self.model, self.model), self.embedder)
        return fusion.decide(fusion.evidence(self.index.conn, query, keyword), profile, **constants)


def semantic_factory(model: str, mode: str) -> Factory:
    """A ranker over one embedding model: `semantic` alone; `fused` with amem's keyword ranking by the
    per-query fusion search() uses (amem.search.fusion); or `rrf`, the same fusion at one constant weight for
    every query (FUSION's k and weight: --rrf-k, --semantic-weight), the reference it replaced."""

    def factory(vault: Path, scratch: Path) -> Ranker:
        from amem.search import fusion

        if (vault, model) not in _BENCHES:  # one embedding of the vault for its semantic and fused rankers
            _BENCHES[(vault, model)] = SemanticBench(vault, scratch, model)
        bench = _BENCHES[(vault, model)]

        def rank(query: str) -> list[str]:
            found = bench.semantic(query)
            if mode == "semantic":
                return [note_id for note_id, _ in found[:DEPTH]]
            words = bench.keyword(query)
            plan = bench.plan(query, words)
            if mode == "rrf":
                plan = plan._replace(weight=FUSION["weight"], k=int(FUSION["k"]))
            return [note_id for note_id, _, _ in fusion.fuse(plan, words, found)][:DEPTH]

        return rank

    return factory


_BENCHES: dict[tuple[Path, str], SemanticBench] = {}


def search_factory(model: str) -> Factory:
    """search() itself, semantic search on with `model`, over the vectors its SemanticBench embedded."""

    def factory(vault: Path, scratch: Path) -> Ranker:
        from amem.search.query import search
        from amem.semantic.semantic import ALIASES

        if (vault, model) not in _BENCHES:
            _BENCHES[(vault, model)] = SemanticBench(vault, scratch, model)
        config = _BENCHES[(vault, model)].config._replace(semantic_model=ALIASES.get(model, model))
        status = search(config, "warm up", semantic=True)["semantic"]
        if status != "ok":
            raise SystemExit(f"search:{model}: semantic search is {status!r}, not 'ok'")
        return search_ranker(config, semantic=True)

    return factory


#: The fusion constant and semantic weight of the `rrf:` rankers (--rrf-k, --semantic-weight).
FUSION: dict[str, float] = {"k": 5, "weight": 0.2}

RANKERS: dict[str, Factory] = {
    "amem": amem_library,
    "amem-cli": amem_cli,
    "fts5": fts5_baseline,
    "amem-semantic": amem_semantic,
}
for _model in ("static", "minilm", "wordllama", *(f"minilm{v}" for v in VARIANTS)):
    for _mode in ("semantic", "fused", "rrf"):
        RANKERS[f"{_mode}:{_model}"] = semantic_factory(_model, _mode)
for _model in ("static", "minilm"):
    RANKERS[f"search:{_model}"] = search_factory(_model)


# --- measuring -------------------------------------------------------------------------------------------


def score(ranked: Sequence[str], relevant: Iterable[str]) -> tuple[float, float, float]:
    """(reciprocal rank within DEPTH, recall@1, recall@5) of one ranking."""
    wanted = set(relevant)
    top = list(ranked[:DEPTH])
    rr = next((1.0 / (i + 1) for i, note_id in enumerate(top) if note_id in wanted), 0.0)
    return rr, len(wanted & set(top[:1])) / len(wanted), len(wanted & set(top[:5])) / len(wanted)


def measure(rank: Ranker, queries: list[dict[str, Any]]) -> dict[str, float]:
    totals = [0.0, 0.0, 0.0]
    start = time.perf_counter()
    for query in queries:
        also = query.get("also")
        ranked = rank(query["query"], also) if also else rank(query["query"])  # type: ignore[call-arg]
        for i, value in enumerate(score(ranked, query["relevant"])):
            totals[i] += value
    elapsed = time.perf_counter() - start
    n = len(queries)
    return {
        "queries": n,
        "mrr@10": round(totals[0] / n, 4),
        "recall@1": round(totals[1] / n, 4),
        "recall@5": round(totals[2] / n, 4),
        "ms_per_query": round(1000 * elapsed / n, 2),
    }


def with_also(corpus: str, name: str, queries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The set's queries, each with its `also` from the set's expansions file (none: the set as it is)."""
    path = query_file(corpus, f"{name}.expansions")
    if not path.exists():
        return queries
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    also = {line["query"]: line["also"] for line in lines}
    unknown = [q["query"] for q in queries if q["query"] not in also]
    if unknown:
        raise SystemExit(f"{path.name} has no expansions for {unknown}")
    return [query | {"also": also[query["query"]]} for query in queries]


def run(
    corpora: Path, names: list[str], sets: list[str], rankers: list[str], rewrite: bool, also: bool = False
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for corpus in names:
        root = corpora / corpus
        notes = corpus_notes(root)
        if rewrite:
            write_queries(corpus, derive_queries(notes))
        loaded = {name: load_queries(corpus, name, notes) for name in sets}
        if also:
            loaded = {name: with_also(corpus, name, qs) if qs else qs for name, qs in loaded.items()}
        with tempfile.TemporaryDirectory(prefix="amem-relevance-") as tmp:
            vault = make_vault(root, Path(tmp))
            for ranker in rankers:
                scratch = Path(tmp) / ranker
                scratch.mkdir()
                built = time.perf_counter()
                rank = RANKERS[ranker](vault, scratch)
                rank("warm up")  # builds an index on first use: not part of any query's time
                build_s = round(time.perf_counter() - built, 3)
                for name, queries in loaded.items():
                    if queries:
                        asked = name + ("+also" if any(q.get("also") for q in queries) else "")
                        row = {"corpus": corpus, "set": asked, "ranker": ranker, "setup_s": build_s}
                        rows.append(row | measure(rank, queries))
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    columns = ["corpus", "set", "ranker", "queries", "mrr@10", "recall@1", "recall@5", "ms_per_query"]
    cells = [columns] + [[str(row[c]) for c in columns] for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() for line in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpora", type=Path, default=CORPORA, help="folder holding the corpora")
    parser.add_argument("--corpus", nargs="+", default=["vue-docs-en", "vue-docs-zh"])
    parser.add_argument("--sets", nargs="+", default=list(SETS), choices=SETS)
    parser.add_argument("--rankers", nargs="+", default=["amem", "fts5"])
    parser.add_argument("--json", action="store_true", help="print the rows as JSON instead of a table")
    parser.add_argument("--write-queries", action="store_true", help="derive headings and titles sets again")
    parser.add_argument("--also", action="store_true", help="ask each query with its set's expansions, if any")
    parser.add_argument("--rrf-k", type=int, help="fusion constant of the fused: rankers (default: amem's)")
    parser.add_argument("--semantic-weight", type=float, help="semantic weight of the fused: rankers")
    args = parser.parse_args(argv)
    try:
        from amem.semantic import semantic
    except ImportError:  # an amem without semantic ranking: only the keyword rankers can run
        pass
    else:
        FUSION["k"] = semantic.RRF_K if args.rrf_k is None else args.rrf_k
        FUSION["weight"] = semantic.SEMANTIC_WEIGHT if args.semantic_weight is None else args.semantic_weight
    unknown = [r for r in args.rankers if r not in RANKERS]
    if unknown:
        parser.error(f"unknown rankers {unknown}; known: {sorted(RANKERS)}")
    if not args.corpora.is_dir():
        sys.exit(f"no corpora folder at {args.corpora} (set --corpora or AMEM_CORPORA)")
    rows = run(args.corpora, args.corpus, args.sets, args.rankers, args.write_queries, args.also)
    print(json.dumps(rows, ensure_ascii=False, indent=2) if args.json else table(rows))


if __name__ == "__main__":
    main()
