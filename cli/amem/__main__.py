"""`python -m amem`, and the console script `amem`: Ctrl-C is made reliable before amem's modules load."""

from __future__ import annotations


def main() -> None:
    from .interrupt import install

    install()
    from .cli import main as run

    run()


if __name__ == "__main__":
    main()
