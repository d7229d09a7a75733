"""Running cases and judging them: the runner (:mod:`.runner`), expected-failure files (:mod:`.xfail`), one
verdict over all FAILs (:mod:`.verdict`), coverage (:mod:`.coverage`), what ``check`` judges
(:mod:`.check_sources`) and the exit code of a judged run (:mod:`.run_verdict`)."""
