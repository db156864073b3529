"""Start-up cost: only `amem watch` pays for watchdog, requests and pathspec."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import io, sys, contextlib
from amem.cli import cli
import amem.commands.watch
with contextlib.redirect_stdout(io.StringIO()):
    try:
        cli.main(["--help"], "amem", standalone_mode=False)
        cli.main(["watch", "--help"], "amem", standalone_mode=False)
    except SystemExit:
        pass
loaded = sorted(m for m in sys.modules if m.split(".")[0] in {"watchdog", "requests", "pathspec"}
                or m.startswith("amem.watcher"))
print(",".join(loaded))
"""


def test_help_and_the_command_module_do_not_import_the_watcher() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "", f"loaded at start-up: {done.stdout.strip()}"


def test_the_sink_names_config_checks_are_the_registry() -> None:
    from amem.config import SINK_NAMES
    from amem.watcher import sinks

    assert sinks.SINK_NAMES == tuple(sinks.SINKS) == SINK_NAMES
