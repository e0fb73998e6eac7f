"""The ``edgetui`` command line: the parser and the recording and listing commands (``main``), the
analysis commands, the notes commands (moments, annotations, reports) and the output of tables."""
