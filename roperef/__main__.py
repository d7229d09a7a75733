"""``python -m roperef``: the ``roperef`` command, as the console script runs it.

The command lives in ``conformance.cli`` (the judge); the maths package ``roperef`` never imports
``conformance`` (docs/design.md, tests/design/test_import_graph.py), and ``import roperef`` does not run this
file. Only ``python -m roperef`` does: it runs the module ``conformance.cli`` as ``__main__`` by name
(:func:`runpy.run_module`), exactly as ``python -m conformance.cli``.
"""

import runpy

runpy.run_module("conformance.cli", run_name="__main__", alter_sys=True)
