"""The ``roperef`` command: dispatch (:mod:`.main`) to one module per subcommand (:mod:`.spec`, :mod:`.golden`,
:mod:`.check` with :mod:`.check_modes`, :mod:`.export`), the file protocol for programs in other languages
(:mod:`.exchange`) and loading the backend a command line names (:mod:`.backend_load`)."""
