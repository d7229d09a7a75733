"""The error model: a bound per output element from named profiles (:mod:`.tolerance`), the conditioning
of blended frequencies (:mod:`.conditioning`) and expected outputs under a backend's declaration (:mod:`.expected`)."""
