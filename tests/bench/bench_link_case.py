"""Share of links that resolve, and resolve to the note meant, in a vault whose links are written the
way people write them: mostly as the file is named, often in lower case or another case
(`[[internal links]]` for `Internal links.md`), sometimes in Unicode NFD (macOS input) or through a
folder path typed in another case; a few are dangling on purpose and must stay unresolved.

Uses the `amem` importable from this interpreter (set PYTHONPATH to another checkout's `cli/` to
measure that one), so the same script measures before and after:

    python tests/bench/bench_link_case.py [--notes 2000] [--seed 0]
    PYTHONPATH=/path/to/other/cli python tests/bench/bench_link_case.py
"""

from __future__ import annotations

import argparse
import random
import time
import unicodedata

import amem
from amem.notes.links import LinkResolver

_WORDS = (
    "internal",
    "links",
    "graph",
    "view",
    "embed",
    "files",
    "canvas",
    "daily",
    "notes",
    "sync",
    "publish",
    "plugins",
    "hotkeys",
    "themes",
    "café",
    "résumé",
    "über",
    "niño",
    "señal",
    "naïve",
    "Zürich",
    "São Paulo",
    "用户认证",
    "搜索索引",
)
_FOLDERS = ("Getting started", "Editing and formatting", "Linking notes", "Plugins", "Références")


def _name(rng: random.Random) -> str:
    words = rng.sample(_WORDS, rng.randint(1, 3))
    first, *rest = words
    return " ".join([first[:1].upper() + first[1:], *rest])  # sentence case, as Obsidian's help vault


def _spell(rng: random.Random, note_id: str) -> tuple[str, str]:
    """A link target for `note_id` and the way it was written."""
    folder, _, name = note_id[:-3].rpartition("/")
    roll = rng.random()
    if roll < 0.55:
        return name, "as named"
    if roll < 0.80:
        return name.lower(), "lower case"
    if roll < 0.85:
        return name.title(), "title case"
    if roll < 0.90:
        return unicodedata.normalize("NFD", name), "NFD"
    if roll < 0.95:
        return f"{folder.lower()}/{name}" if folder else name.upper(), "folder in another case"
    return name.upper(), "upper case"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=int, default=2000)
    parser.add_argument("--links", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    ids: list[str] = []
    seen: set[str] = set()
    while len(ids) < args.notes:
        note_id = f"{rng.choice(_FOLDERS)}/{_name(rng)} {len(ids)}.md"
        if unicodedata.normalize("NFC", note_id).casefold() not in seen:
            seen.add(unicodedata.normalize("NFC", note_id).casefold())
            ids.append(note_id)
    links = []
    for _ in range(args.links):
        if rng.random() < 0.03:
            links.append((f"Missing {rng.randrange(10**6)}", None, "dangling"))
            continue
        note_id = rng.choice(ids)
        target, kind = _spell(rng, note_id)
        links.append((target, note_id, kind))

    start = time.perf_counter()
    resolver = LinkResolver(ids, (".md",))
    resolved = [resolver.resolve(target) for target, _, _ in links]
    took = time.perf_counter() - start
    meant = [link for link in links if link[1] is not None]
    ok = sum(1 for (_, want, _), got in zip(links, resolved, strict=True) if want is not None and got == want)
    wrong = sum(1 for (_, want, _), got in zip(links, resolved, strict=True) if got is not None and got != want)
    print(f"amem {amem.__version__} from {amem.__file__}")
    print(f"{len(ids)} notes, {len(links)} links ({len(links) - len(meant)} dangling on purpose)")
    print(f"resolved to the note meant: {ok}/{len(meant)} = {100 * ok / len(meant):.1f} %")
    print(f"resolved to another note (or a dangling one resolved): {wrong}")
    by_kind: dict[str, list[int]] = {}
    for (_, want, kind), got in zip(links, resolved, strict=True):
        tally = by_kind.setdefault(kind, [0, 0])
        tally[0] += 1
        tally[1] += got == want
    for kind, (total, good) in sorted(by_kind.items()):
        print(f"  {kind:24} {good:6}/{total:<6} {100 * good / total:5.1f} %")
    print(f"build + resolve: {took * 1000:.0f} ms")


if __name__ == "__main__":
    main()
