"""`move_note` on random vaults: every link keeps its meaning with OLD replaced by NEW, and nothing but
link targets (and the `updated` stamp of a rewritten note) changes."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amem.config import load_config
from amem.vault.links import LinkResolver, link_spans
from amem.vault.notes import parse_note
from amem.vault.ops import move_note

FOLDERS = ["", "a/", "A/", "b/c/", "B/c/", "d/e/f/"]
NAMES = ["foo", "Foo", "bar", "caf\u00e9", "cafe\u0301", "x y"]
EXTENSIONS = (".md",)

note_ids = st.builds(lambda folder, name: f"{folder}{name}.md", st.sampled_from(FOLDERS), st.sampled_from(NAMES))


def spellings(note_id: str) -> list[str]:
    """Ways people write a link to `note_id`: path or suffix or base name, any case, either slash."""
    stem = note_id[:-3]
    parts = stem.split("/")
    forms = ["/".join(parts[i:]) for i in range(len(parts))]
    forms += [f + ".md" for f in forms]
    forms += [f.lower() for f in forms] + [f.upper() for f in forms]
    forms += [f.replace("/", "\\") for f in forms if "/" in f]
    return forms + ["missing", "a/missing"]


@st.composite
def link_text(draw: st.DrawFn, ids: list[str]) -> str:
    target = draw(st.sampled_from(spellings(draw(st.sampled_from(ids)))))
    suffix = draw(st.sampled_from(["", "#Heading", "#^blk1", "#Head ing|Alias", "|alias text"]))
    pipe = draw(st.sampled_from(["|", "\\|"])) if "|" in suffix else ""
    suffix = suffix.replace("|", pipe) if pipe else suffix
    return f"{draw(st.sampled_from(['', '!']))}[[{draw(st.sampled_from(['', ' ']))}{target}{suffix}]]"


@st.composite
def note_text(draw: st.DrawFn, ids: list[str]) -> str:
    pieces: list[str] = []
    for _ in range(draw(st.integers(0, 6))):
        link = draw(link_text(ids))
        kind = draw(st.sampled_from(["prose", "prose", "prose", "code span", "fence", "table"]))
        if kind == "prose":
            pieces.append(f"see {link} here.\n")
        elif kind == "code span":
            pieces.append(f"`{link}` and {link}\n")
        elif kind == "fence":
            pieces.append(f"```\n{link}\n```\n")
        else:
            pieces.append(f"| {link} | x |\n")
    body = "\n".join(pieces)
    head = draw(st.sampled_from(["", "---\ntitle: T\ntags: [x]\n---\n", "# Title\n"]))
    text = head + body
    return text.replace("\n", "\r\n") if draw(st.booleans()) else text


def skeleton(body: str) -> tuple[str, list[str]]:
    """The body with every link target cut out, and the targets."""
    spans = link_spans(body)
    out, at = [], 0
    for span in spans:
        out.append(body[at : span.target_start])
        at = span.target_end
    out.append(body[at:])
    return "\0".join(out), [span.link.target for span in spans]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_move_keeps_every_link_meaning(data: st.DataObject) -> None:
    ids = sorted(set(data.draw(st.lists(note_ids, min_size=2, max_size=7), label="ids")))
    old = data.draw(st.sampled_from(ids), label="old")
    new = data.draw(note_ids.filter(lambda i: i not in ids), label="new")
    texts = {note_id: data.draw(note_text(ids), label=note_id) for note_id in ids}
    with tempfile.TemporaryDirectory() as tmp:
        vault = Path(tmp) / "vault"
        for note_id, text in texts.items():
            path = vault / note_id
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text.encode("utf-8"))
        config = load_config(vault=str(vault))
        before = LinkResolver(ids, EXTENSIONS)

        result = move_note(config, old, new)

        after_ids = sorted([i for i in ids if i != old] + [new])
        after = LinkResolver(after_ids, EXTENSIONS)
        assert sorted(str(p.relative_to(vault)) for p in vault.rglob("*.md")) == after_ids
        rewritten = {entry["id"] for entry in result["rewritten"]}
        for note_id, text in texts.items():
            now_id = new if note_id == old else note_id
            now_text = (vault / now_id).read_bytes().decode("utf-8")
            if now_id not in rewritten:
                assert now_text == text
                continue
            old_note, new_note = parse_note(text), parse_note(now_text)
            assert {k: v for k, v in new_note.frontmatter.items() if k != "updated"} == old_note.frontmatter
            assert "updated" in new_note.frontmatter
            old_skeleton, old_targets = skeleton(old_note.body)
            new_skeleton, new_targets = skeleton(new_note.body)
            assert new_skeleton == old_skeleton  # no byte outside the link targets changed
            changed = 0
            for was_target, now_target in zip(old_targets, new_targets, strict=True):
                was = before.resolve(was_target)
                now = after.resolve(now_target)
                changed += was_target != now_target
                if was is None:
                    assert now in (None, new), (was_target, now_target)
                    assert now_target == was_target
                else:
                    assert now == (new if was == old else was), (was_target, now_target)
                if was == old and was_target != now_target and "/" not in was_target:
                    # a base name stays a base name when the new one resolves uniquely
                    name = new.rsplit("/", 1)[-1]
                    if after.ranked(name[:-3] if not was_target.lower().endswith(".md") else name) == [new]:
                        assert "/" not in now_target, (was_target, now_target)
            entry = next(e for e in result["rewritten"] if e["id"] == now_id)
            assert entry["links"] == changed > 0
