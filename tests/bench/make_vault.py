"""A synthetic vault for benchmarks: N Markdown notes with frontmatter, [[links]], some Chinese text and
nested folders, deterministic for a given seed.

Word frequencies follow a Zipf-like curve so that queries can pick common and rare words, and every
generated word appears in a known list (`VOCABULARY`) that benchmarks draw queries from.

    python tests/bench/make_vault.py DIR N [--seed S]
"""

from __future__ import annotations

import argparse
import itertools
import random
from pathlib import Path

_SYLLABLES = (
    "ka",
    "lo",
    "mi",
    "ne",
    "ru",
    "ta",
    "shi",
    "vo",
    "ze",
    "qua",
    "bri",
    "dor",
    "fen",
    "gal",
    "hux",
    "jin",
    "mar",
    "pel",
    "sot",
    "wex",
)
#: Stop words are in nearly every note; topic words sit at mid ranks (see `vocabulary`), as in a real vault.
_STOPWORDS = ("the", "and", "of", "to", "in", "is", "for", "with", "on", "that", "it", "as")
_TOPICS = (
    "auth",
    "token",
    "session",
    "cache",
    "index",
    "search",
    "memory",
    "agent",
    "commit",
    "hook",
    "config",
    "vault",
    "note",
    "link",
    "query",
    "server",
    "client",
    "request",
    "authentication",
    "authorization",
    "database",
    "migration",
    "deploy",
    "release",
    "review",
    "error",
    "retry",
    "timeout",
    "latency",
    "schema",
    "python",
    "rust",
    "shell",
    "script",
)
_CHINESE = (
    "用户认证令牌",
    "搜索索引",
    "会话缓存",
    "数据库迁移",
    "部署发布",
    "代码审查",
    "错误重试",
    "记忆工具",
    "双向链接",
    "配置文件",
    "性能测试",
    "中文分词",
    "超时处理",
    "日志记录",
)
_FOLDERS = ("projects", "people", "daily", "notes", "research", "ops", "design", "meetings")
_TAGS = ("auth", "infra", "perf", "search", "ui", "db", "todo", "idea", "bug", "doc")


def _made_up_words(rng: random.Random, count: int) -> list[str]:
    words: set[str] = set()
    while len(words) < count:
        words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))))
    ordered = sorted(words)  # sets iterate in hash order, which changes between runs
    rng.shuffle(ordered)  # so that frequency rank is unrelated to spelling
    return ordered


def vocabulary(seed: int = 0) -> list[str]:
    """Every Latin word the generator uses, most frequent first."""
    rng = random.Random(f"vocabulary-{seed}")
    made_up = _made_up_words(rng, 4000)
    # Topic words at ranks 20, 40, 60, …: the first is in about half the notes, the last in a few percent.
    words = [*_STOPWORDS, *made_up[:8]]
    rest = iter(made_up[8:])
    for topic in _TOPICS:
        words.append(topic)
        words.extend(next(rest) for _ in range(19))
    words.extend(rest)
    return words


VOCABULARY = vocabulary()


def note_ids(n: int, seed: int = 0) -> list[str]:
    """The vault-relative ids `make_vault(root, n, seed)` creates, in creation order."""
    rng = random.Random(f"ids-{seed}")
    ids = []
    for i in range(n):
        top = rng.choice(_FOLDERS)
        depth = rng.randint(0, 2)
        parts = [top, *(f"{top[:3]}{rng.randint(0, 9)}" for _ in range(depth))]
        ids.append(f"{'/'.join(parts)}/note-{i:06d}.md")
    return ids


def _sentence(rng: random.Random, words: list[str], cum_weights: list[float]) -> str:
    chosen = rng.choices(words, cum_weights=cum_weights, k=rng.randint(6, 16))
    if rng.random() < 0.15:
        chosen.insert(rng.randrange(len(chosen) + 1), rng.choice(_CHINESE))
    return " ".join(chosen).capitalize() + "."


def render(i: int, ids: list[str], rng: random.Random, words: list[str], cum_weights: list[float]) -> str:
    """One note's text."""
    title_words = rng.choices(words, cum_weights=cum_weights, k=rng.randint(2, 5))
    if rng.random() < 0.1:
        title_words.append(rng.choice(_CHINESE))
    title = " ".join(title_words).title()
    lines = [
        "---",
        f"title: {title}",
        f"tags: [{', '.join(rng.sample(_TAGS, rng.randint(1, 3)))}]",
        f"created: 2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
    ]
    if rng.random() < 0.05:
        lines.append(f"expires: 20{rng.randint(20, 35)}-01-01")
    lines += ["---", f"# {title}", ""]
    for _ in range(rng.randint(2, 6)):
        paragraph = " ".join(_sentence(rng, words, cum_weights) for _ in range(rng.randint(1, 4)))
        if rng.random() < 0.6:
            # Links point mostly to nearby notes (locality, like real vaults) and sometimes anywhere.
            near = rng.random() < 0.7
            j = min(len(ids) - 1, max(0, i + rng.randint(-50, 50))) if near else rng.randrange(len(ids))
            target = ids[j].rsplit("/", 1)[-1][:-3] if rng.random() < 0.7 else ids[j][:-3]
            paragraph += f" See [[{target}]]."
        lines += [paragraph, ""]
    if rng.random() < 0.1:
        lines += ["```python", "print('[[not-a-link]]')", "```", ""]
    return "\n".join(lines)


def make_vault(root: Path, n: int, seed: int = 0) -> list[str]:
    """Write `n` notes under `root` (created if needed); returns their ids. Same seed, same bytes."""
    rng = random.Random(seed)
    ids = note_ids(n, seed)
    words = vocabulary(seed)
    cum_weights = list(itertools.accumulate(1.0 / (rank + 1) ** 1.05 for rank in range(len(words))))
    root = Path(root)
    made: set[Path] = set()
    for i, note_id in enumerate(ids):
        path = root / note_id
        if path.parent not in made:
            path.parent.mkdir(parents=True, exist_ok=True)
            made.add(path.parent)
        path.write_text(render(i, ids, rng, words, cum_weights), encoding="utf-8")
    return ids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", type=Path)
    parser.add_argument("n", type=int)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    make_vault(args.dir, args.n, args.seed)


if __name__ == "__main__":
    main()
