"""conformance: judge any RoPE implementation against roperef's golden vectors.

Packages, in the order of their layers (each imports only the ones above it; docs/design.md):

- leaves at the top: :mod:`~conformance.vocabulary`, :mod:`~conformance.selection`,
  :mod:`~conformance.usage_error`, :mod:`~conformance.exit_codes`, :mod:`~conformance.interrupt`
- :mod:`conformance.cases` -- the case record, the catalogue, named positions, the user's own cases
- :mod:`conformance.golden` -- the hash-locked golden set, its audit, atomic writes, which cases a run judges
- :mod:`conformance.error_model` -- the bound per output element: tolerance profiles, expected values
- :mod:`conformance.bugs` -- the bug catalogue (classes as data, decoys, fits)
- :mod:`conformance.backends` -- the backend protocol and one adapter per library
- :mod:`conformance.calls` -- calling a backend: what it declares, guarded stage calls, worker processes
- :mod:`conformance.generated` -- cases generated for a backend's interface
- :mod:`conformance.diagnose` -- what a FAIL says beyond its numbers: the likely bug, the rotation
  applied, non-finite outputs, declaration hints, the case that separates two classes
- :mod:`conformance.judge` -- run the cases and judge them: runner, xfail, verdict, coverage
- :mod:`conformance.explore`, :mod:`conformance.long_context` -- random cases shrunk; real lengths
- :mod:`conformance.report` -- console, JSON, JUnit XML, Markdown, plots
- :mod:`conformance.hf` -- transformers' own rotary modules probed; the preset corpus's coverage
- entry points: :mod:`conformance.cli` (the ``roperef`` command), :mod:`conformance.assertions`,
  :mod:`conformance.pytest_plugin`
"""
