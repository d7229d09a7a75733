"""transformers as a second opinion: its modeling source read (:mod:`.source`), its rotary modules probed
(:mod:`.truth`), AGREE/DIFFER per item (:mod:`.crosscheck`); the preset corpus's coverage of its model types
(:mod:`.preset_coverage`, :mod:`.preset_gaps`)."""
