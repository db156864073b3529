"""`amem read` of a note whose link names no note looks for an attachment of that name without listing the
whole vault each time: the listing is remembered with the mtime of every folder, which a read stats (the
freshness rule for reads), so an attachment added, removed or renamed anywhere is still seen."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.conftest import write_file

PAST = time.time() - 3600

#: The installed amem, run with an audit hook that counts the vault's folders the process lists.
COUNTING = """
import os, sys
listed = []
vault = os.path.realpath(os.environ["AMEM_VAULT"])
def hook(event, args):
    if event in ("os.scandir", "os.listdir") and os.path.realpath(args[0] or ".").startswith(vault):
        listed.append(args[0])
sys.addaudithook(hook)
from amem.cli import main
try:
    main()
finally:
    os.write(2, ("\\nLISTED %d\\n" % len(listed)).encode())
"""


def read(vault: Path, note: str) -> tuple[dict[str, Any], int]:
    """The read's JSON and how many folders it listed."""
    done = subprocess.run(
        [sys.executable, "-c", COUNTING, "read", note], capture_output=True, text=True, cwd=vault.parent, timeout=120
    )
    assert done.returncode == 0, done.stderr
    listed = int(done.stderr.rsplit("LISTED ", 1)[1])
    return json.loads(done.stdout), listed


def age(vault: Path) -> None:
    for path in [vault, *vault.rglob("*")]:
        os.utime(path, (PAST, PAST), follow_symlinks=False)


def attachment_of(result: dict[str, Any], target: str) -> str | None:
    (link,) = [link for link in result["links"] if link["target"] == target]
    assert link["resolved"] is None
    found = link.get("attachment")
    return None if found is None else str(found)


def test_a_read_with_a_link_to_no_note_lists_no_folder_once_warm_and_sees_every_change(
    vault: Path, isolated_env: Path
) -> None:
    for i in range(40):
        write_file(vault / f"f{i}/sub/n{i}.md", f"# n{i}\nalpha\n")
    write_file(vault / "f7/sub/diagram.png", b"\x89PNG")
    write_file(vault / "a.md", "# a\n![[diagram.png]] and [[nowhere]] and ![[later.pdf]]\n")
    age(vault)
    first, _ = read(vault, "a")
    assert attachment_of(first, "diagram.png") == "f7/sub/diagram.png"
    again, listed = read(vault, "a")
    assert again == first
    # Before: every one of the 81 folders listed again by each read. The note's own folder (a conflict
    # copy beside it) is all a warm read lists.
    assert listed <= 2, listed
    write_file(vault / "f20/sub/written.md", "# written\n")  # as `amem write` does between two reads
    again, listed = read(vault, "a")
    assert again == first
    assert listed <= 3, listed  # that folder, by the index's quick refresh and by the attachments' check

    write_file(vault / "f30/sub/deeper/later.pdf", b"%PDF")  # a new folder in an old one
    found, _ = read(vault, "a")
    assert attachment_of(found, "later.pdf") == "f30/sub/deeper/later.pdf"
    assert attachment_of(found, "diagram.png") == "f7/sub/diagram.png"

    age(vault)
    os.rename(vault / "f7/sub/diagram.png", vault / "f12/diagram.png")  # moved between old folders
    moved, _ = read(vault, "a")
    assert attachment_of(moved, "diagram.png") == "f12/diagram.png"

    (vault / "f12/diagram.png").unlink()
    gone, _ = read(vault, "a")
    assert attachment_of(gone, "diagram.png") is None
    assert attachment_of(gone, "nowhere") is None


def test_the_first_read_after_a_build_lists_no_folder_for_its_attachments(
    vault: Path, isolated_env: Path, amem: Any
) -> None:
    """The build's walk saw every file that is not a note: it stores them as the attachments' listing, the
    same one a read would have made (at 50,000 notes that listing cost the first read ~100 ms)."""
    from amem.config import load_config
    from amem.index.attached import Attachments, _refreshed
    from amem.index.index import VaultIndex
    from amem.index.scan import VaultScan, Walker

    for i in range(40):
        write_file(vault / f"f{i}/sub/n{i}.md", f"# n{i}\nalpha\n")
    write_file(vault / "f7/sub/diagram.png", b"\x89PNG")
    write_file(vault / "f9/Notes.MD.bak", b"old")
    write_file(vault / "f9/upper.MD", "# upper\n")
    write_file(vault / "a.md", "# a\n![[diagram.png]] and [[nowhere]] and ![[Notes.MD.bak]]\n")
    age(vault)
    write_file(vault / "f3/fresh.txt", "racily recent: listed again by the first read")
    assert amem("index").exit_code == 0
    first, listed = read(vault, "a")
    assert attachment_of(first, "diagram.png") == "f7/sub/diagram.png"
    assert attachment_of(first, "Notes.MD.bak") == "f9/Notes.MD.bak"
    assert listed <= 3, listed  # the note's own folder, and f3 (racily recent when the build walked it)
    config = load_config()
    index = VaultIndex(config)
    try:
        remembered = Attachments(config, index.conn).paths()
    finally:
        index.close()
    folders, _ = _refreshed(Walker(config, VaultScan()), {})
    assert remembered == sorted(path for _, paths in folders.values() for path in paths)
    assert "f3/fresh.txt" in remembered and "f9/upper.MD" not in remembered
