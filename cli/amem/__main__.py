"""`python -m amem`, and the console script `amem`: Ctrl-C is made reliable before amem's modules load, and
a search, read or list that a live keeper can answer is answered before Click loads, and so is one without
a keeper, in this process (`index.keeper_fast`), and a plain write or sync (`change_fast`)."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .config import Config
    from .report import Reporter

#: The commands the fast paths answer and run: only their command lines try them.
_ANSWERED = ("search", "read", "list")
_CHANGED = ("write", "sync")


def main() -> None:
    from .interrupt import install

    install()
    import sys

    if any(arg in _CHANGED for arg in sys.argv[1:]):
        from .change_fast import answer as change

        code = change(sys.argv[1:])
        if code is not None:
            sys.exit(code)
    if any(arg in _ANSWERED for arg in sys.argv[1:]):
        from .index.keeper_fast import answer

        code = answer(sys.argv[1:], _run_here)
        if code is not None:
            sys.exit(code)
    from .cli import main as run

    run()


def _run_here(config: Config, op: str, args: dict[str, Any], reporter: Reporter) -> Any:
    """`amem.ops.answers.run` for a one-shot process, imported only when a command runs in this one."""
    from .ops.answers import run

    return run(config, op, args, reporter, long_lived=False)


if __name__ == "__main__":
    main()
