"""Reports of a judged run: console, JSON, JUnit XML, Markdown and plots (:mod:`.formats`, :mod:`.sections`),
the run header (:mod:`.header`) and a failing case in words (:mod:`.failure_text`)."""
