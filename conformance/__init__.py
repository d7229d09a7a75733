"""conformance: judge any RoPE implementation against roperef's golden vectors.

- :mod:`conformance.case` -- the :class:`~conformance.case.GoldenCase` record
- :mod:`conformance.cases` -- the case catalogue (families, tiers, model presets)
- :mod:`conformance.golden` -- golden files: write, read, verify (never unpickled)
- :mod:`conformance.backends` -- the backend protocol and the adapters
- :mod:`conformance.tolerance`, :mod:`conformance.runner`, :mod:`conformance.diagnose`,
  :mod:`conformance.report` -- the judge
- :mod:`conformance.bugs` -- the bug catalogue (classes as data, decoys, fits); diagnosis around it:
  :mod:`conformance.inverse`, :mod:`conformance.nonfinite`, :mod:`conformance.declaration`,
  :mod:`conformance.separate`, :mod:`conformance.verdict` (run level)
- :mod:`conformance.generated` -- cases generated for a backend's interface; :mod:`conformance.coverage`
- :mod:`conformance.cli` -- the ``roperef`` command
"""
