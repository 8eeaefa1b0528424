"""``python -m hindsight.bench [options]``: the same as ``hindsight bench [options]``.

An entry point, not a library module: it runs the ``hindsight`` program (``python -m hindsight``)
with ``bench`` in front of the arguments, by module name, so the bench package never imports
the CLI (the CLI imports it).
"""

import runpy
import sys

sys.argv = ["hindsight", "bench", *sys.argv[1:]]
runpy.run_module("hindsight", run_name="__main__")
