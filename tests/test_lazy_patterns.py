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
        compiled.append(frame.f_code.co_filename if frame is not None else "?")
    return original(pattern, flags)
re._compile = recording
from amem.cli import main
try:
    main()
finally:
    os.write(2, ("\\nCOMPILED " + json.dumps(compiled) + "\\n").encode())
"""


def compiled_by(vault: Path, *args: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", RECORDING, *args], capture_output=True, text=True, cwd=vault.parent, timeout=120
    )
    assert done.returncode == 0, done.stderr
    files = json.loads(done.stderr.rsplit("COMPILED ", 1)[1])
    return sorted({Path(f).name for f in files if f"{os.sep}amem{os.sep}" in f})


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
