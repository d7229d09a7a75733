"""Calling a backend: what it declares it can run (:mod:`.declared`), stage calls that nothing it does can
take down or hang (:mod:`.stage_call`), and worker processes for crashes and hangs (:mod:`.isolate`)."""
