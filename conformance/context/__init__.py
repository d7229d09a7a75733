"""The context sweep: positions sampled in every octave, the certified context length per stage x dtype."""
