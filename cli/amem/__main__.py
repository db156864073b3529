"""`python -m amem`, and the console script `amem`: Ctrl-C is made reliable before amem's modules load, and
a search, read or list that a live keeper can answer is answered before Click loads (`index.keeper_fast`)."""

from __future__ import annotations

#: The commands a keeper answers: only their command lines try the fast path.
_ANSWERED = ("search", "read", "list")


def main() -> None:
    from .interrupt import install

    install()
    import sys

    if any(arg in _ANSWERED for arg in sys.argv[1:]):
        from .index.keeper_fast import answer

        code = answer(sys.argv[1:])
        if code is not None:
            sys.exit(code)
    from .cli import main as run

    run()


if __name__ == "__main__":
    main()
