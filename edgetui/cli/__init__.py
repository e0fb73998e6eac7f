"""The ``edgetui`` command line: the parser and the recording and listing commands (``main``), the
analysis commands, the notes commands (moments, annotations, reports), the output of tables, and the
app in a browser (``serve``: the server, its access checks in ``web_access``, a tab's process in
``browser_tab``)."""
