"""The bug catalogue: RoPE bug classes as data, their decoys, and the rules for what exposes them.

- :mod:`conformance.bugs.catalogue` -- ``CATALOGUE`` (one entry per class) and ``BY_ID``
- :mod:`conformance.bugs.model` -- the records (``BugClass``, ``Family``, ``Probe``)
- :mod:`conformance.bugs.decoy` -- a decoy's outputs and bound at the backend's precision
- :mod:`conformance.bugs.fit` -- choosing a class's best decoy (1-D fit of a free parameter)
- :mod:`conformance.bugs.facts` -- cheap facts about a case for the exposure rules
"""
