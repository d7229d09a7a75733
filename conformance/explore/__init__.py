"""Explore mode: random cases drawn within a backend's declaration (:mod:`.specs`, :mod:`.draw`), each
failure shrunk to a minimal case (:mod:`.shrink`), the run (:mod:`.run`)."""
