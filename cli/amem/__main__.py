"""`python -m amem`, and the console script `amem`: Ctrl-C is made reliable before amem's modules load, and
a search, read or list that a live keeper answers is answered before Click loads (`shim`)."""

from __future__ import annotations

#: The commands a keeper answers: only their command lines try the shim.
_ANSWERED = ("search", "read", "list")


def main() -> None:
    from .interrupt import install

    install()
    import sys

    if any(arg in _ANSWERED for arg in sys.argv[1:4]):
        from .shim import answer

        code = answer(sys.argv[1:])
        if code is not None:
            sys.exit(code)
    from .cli import main as run

    run()


if __name__ == "__main__":
    main()
