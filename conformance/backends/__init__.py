"""Backends: the protocol (:mod:`.base`), the name table (:mod:`.names`) and one adapter per library."""
