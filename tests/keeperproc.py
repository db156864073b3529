"""The index keeper (`amem index --watch`) as a real process, for the tests that start one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


class KeeperProcess:
    def __init__(self, proc: subprocess.Popen[str], ready: dict[str, Any]) -> None:
        self.proc = proc
        self.ready = ready

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(timeout=30)


def start_keeper(*extra: str) -> KeeperProcess:
    proc = subprocess.Popen(
        [sys.executable, "-m", "amem", "index", "--watch", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()  # printed once the keeper is keeping the index
    if not line:
        proc.wait(timeout=30)
        assert proc.stderr is not None
        raise AssertionError(f"the keeper did not start: {proc.stderr.read()}")
    return KeeperProcess(proc, json.loads(line))


def wait_until_stopped(pid: int) -> None:
    deadline = time.monotonic() + 30
    while Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "T":
        assert time.monotonic() < deadline
        time.sleep(0.01)
