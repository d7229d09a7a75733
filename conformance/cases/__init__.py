"""Cases: the record (:mod:`.case`), the catalogue tables (:mod:`.catalog`), named position regimes
(:mod:`.positions`), materializing a recipe by tier (:mod:`.materialize`) and the user's own cases (:mod:`.user`)."""
