"""Everything said about a FAIL beyond its numbers (:mod:`.failure`): the likely bug by decoys of every
class (:mod:`.likely_bug`), the rotation the backend applied (:mod:`.inverse`), where NaN/inf came from
(:mod:`.nonfinite`), declarations that would pass (:mod:`.declaration`), the case that separates two
classes (:mod:`.separate`)."""
