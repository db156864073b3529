"""`VaultMemoryTool`: the `anthropic` SDK's memory tool backed by a vault (the `anthropic` extra)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from anthropic.lib.tools import BetaAbstractMemoryTool, ToolError

from ..errors import AmemError
from .store import MemoryStore

if TYPE_CHECKING:
    from anthropic.types.beta import (
        BetaCacheControlEphemeralParam,
        BetaMemoryTool20250818CreateCommand,
        BetaMemoryTool20250818DeleteCommand,
        BetaMemoryTool20250818InsertCommand,
        BetaMemoryTool20250818RenameCommand,
        BetaMemoryTool20250818StrReplaceCommand,
        BetaMemoryTool20250818ViewCommand,
    )

    from ..config import Config
    from ..report import Reporter


class VaultMemoryTool(BetaAbstractMemoryTool):
    """Claude's memory tool on a vault: `/memories/…` is its folder `memoryTool.folder`.

    `VaultMemoryTool(vault="~/notes")` loads amem's config as the command line does, with that vault (or
    give a loaded `config`). Every failure reaches the model as the SDK's `ToolError`, with amem's message.
    """

    def __init__(
        self,
        *,
        vault: str | os.PathLike[str] | None = None,
        config: Config | None = None,
        reporter: Reporter | None = None,
        cache_control: BetaCacheControlEphemeralParam | None = None,
    ) -> None:
        super().__init__(cache_control=cache_control)
        if config is None:
            from ..config import load_config

            config = load_config(vault=os.path.expanduser(vault) if vault is not None else None)
        self.store = MemoryStore(config, reporter)

    def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        return _tool_result(lambda: self.store.view(command.path, command.view_range))

    def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        return _tool_result(lambda: self.store.create(command.path, command.file_text))

    def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        return _tool_result(lambda: self.store.str_replace(command.path, command.old_str, command.new_str))

    def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        return _tool_result(lambda: self.store.insert(command.path, command.insert_line, command.insert_text))

    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        return _tool_result(lambda: self.store.delete(command.path))

    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        return _tool_result(lambda: self.store.rename(command.old_path, command.new_path))


def _tool_result(run: Callable[[], str]) -> str:
    """`run`'s text; an AmemError raised as the SDK's ToolError, which its runner sends as `is_error`."""
    try:
        return run()
    except AmemError as exc:
        raise ToolError(exc.message) from None
