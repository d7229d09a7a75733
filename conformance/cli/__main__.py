"""``python -m conformance.cli``: the ``roperef`` command (:func:`conformance.cli.main.console_main`)."""

from .main import console_main

raise SystemExit(console_main())
