"""``python -m conformance``: the ``roperef`` command (the same as ``python -m conformance.cli``)."""

import runpy

runpy.run_module("conformance.cli", run_name="__main__", alter_sys=True)
