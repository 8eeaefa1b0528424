"""``python -m hindsight.bench``: see :func:`hindsight.bench.main`."""

from hindsight.bench import main

main()
