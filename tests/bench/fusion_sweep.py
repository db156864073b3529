"""The sweep that chose amem.search.fusion's constants: MRR@10 per query set for each semantic weight per kind
of evidence, on the tuning sets only (headings, titles, paraphrases; never the held-out questions).

    python tests/bench/fusion_sweep.py --model static [--corpus vue-docs-en vue-docs-zh] [--json]
    python tests/bench/fusion_sweep.py --model minilm --choose [--folds 5]

Each query's keyword ranking, semantic ranking and evidence are computed once; the fusion of every candidate
weight is then scored from them. The evidence decides a query's kind (fusion.decide, at each MARGIN tried),
and a kind's weight moves only the queries of that kind, so the table gives, per kind and per candidate
weight, the MRR@10 of every set with the other kinds at the chosen constants.

`--choose` is how the weights are chosen, without looking at the held-out sets: the tuning queries are split
into FOLDS folds (every set split alike: query i of a set in fold i mod FOLDS); for each fold and each kind
of evidence, the weight that maximises the macro-average MRR@10 of the other folds (each set weighing the
same, so 530 headings do not drown 48 paraphrases), the smallest weight within FLAT of that maximum (the
flattest, most conservative optimum); the weight chosen is the median of the folds' choices. A kind's weight
moves only the queries of that kind, so the kinds are chosen independently (MARGIN and k as they are). It
prints the folds' choices, the cross-validated macro MRR@10 (each fold scored with the weights chosen
without it) beside keywords alone, and the report of every set, held-out included, at the chosen weights.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import relevance  # noqa: E402

TUNING_SETS = ("headings", "titles", "paraphrases")
CANDIDATES = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0)
MARGINS = (1.3, 1.6, 2.0, 3.0, float("inf"))
KS = (5, 10)
FOLDS = 5
#: A weight whose macro MRR@10 is within this of the best counts as optimal: the smallest such is chosen.
FLAT = 0.002


def collect(corpus: str, model: str, keep: Path | None = None) -> list[dict[str, Any]]:
    """Per query of the tuning and held-out sets: its set, relevant ids, keyword and semantic rankings,
    evidence. With `keep`, the vault copy and its index (vectors too) stay there for the next run."""
    root = relevance.CORPORA / corpus
    notes = relevance.corpus_notes(root)
    out = []
    with tempfile.TemporaryDirectory(prefix="amem-sweep-") as tmp:
        base = Path(tmp) if keep is None else keep / corpus
        vault = base / "vault" if (base / "vault").is_dir() else relevance.make_vault(root, base)
        scratch = base / f"scratch-{model}"
        scratch.mkdir(parents=True, exist_ok=True)
        bench = relevance.SemanticBench(vault, scratch, model)
        for name in (*TUNING_SETS, "heldout"):
            for query in relevance.load_queries(corpus, name, notes) or []:
                words = bench.keyword(query["query"])
                plan = bench.plan(query["query"], words)
                out.append(
                    {
                        "set": name,
                        "query": query["query"],
                        "relevant": query["relevant"],
                        "keyword": words,
                        "semantic": bench.semantic(query["query"]),
                        "plan": plan,
                    }
                )
    return out


def reciprocal(query: dict[str, Any], weight: float, k: int) -> float:
    from amem.search import fusion

    plan = query["plan"]._replace(weight=weight, k=k)
    ranked = [note_id for note_id, _, _ in fusion.fuse(plan, query["keyword"], query["semantic"])]
    return relevance.score(ranked, query["relevant"])[0]


def kind(query: dict[str, Any], margin: float, weights: dict[str, float]) -> tuple[str, float]:
    """The query's kind of evidence at `margin`, and its weight under `weights` (capped for its script)."""
    from amem.search import fusion

    plan = fusion.decide(query["plan"].evidence, query["profile"], weights=weights, margin=margin)
    return str(plan.why), float(plan.weight)


def gather(corpora: list[str], model: str, cache: Path | None) -> list[dict[str, Any]]:
    """Every tuning query's rankings and evidence, from `cache` (a pickle of an earlier run) when given and
    present, else computed (and stored there)."""
    import pickle

    if cache is not None and cache.exists():
        with open(cache, "rb") as handle:
            return list(pickle.load(handle))
    queries = []
    for corpus in corpora:
        for query in collect(corpus, model, None if cache is None else cache.parent):
            query["corpus"] = corpus
            queries.append(query)
    if cache is not None:
        with open(cache, "wb") as handle:
            pickle.dump(queries, handle)
    return queries


def sets_of(queries: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return sorted({(q["corpus"], q["set"]) for q in queries})


def report(queries: list[dict[str, Any]], sets: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """Per set, held-out included: MRR@10 of keywords alone, the model alone, the per-query fusion (with
    recall@1 / recall@5) and the constant fusion it replaced (k = 5, 0.2), as relevance.py's amem,
    semantic:, fused: and rrf: rankers give them."""
    from amem.search import fusion

    rows = []
    for ranker in ("keyword", "semantic", "fused", "rrf"):
        sums: dict[tuple[str, str], list[float]] = {s: [0.0, 0.0, 0.0, 0.0] for s in sets}
        for q in queries:
            if ranker == "keyword":
                ranked = [note_id for note_id, _ in q["keyword"]]
            elif ranker == "semantic":
                ranked = [note_id for note_id, _ in q["semantic"]]
            else:
                plan = q["plan"] if ranker == "fused" else q["plan"]._replace(weight=0.2, k=5)
                plan = fusion.decide(plan.evidence, q["profile"]) if ranker == "fused" else plan
                ranked = [note_id for note_id, _, _ in fusion.fuse(plan, q["keyword"], q["semantic"])]
            cell = sums[(q["corpus"], q["set"])]
            for i, value in enumerate(relevance.score(ranked, q["relevant"])):
                cell[i] += value
            cell[3] += 1
        for (corpus, name), (rr, r1, r5, n) in sums.items():
            rows.append(
                {
                    "report": ranker,
                    "set": f"{corpus}.{name}",
                    "mrr@10": round(rr / n, 4),
                    "recall@1": round(r1 / n, 4),
                    "recall@5": round(r5 / n, 4),
                }
            )
    return rows


def sweep(corpora: list[str], model: str, cache: Path | None = None) -> dict[str, Any]:
    from amem.index import fusion, semantic

    everything = gather(corpora, model, cache)
    queries = [query for query in everything if query["set"] in TUNING_SETS]  # never tuned on the held-out
    for query in everything:
        query["profile"] = fusion.profile_of(semantic.ALIASES.get(model, model), None)
    # rr[i][(k, w)]: each query's reciprocal rank at every candidate weight (and cap) and k
    weights = sorted({*CANDIDATES, *(cap for q in queries for cap in q["profile"].scripts.values() if cap < 1e9)})
    rr = [{(k, w): reciprocal(q, w, k) for k in KS for w in weights} for q in queries]
    sets = sorted({(q["corpus"], q["set"]) for q in queries})

    def table(weights: dict[str, float], margin: float, k: int) -> dict[str, float]:
        sums = {s: [0.0, 0] for s in sets}
        for q, r in zip(queries, rr, strict=True):
            cell = sums[(q["corpus"], q["set"])]
            cell[0] += r[(k, kind(q, margin, weights)[1])]
            cell[1] += 1
        return {f"{c}.{s}": round(v[0] / v[1], 4) for (c, s), v in sums.items()}

    chosen = dict(queries[0]["profile"].weights)
    rows: list[dict[str, Any]] = [
        {"vary": "keywords", "value": 0, **table(dict.fromkeys(chosen, 0.0), fusion.MARGIN, fusion.RRF_K)}
    ]
    rows.append({"vary": "chosen", "value": "", **table(chosen, fusion.MARGIN, fusion.RRF_K)})
    for name in chosen:
        if name == "script":
            continue
        for w in CANDIDATES:
            rows.append({"vary": name, "value": w, **table({**chosen, name: w}, fusion.MARGIN, fusion.RRF_K)})
    for margin in MARGINS:
        rows.append({"vary": "MARGIN", "value": margin, **table(chosen, margin, fusion.RRF_K)})
    for k in KS:
        rows.append({"vary": "k", "value": k, **table(chosen, fusion.MARGIN, k)})
    for w in CANDIDATES:  # the constant fusion it replaces: one weight for every query
        rows.append({"vary": "constant", "value": w, **table(dict.fromkeys(chosen, w), fusion.MARGIN, fusion.RRF_K)})
    rows += report(everything, sets_of(everything))
    counts: dict[str, int] = {}
    for q in queries:
        label = f"{q['corpus']}.{q['set']}.{kind(q, fusion.MARGIN, chosen)[0]}"
        counts[label] = counts.get(label, 0) + 1
    return {"model": model, "rows": rows, "kinds": counts}


def choose(corpora: list[str], model: str, cache: Path | None, folds: int = FOLDS) -> dict[str, Any]:
    """The weights per kind of evidence chosen by cross-validation on the tuning sets (see the docstring)."""
    import statistics

    from amem.index import fusion, semantic

    everything = gather(corpora, model, cache)
    profile = fusion.profile_of(semantic.ALIASES.get(model, model), None)
    for query in everything:
        query["profile"] = profile
    tuning = [q for q in everything if q["set"] in TUNING_SETS]
    sizes: dict[tuple[str, str], int] = {}
    for q in tuning:
        key = (q["corpus"], q["set"])
        q["fold"] = sizes.get(key, 0) % folds
        sizes[key] = sizes.get(key, 0) + 1
    kinds = {id(q): kind(q, fusion.MARGIN, profile.weights)[0] for q in tuning}
    caps = {id(q): profile.scripts.get(q["plan"].evidence.script, 0.0) for q in tuning}
    rr = {id(q): {w: reciprocal(q, min(w, caps[id(q)]), fusion.RRF_K) for w in CANDIDATES} for q in tuning}

    def macro(name: str, weight: float, within: list[int]) -> float:
        """The contribution of kind `name`'s queries in folds `within` at `weight` to the sum over sets of
        their MRR@10 within those folds (the macro average × the number of sets)."""
        shares = {key: sum(1 for i in range(size) if i % folds in within) for key, size in sizes.items()}
        total = 0.0
        for q in tuning:
            if q["fold"] in within and kinds[id(q)] == name:
                total += rr[id(q)][weight] / shares[(q["corpus"], q["set"])]
        return total

    chosen: dict[str, float] = {"script": 0.0}
    per_fold: dict[str, list[float]] = {}
    for name in profile.weights:
        if name == "script":
            continue
        picks = []
        for fold in range(folds):
            others = [f for f in range(folds) if f != fold]
            scores = {w: macro(name, w, others) for w in CANDIDATES}
            best = max(scores.values())
            picks.append(min(w for w, value in scores.items() if value >= best - FLAT * len(sizes)))
        per_fold[name] = picks
        chosen[name] = min(CANDIDATES, key=lambda w: abs(w - statistics.median(picks)))
    cv = {"keywords": 0.0, "chosen": 0.0}
    for fold in range(folds):  # each fold scored with the weights its own choice saw nothing of
        for name, picks in per_fold.items():
            cv["chosen"] += macro(name, picks[fold], [fold]) / folds
            cv["keywords"] += macro(name, 0.0, [fold]) / folds
    for q in everything:
        q["profile"] = profile._replace(weights=chosen)
    return {
        "model": model,
        "folds": per_fold,
        "chosen": chosen,
        "cv_macro_gain": round((cv["chosen"] - cv["keywords"]) / len(sizes), 4),
        "rows": report(everything, sets_of(everything)),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="static")
    parser.add_argument("--corpus", nargs="+", default=["vue-docs-en", "vue-docs-zh"])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--cache", type=Path, help="keep the rankings in this file and read them from it")
    parser.add_argument("--choose", action="store_true", help="choose the weights by cross-validation")
    parser.add_argument("--folds", type=int, default=FOLDS)
    args = parser.parse_args(argv)
    if args.choose:
        picked = choose(args.corpus, args.model, args.cache, args.folds)
        if args.json:
            print(json.dumps(picked, indent=1))
            return
        print("folds:", json.dumps(picked["folds"]), "\nchosen:", json.dumps(picked["chosen"]))
        print("cross-validated macro MRR@10 gain over keywords alone:", picked["cv_macro_gain"])
        for row in picked["rows"]:
            print(row["report"], row["set"], row["mrr@10"], row["recall@1"], row["recall@5"])
        return
    found = sweep(args.corpus, args.model, args.cache)
    if args.json:
        print(json.dumps(found, indent=1))
        return
    rows = [row for row in found["rows"] if "vary" in row]
    columns = list(rows[0])
    print("  ".join(c.replace("vue-docs-", "") for c in columns))
    for row in rows:
        print("  ".join(str(row[c]) for c in columns))
    for row in found["rows"]:
        if "report" in row:
            print(row["report"], row["set"], row["mrr@10"], row["recall@1"], row["recall@5"])
    print(json.dumps(found["kinds"], indent=1))


if __name__ == "__main__":
    main()
