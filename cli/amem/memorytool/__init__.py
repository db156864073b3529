"""Claude's memory tool (`memory_20250818`) on a vault: `/memories/…` is the vault folder `memoryTool.folder`.

`store.MemoryStore` holds the six commands, worded as the `anthropic` SDK's own local-filesystem tool words
them; `amem memory-tool` runs one from JSON, and `VaultMemoryTool` (which alone loads the SDK) hands them to
the SDK's tool runner.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .sdk import VaultMemoryTool as VaultMemoryTool

__all__ = ["VaultMemoryTool"]


def __getattr__(name: str) -> Any:
    if name == "VaultMemoryTool":  # loaded on first use: `amem memory-tool` never needs the SDK
        from .sdk import VaultMemoryTool

        return VaultMemoryTool
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
