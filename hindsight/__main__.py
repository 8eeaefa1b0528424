"""``python -m hindsight``: the same command line as the ``hindsight`` console script."""

from hindsight.cli import main

if __name__ == "__main__":
    main()
