"""What a warm `amem search` compiles: not the frontmatter parser's patterns, which only reading a note's
frontmatter needs (a search imports that module to split a note's body from its frontmatter)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import write_file

#: Runs the CLI as the console script does, recording the amem source file of each pattern compiled.
RECORDING = """
import json, os, re, sys
compiled = []
original = re._compile
def recording(pattern, flags):
    if (type(pattern), pattern, flags) not in re._cache:
        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename.endswith(os.path.join("re", "__init__.py")):
            frame = frame.f_back
        compiled.append([frame.f_code.co_filename if frame is not None else "?", str(pattern)])
    return original(pattern, flags)
re._compile = recording
from amem.cli import main
try:
    main()
finally:
    os.write(2, ("\\nCOMPILED " + json.dumps(compiled) + "\\n").encode())
"""


def patterns_compiled_by(vault: Path, *args: str, stdin: str | None = None) -> list[tuple[str, str]]:
    """(amem source file name, pattern) of each pattern a run compiled."""
    done = subprocess.run(
        [sys.executable, "-c", RECORDING, *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=vault.parent,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    compiled = json.loads(done.stderr.rsplit("COMPILED ", 1)[1])
    return [(Path(f).name, pattern) for f, pattern in compiled if f"{os.sep}amem{os.sep}" in f]


def compiled_by(vault: Path, *args: str) -> list[str]:
    return sorted({name for name, _ in patterns_compiled_by(vault, *args)})


def test_a_warm_search_compiles_none_of_the_frontmatter_patterns(vault: Path, isolated_env: Path) -> None:
    write_file(vault / "a.md", "---\ntitle: Alpha\ntags: [x, y]\ncreated: 2026-01-02\n---\nalpha body\n")
    old = time.time() - 3600
    for path in (vault / "a.md", vault):
        os.utime(path, (old, old))
    compiled_by(vault, "search", "alpha")  # the build parses the note: its patterns are compiled then
    assert "simple_yaml.py" not in compiled_by(vault, "search", "alpha")
    done = subprocess.run(
        [sys.executable, "-m", "amem", "read", "a"], capture_output=True, text=True, cwd=vault.parent, timeout=120
    )
    assert json.loads(done.stdout)["frontmatter"] == {"title": "Alpha", "tags": ["x", "y"], "created": "2026-01-02"}


#: A note as most are: plain frontmatter (words, a list, a date, amem's own timestamp) and a body of prose
#: with a [[link]], no code, no Markdown link.
PLAIN_NOTE = (
    "---\ntitle: Alpha\ntags: [red, blue]\ncreated: 2026-01-02\nupdated: 2026-11-29T20:15:03+08:00\nsize: 12\n---\n"
    "# Alpha\n\nalpha body, see [[b]] and [[b|the other]].\n"
)


def _aged(vault: Path) -> None:
    old = time.time() - 3600  # not racily recent: the run measured finds nothing to index
    for path in [*vault.rglob("*.md"), vault]:
        os.utime(path, (old, old))


def test_a_warm_read_of_a_plain_note_compiles_no_pattern_of_the_note_parsers(vault: Path, isolated_env: Path) -> None:
    """Its frontmatter is read by plain string tests, its links found by the patterns of what it holds."""
    write_file(vault / "a.md", PLAIN_NOTE)
    write_file(vault / "b.md", "---\ntitle: Beta\n---\nbeta body\n")
    _aged(vault)
    compiled_by(vault, "read", "a")  # builds the index
    compiled = compiled_by(vault, "read", "a")
    assert "simple_yaml.py" not in compiled
    assert "conflicts.py" not in compiled  # the index knows the conflict copies beside the note
    # the [[link]] patterns only: none for code, fences, Markdown links or URL schemes the note does not hold
    links = [pattern for name, pattern in patterns_compiled_by(vault, "read", "a") if name == "links.py"]
    assert links and all("[[" in pattern.replace("\\", "") for pattern in links), links
    done = subprocess.run(
        [sys.executable, "-m", "amem", "read", "a"], capture_output=True, text=True, cwd=vault.parent, timeout=120
    )
    result = json.loads(done.stdout)
    assert result["frontmatter"] == {
        "title": "Alpha",
        "tags": ["red", "blue"],
        "created": "2026-01-02",
        "updated": "2026-11-29T20:15:03+08:00",
        "size": 12,
    }
    assert [link["resolved"] for link in result["links"]] == ["b.md", "b.md"]
    assert [note["id"] for note in result["linkedNotes"]] == ["b.md"]


def test_an_append_to_a_plain_note_compiles_no_pattern_of_the_note_parsers(vault: Path, isolated_env: Path) -> None:
    write_file(vault / "a.md", PLAIN_NOTE)
    _aged(vault)
    compiled_by(vault, "read", "a")
    compiled = patterns_compiled_by(vault, "write", "a", "--append", stdin="more\n")
    assert "simple_yaml.py" not in {name for name, _ in compiled}
    assert (vault / "a.md").read_text(encoding="utf-8").endswith("more\n")
