"""The audit log of changes made over `amem mcp --http` (SPEC §19): one JSON line per change in
`$XDG_STATE_HOME/amem/audit.jsonl`, mode 0600, for every vault the user serves (each line names its vault).
A line is written whole with one `write` on a file opened for appending, so lines from concurrent calls and
from several servers never interleave.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any

_lock = threading.Lock()


def audit_file() -> str:
    from .tokens import state_folder

    return os.path.join(state_folder(), "audit.jsonl")


def append_audit(entry: dict[str, Any]) -> None:
    """Append `entry` as one line of the audit log."""
    path = audit_file()
    line = (json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8", "surrogateescape")
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    with _lock:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
