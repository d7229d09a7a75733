"""Cases: the record (:mod:`.case`), the catalogue tables (:mod:`.catalog`), named position regimes
(:mod:`.positions`), materializing a recipe by tier (:mod:`.materialize`), the limits every array file is read within
(:mod:`.npy_limits`) and the user's own cases (:mod:`.user`)."""
