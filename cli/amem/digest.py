"""SHA-1 without loading OpenSSL: `hashlib` costs ~2 ms at start-up, CPython's own `_sha1` a fraction."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hashlib import sha1 as _sha1
else:
    try:
        from _sha1 import sha1 as _sha1
    except ImportError:  # an interpreter without the builtin module
        from hashlib import sha1 as _sha1


def sha1_hex(data: bytes) -> str:
    return _sha1(data).hexdigest()
