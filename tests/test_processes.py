"""Real processes: the installed `amem`, concurrent writers, a writer killed mid-write, lazy imports."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from amem.notes.parse import parse_note

AMEM = [sys.executable, "-m", "amem"]


def run(args: list[str], cwd: Path, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*AMEM, *args], cwd=cwd, input=input, capture_output=True, text=True, timeout=60, env=os.environ.copy()
    )


def test_end_to_end_write_read_and_errors(isolated_env: Path) -> None:
    written = run(["write", "notes/x", "--append"], isolated_env, input="from a pipe\n")
    assert written.returncode == 0, written.stderr
    assert json.loads(written.stdout)["id"] == "notes/x.md"
    assert (isolated_env / ".amem" / "memory" / "notes" / "x.md").is_file()  # the default embedded vault
    read = run(["read", "notes/x"], isolated_env)
    assert read.returncode == 0 and json.loads(read.stdout)["body"].endswith("from a pipe\n")
    missing = run(["read", "nope"], isolated_env)
    assert missing.returncode == 3 and missing.stdout == ""
    assert json.loads(missing.stderr)["error"]["code"] == "not_found"
    escape = run(["write", "../../x", "y"], isolated_env)
    assert escape.returncode == 5 and "Traceback" not in escape.stderr


def test_the_console_script_is_installed(isolated_env: Path) -> None:
    script = Path(sys.executable).parent / "amem"
    if not script.exists():
        pytest.skip("amem is not installed as a console script beside this interpreter")
    result = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stdout.startswith("amem ")


WRITER = """
import sys
from amem.config import load_config
from amem.ops.write import write_note
config = load_config()
worker = sys.argv[1]
for i in range(int(sys.argv[2])):
    write_note(config, "shared/log", f"# entry {worker}-{i}\\nfrom worker {worker}")
"""


@pytest.mark.slow
def test_eight_processes_times_hundred_appends_lose_nothing(isolated_env: Path, vault: Path) -> None:
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(w), "100"], cwd=isolated_env) for w in range(8)]
    for proc in procs:
        assert proc.wait(timeout=240) == 0
    text = (vault / "shared" / "log.md").read_text()
    entries = [line for line in text.splitlines() if line.startswith("# entry ")]
    assert len(entries) == 800
    assert len(set(entries)) == 800
    assert parse_note(text).frontmatter.get("created")
    assert not [p for p in (vault / "shared").iterdir() if p.name != "log.md"]


KILLED_WRITER = """
import sys
from amem.config import load_config
from amem.ops.write import write_note
config = load_config()
i = 0
while True:
    i += 1
    write_note(config, "big", (chr(65 + i % 26) * 2_000_000), mode="overwrite")
"""


def test_writer_killed_mid_write_leaves_old_or_new_note(isolated_env: Path, vault: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", KILLED_WRITER], cwd=isolated_env)
    note = vault / "big.md"
    deadline = time.monotonic() + 30
    while not note.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.3)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    body = parse_note(note.read_text()).body
    assert len(body) == 2_000_000 and len(set(body)) == 1  # one whole version, never a mix
    from amem.config import load_config
    from amem.index.scan import scan_vault
    from amem.ops.write import write_note

    config = load_config()
    assert list(scan_vault(config).files) == ["big.md"]
    write_note(config, "big", "after the crash", mode="overwrite")
    assert sorted(p.name for p in vault.iterdir()) == ["big.md"]  # the killed writer's temp file is gone
