"""`amem read`'s `conflict`: whether a conflict copy left by `amem sync` (NOTE.conflict-COMMIT.md) lies beside
the note. The index holds every note of the vault, copies included, and a read brings it up to date first
(the freshness rule), so a read asks it instead of listing the note's folder; it lists the folder only for a
note the index does not hold (one in an excluded folder)."""

from __future__ import annotations

import os
from pathlib import Path

from amem.index.schema import LOCK_FILE
from tests.conftest import write_file
from tests.test_read_attachments import age, read


def test_a_copy_made_or_removed_by_another_program_is_seen_without_listing_the_folder(
    vault: Path, isolated_env: Path
) -> None:
    write_file(vault / "big" / "plan.md", "# plan\n")
    for n in range(50):  # a folder of many names: none of them is read
        write_file(vault / "big" / f"n{n}.md", f"# n{n}\n")
    age(vault)
    read(vault, "big/plan")  # builds the index
    result, listed = read(vault, "big/plan")
    assert result["conflict"] is False
    assert listed == 0

    copy = write_file(vault / "big" / "plan.conflict-0123abcd.md", "# theirs\n")
    assert read(vault, "big/plan")[0]["conflict"] is True
    os.unlink(copy)
    assert read(vault, "big/plan")[0]["conflict"] is False
    write_file(vault / "big" / "plan.conflict-0123abcd-2.md", "# theirs again\n")
    assert read(vault, "big/plan")[0]["conflict"] is True


def test_names_that_only_look_like_a_copy_are_not_one(vault: Path, isolated_env: Path) -> None:
    write_file(vault / "plan.md", "# plan\n")
    write_file(vault / "plan.conflict-notahex.md", "# not a commit\n")  # not a commit's digits
    write_file(vault / "planet.conflict-0123abcd.md", "# a copy of planet\n")
    write_file(vault / "plan.conflict-0123abcd" / "inside.md", "# a folder named like a copy\n")
    write_file(vault / "sub" / "plan.conflict-0123abcd.md", "# a copy of sub/plan, which does not exist\n")
    age(vault)
    assert read(vault, "plan")[0]["conflict"] is False
    write_file(vault / "plan.conflict-0123abcd.txt", "a copy of a file that is no note\n")
    assert read(vault, "plan")[0]["conflict"] is False
    write_file(vault / "planet.md", "# planet\n")
    assert read(vault, "planet")[0]["conflict"] is True


def test_a_note_the_index_does_not_hold_has_its_folder_listed(vault: Path, isolated_env: Path) -> None:
    write_file(vault / "archive" / "old.md", "# old\n")  # archive/ is excluded from the index by default
    write_file(vault / "archive" / "old.conflict-0123abcd.md", "# theirs\n")
    write_file(vault / "kept.md", "# kept\n")
    age(vault)
    result, listed = read(vault, "archive/old")
    assert result["conflict"] is True
    assert listed >= 1


def test_a_read_beside_another_processs_refresh_lists_the_folder(vault: Path, isolated_env: Path) -> None:
    """While another process holds the refresh lock, the read does not refresh, so the index may not know a
    copy made a moment ago: the folder is listed."""
    import fcntl

    from amem.config import load_config

    write_file(vault / "plan.md", "# plan\n")
    age(vault)
    read(vault, "plan")  # builds the index
    write_file(vault / "plan.conflict-0123abcd.md", "# theirs\n")
    with open(load_config(vault=str(vault)).cache_dir / LOCK_FILE, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        result, listed = read(vault, "plan")
    assert result["conflict"] is True
    assert listed >= 1
