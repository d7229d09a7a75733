"""Cases generated for a backend's interface (:mod:`.plan`): variant specs (:mod:`.specs`) and position
regimes (:mod:`.positions`) chosen so that every bug class the interface can show is exposed."""
