"""The note merge keeps edits in place: an edit on one machine and an append on another merge cleanly with
the edit under the heading it was made under; only whole appended `## <timestamp>` sections move."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amem.gitvault.merge import merge_texts
from tests.gitrepo import clone, commit_all, git
from tests.test_sync import amem, identity, sync  # noqa: F401  (fixtures used by name)

PLAN = "## Decisions\n\n- use postgres\n\n## Done\n\n- set up repo\n"


def write(vault: Path, note: str, content: str) -> None:
    proc = amem(vault, "write", note, content)
    assert proc.returncode == 0, proc.stderr


def edit(vault: Path, note: str, old: str, new: str) -> None:
    """A hand edit of the file, as a user's editor makes it."""
    path = vault / f"{note}.md"
    text = path.read_text()
    assert text.count(old) == 1
    path.write_text(text.replace(old, new))


def heading_of(text: str, line: str) -> str:
    """The nearest `## ` heading above the (only) line `line`."""
    lines = text.splitlines()
    assert lines.count(line) == 1, text
    above = [x for x in lines[: lines.index(line)] if x.startswith("## ")]
    return above[-1] if above else ""


def two_machines(origin: Path, tmp_path: Path, content: str) -> tuple[Path, Path]:
    a, b = clone(origin, tmp_path / "a"), clone(origin, tmp_path / "b")
    write(a, "plan", content)
    sync(a)
    sync(b)
    return a, b


def settle(a: Path, b: Path) -> str:
    """Both machines synced until they hold the same note; that note."""
    for machine in (a, b, a):
        assert sync(machine)["conflicts"] == []
    text = (a / "plan.md").read_text()
    assert (b / "plan.md").read_text() == text
    return text


# --- the filed scenario, through real clones and `amem sync` --------------------------------------


@pytest.mark.parametrize("editor_first", [True, False], ids=["edit-then-append", "append-then-edit"])
def test_an_edited_line_stays_under_its_heading_when_the_other_machine_appends(
    remote: Path,
    tmp_path: Path,
    editor_first: bool,
) -> None:
    a, b = two_machines(remote, tmp_path, PLAN)
    edit(a, "plan", "- use postgres\n", "- use postgres 16\n")
    write(b, "plan", "appended on B")
    first, second = (a, b) if editor_first else (b, a)
    sync(first)
    assert sync(second)["conflicts"] == []
    text = settle(a, b)
    assert "## Decisions\n\n- use postgres 16\n\n## Done\n\n- set up repo\n" in text
    assert heading_of(text, "- use postgres 16") == "## Decisions"
    assert heading_of(text, "appended on B").startswith("## 20")  # its own timestamp section, at the end
    assert text.rstrip().endswith("appended on B") and "- use postgres\n" not in text


@pytest.mark.parametrize("inserter_first", [True, False], ids=["insert-then-append", "append-then-insert"])
def test_a_paragraph_inserted_mid_note_stays_where_it_was_inserted(
    remote: Path,
    tmp_path: Path,
    inserter_first: bool,
) -> None:
    a, b = two_machines(remote, tmp_path, PLAN)
    edit(b, "plan", "- use postgres\n", "- use postgres\n\nwhy: the team knows it\n")
    write(a, "plan", "appended on A")
    first, second = (b, a) if inserter_first else (a, b)
    sync(first)
    assert sync(second)["conflicts"] == []
    text = settle(a, b)
    assert "## Decisions\n\n- use postgres\n\nwhy: the team knows it\n\n## Done\n" in text
    assert text.count("why: the team knows it") == 1 and text.rstrip().endswith("appended on A")


def test_an_edit_inside_a_timestamp_section_stays_in_that_section(remote: Path, tmp_path: Path) -> None:
    a, b = two_machines(remote, tmp_path, "first line\n\nsecond line\n\nthird line")
    edit(a, "plan", "second line\n", "second line, edited\n")
    edit(a, "plan", "first line\n", "first line\n\ninserted by A\n")
    # An append within the second the note was written in shares its heading: wait for the next one.
    time.sleep(1 - time.time() % 1 + 0.01)
    write(b, "plan", "appended on B")
    sync(a)
    assert sync(b)["conflicts"] == []
    text = settle(a, b)
    section = heading_of(text, "first line")
    assert section.startswith("## 20")
    body = text.split(section, 1)[1]
    assert body.startswith("\n\nfirst line\n\ninserted by A\n\nsecond line, edited\n\nthird line\n\n## ")
    assert text.rstrip().endswith("appended on B")


def test_the_same_line_edited_on_both_machines_is_a_conflict_that_keeps_both(remote: Path, tmp_path: Path) -> None:
    a, b = two_machines(remote, tmp_path, PLAN)
    edit(a, "plan", "- use postgres\n", "- use postgres 16\n")
    edit(b, "plan", "- use postgres\n", "- use sqlite\n")
    sync(a)
    result = sync(b)
    assert result["conflicts"] == ["plan.md"]
    assert "- use sqlite\n" in (b / "plan.md").read_text()  # ours stays at the path
    copies = list(b.glob("plan.conflict-*.md"))
    assert len(copies) == 1 and "- use postgres 16\n" in copies[0].read_text()  # theirs beside it
    assert json.loads(amem(b, "read", "plan").stdout)["conflict"] is True


# --- a plain `git pull` runs the same rules through the registered driver ----------------------------


def pull(repo: Path) -> subprocess.CompletedProcess[str]:
    argv = ["git", "-c", "pull.rebase=false", "pull", "-q", "--no-edit", "origin", "HEAD"]
    return subprocess.run(argv, cwd=repo, capture_output=True, text=True, check=False)


def test_a_plain_git_pull_keeps_an_edit_in_place_and_marks_a_real_conflict(remote: Path, tmp_path: Path) -> None:
    a, b = two_machines(remote, tmp_path, PLAN)
    assert "amem.gitvault.merge" in git(b, "config", "merge.amem.driver")
    edit(a, "plan", "- use postgres\n", "- use postgres 16\n")
    sync(a)
    write(b, "plan", "appended on B")
    commit_all(b, "B's append")
    assert pull(b).returncode == 0
    text = (b / "plan.md").read_text()
    assert heading_of(text, "- use postgres 16") == "## Decisions" and "<<<<<<<" not in text
    assert heading_of(text, "appended on B").startswith("## 20")
    git(b, "push", "-q", "origin", "HEAD")

    sync(a)
    edit(a, "plan", "- set up repo\n", "- set up repo on A\n")
    sync(a)
    edit(b, "plan", "- set up repo\n", "- set up repo on B\n")
    commit_all(b, "B's edit")
    proc = pull(b)
    assert proc.returncode != 0
    text = (b / "plan.md").read_text()
    assert "<<<<<<<" in text and "- set up repo on A" in text and "- set up repo on B" in text
    assert "appended on B" in text and "- use postgres 16" in text
    assert "plan.md" in git(b, "diff", "--name-only", "--diff-filter=U")


# --- the driver's rules, directly ------------------------------------------------------------------


def test_two_machines_appending_in_the_same_second_after_an_edit_do_not_conflict() -> None:
    stamp = "## 2026-01-01T00:00:05+00:00"
    base = f"intro\n\n{stamp}\n\nx\n\ny\n"
    ours = f"intro, edited\n\n{stamp}\n\nx\n\ny\n\na-1\n"
    theirs = f"intro\n\n{stamp}\n\nx\n\ny\n\nb-1\n"
    clean, merged = merge_texts(base, ours, theirs)
    assert clean and merged.startswith(f"intro, edited\n\n{stamp}\n\nx\n\ny\n\n")
    assert merged.count("a-1") == merged.count("b-1") == 1
    assert merge_texts(base, theirs, ours) == (True, merged)  # the same note on both machines


def test_three_machines_appending_in_the_same_second_never_conflict() -> None:
    """C's append reached A and B before they merged each other: relative to C's version, each of A and B
    added a paragraph before C's, at the same place. Both additions are kept, nothing conflicts."""
    start, stamp = "intro\n", "## 2026-01-01T00:00:00+00:00"
    c, a, b = (f"{start}\n{stamp}\n\n{m}-1\n" for m in "cab")
    clean_a, a_with_c = merge_texts(start, a, c)
    clean_b, b_with_c = merge_texts(start, b, c)
    assert clean_a and clean_b
    clean, merged = merge_texts(c, a_with_c, b_with_c)
    assert clean and merged == f"{start}\n{stamp}\n\na-1\n\nb-1\n\nc-1\n"
    assert merge_texts(c, b_with_c, a_with_c) == (True, merged)


def test_an_edit_next_to_text_the_other_side_deleted_elsewhere_merges_by_lines() -> None:
    base = "## Decisions\n\n- one\n\n- two\n\n- three\n"
    clean, merged = merge_texts(base, base.replace("- one", "- ONE"), base.replace("\n- three\n", "\n"))
    assert clean and merged == "## Decisions\n\n- ONE\n\n- two\n"


def test_a_section_one_side_removed_while_the_other_appended_to_it_is_a_conflict() -> None:
    stamp = "## 2026-01-01T00:00:05+00:00"
    base = f"intro\n\n{stamp}\n\nx\n"
    clean, merged = merge_texts(base, "intro\n", f"{base}\nappended in the same second\n")
    assert not clean
    assert "appended in the same second" in merged and "<<<<<<<" in merged


# --- random histories on two or three machines ---------------------------------------------------------

ITEM = re.compile(r"^([a-c]-\d+|[a-c]i\d+)((?: e\d+)*)$", re.MULTILINE)
APPENDED = re.compile(r"^[a-c]-\d+$")


class _History:
    """Random histories of one note on two or three replicas: appends, line edits inside sections and
    inserted paragraphs, merged with the merge base git hands the driver (after criss-cross merges there
    are several, and git merges them into a virtual one first).

    Every item (an append `a-3`, an inserted paragraph `ai2`) is one line; an edit adds ` e<n>` to one.
    `where` maps each item and edit to the heading it was made under. A machine edits only the lines it
    wrote itself, so two sides never change the same line; a merge may still conflict when two changes
    touch, and then it must keep both sides whole."""

    def __init__(self, machines: str) -> None:
        self.machines = machines
        plan, done = ("\n\n".join(f"{m}i{n}" for m in machines) for n in ("0", "00"))
        start = f"---\ncreated: 2026-01-01T00:00:00+00:00\n---\n## Plan\n\n{plan}\n\n## Done\n\n{done}\n"
        self.versions: dict[int, tuple[str, frozenset[int]]] = {0: (start, frozenset([0]))}
        self.heads = dict.fromkeys(machines, 0)
        self.counts = dict.fromkeys(machines, 0)
        self.where = {f"{m}i{n}": heading for m in machines for n, heading in (("0", "## Plan"), ("00", "## Done"))}
        self.clock = 0
        self.conflicts = 0

    def commit(self, machine: str, text: str) -> None:
        new = len(self.versions)
        self.versions[new] = (text, self.versions[self.heads[machine]][1] | {new})
        self.heads[machine] = new

    def stamp(self) -> str:
        return f"2026-01-01T00:{self.clock // 60:02d}:{self.clock % 60:02d}+00:00"

    def append(self, machine: str) -> None:
        from amem.store.write import append_text

        self.counts[machine] += 1
        item = f"{machine}-{self.counts[machine]}"
        text = append_text(self.versions[self.heads[machine]][0], item, self.stamp(), None)
        self.where[item] = heading_of(text, item)
        self.commit(machine, text)

    def own_lines(self, machine: str) -> list[str]:
        text = self.versions[self.heads[machine]][0]
        return [m.group(0) for m in ITEM.finditer(text) if m.group(1)[0] == machine]

    def edit(self, machine: str, pick: int) -> None:
        lines = self.own_lines(machine)
        line = lines[pick % len(lines)]
        self.counts[machine] += 1
        tag = f"e{len(self.versions)}"
        text = self.versions[self.heads[machine]][0]
        self.where[tag] = heading_of(text, line)
        self.commit(machine, text.replace(f"\n{line}\n", f"\n{line} {tag}\n", 1))

    def insert(self, machine: str, pick: int) -> None:
        lines = self.own_lines(machine)
        line = lines[pick % len(lines)]
        self.counts[machine] += 1
        item = f"{machine}i{self.counts[machine]}"
        text = self.versions[self.heads[machine]][0]
        self.where[item] = heading_of(text, line)
        self.commit(machine, text.replace(f"\n{line}\n", f"\n{line}\n\n{item}\n", 1))

    def ancestor(self, one: frozenset[int], other: frozenset[int], pick: int) -> tuple[str, frozenset[int]]:
        """The merge base git hands the driver: with several (criss-cross merges), git merges them into a
        virtual one, through the same driver, markers and all when that merge conflicts."""
        common = one & other
        bases = sorted(c for c in common if not any(c != d and c in self.versions[d][1] for d in common))
        bases = bases[pick % len(bases) :] + bases[: pick % len(bases)]
        text, seen = self.versions[bases[0]]
        for more in bases[1:]:
            more_text, more_seen = self.versions[more]
            base_text, _ = self.ancestor(seen, more_seen, pick)
            text, seen = merge_texts(base_text, text, more_text)[1], seen | more_seen
        return text, seen

    def merge(self, ours: str, theirs: str, pick: int) -> None:
        (ours_text, ours_seen), (theirs_text, theirs_seen) = (self.versions[self.heads[m]] for m in (ours, theirs))
        base_text, _ = self.ancestor(ours_seen, theirs_seen, pick)
        clean, merged = merge_texts(base_text, ours_text, theirs_text)
        if not clean:
            self.conflicts += 1
            for item in {*items_of(ours_text), *items_of(theirs_text)}:
                assert item in merged, f"{item} lost in a conflict"
            assert edited_since(base_text, ours_text) and edited_since(base_text, theirs_text)
            return  # the machine keeps its own version; this history goes on without that merge
        self.check(merged, {*items_of(ours_text), *items_of(theirs_text)})
        for side in (ours_text, theirs_text):
            assert in_order(merged, side), "lines moved"
        new = len(self.versions)
        self.versions[new] = (merged, ours_seen | theirs_seen | {new})
        self.heads[ours] = new

    def check(self, text: str, expected: set[str]) -> None:
        """Every item either side had is there exactly once, every edit too, each under its heading."""
        assert items_of(text) == expected
        for match in ITEM.finditer(text):
            line, item, tags = match.group(0), match.group(1), match.group(2).split()
            assert text.count(f"\n{item}\n") + text.count(f"\n{item} ") == 1, f"{item} twice"
            for name in (item, *tags):
                assert heading_of(text, line) == self.where[name], f"{name} moved"
        stamps = re.findall(r"^## (20\S+)$", text, re.MULTILINE)
        assert len(stamps) == len(set(stamps)) and "\n\n\n" not in text


def items_of(text: str) -> set[str]:
    return {name for m in ITEM.finditer(text) for name in (m.group(1), *m.group(2).split())}


def in_order(merged: str, side: str) -> bool:
    """The lines that are not appends (the first ones, inserted ones) keep the order `side` has them in."""
    mine = [m.group(1) for m in ITEM.finditer(side) if not APPENDED.match(m.group(1))]
    theirs = [m.group(1) for m in ITEM.finditer(merged) if m.group(1) in mine]
    return [x for x in mine if x in theirs] == theirs


def edited_since(base: str, side: str) -> bool:
    """True when `side` edited or inserted something since `base` (not only appended)."""
    return any(not APPENDED.match(name) for name in items_of(side) - items_of(base))


ACTIONS = ["append", "append", "edit", "insert", "merge"]
STEP = st.tuples(st.sampled_from(ACTIONS), st.integers(0, 2), st.integers(0, 99))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(machines=st.sampled_from(["ab", "abc"]), steps=st.lists(STEP, min_size=5, max_size=40))
def test_random_histories_keep_every_append_once_and_every_edit_under_its_heading(
    machines: str, steps: list[tuple[str, int, int]]
) -> None:
    history = _History(machines)
    for action, who, pick in steps:
        machine = machines[who % len(machines)]
        history.clock += pick % 2
        if action == "append":
            history.append(machine)
        elif action == "edit":
            history.edit(machine, pick)
        elif action == "insert":
            history.insert(machine, pick)
        else:
            others = [m for m in machines if m != machine]
            history.merge(machine, others[pick % len(others)], pick)
    for machine in machines[1:]:
        history.merge(machines[0], machine, 0)


def test_the_driver_loads_only_the_standard_library() -> None:
    """git starts the driver once per note both sides changed: its start-up is its cost."""
    code = (
        "import sys; before = set(sys.modules); import amem.gitvault.merge; "
        "print('\\n'.join(sorted(set(sys.modules) - before)))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = {name.split(".")[0] for name in proc.stdout.split()}
    assert "amem" in loaded
    assert loaded - {"amem"} <= set(sys.stdlib_module_names)
    assert not loaded & {"typing", "subprocess", "tempfile", "yaml"}  # the line merge loads its own when needed
