"""The index keeper (`amem index --watch`) as a real process, for the tests that start one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any


class KeeperProcess:
    def __init__(self, proc: subprocess.Popen[str], ready: dict[str, Any], stderr: IO[str]) -> None:
        self.proc = proc
        self.ready = ready
        self._stderr = stderr

    def stderr(self) -> str:
        """What the keeper has written to stderr so far (a file, not a pipe: a keeper that warns a lot
        never blocks on a pipe nobody reads)."""
        self._stderr.seek(0)
        return self._stderr.read()

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(timeout=30)


def start_keeper(*extra: str) -> KeeperProcess:
    stderr = tempfile.TemporaryFile(mode="w+", encoding="utf-8")  # noqa: SIM115 (the keeper's, for its life)
    proc = subprocess.Popen(
        [sys.executable, "-m", "amem", "index", "--watch", *extra],
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        env=os.environ.copy(),
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()  # printed once the keeper is keeping the index
    started = KeeperProcess(proc, json.loads(line) if line else {}, stderr)
    if not line:
        proc.wait(timeout=30)
        raise AssertionError(f"the keeper did not start: {started.stderr()}")
    return started


def wait_until_stopped(pid: int) -> None:
    deadline = time.monotonic() + 30
    while Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "T":
        assert time.monotonic() < deadline
        time.sleep(0.01)
