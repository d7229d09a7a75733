"""The hash-locked golden set: writing, reading and verifying it (:mod:`.store`, never unpickled), atomic
writes (:mod:`.atomic_files`), the published set hash (:mod:`.published`), the 50-digit audit (:mod:`.audit`,
:mod:`.exact_model`) and which cases a run judges (:mod:`.case_source`)."""
