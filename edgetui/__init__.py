"""edgetui: supervise and replay long-horizon SForge / EdgeBench agent runs.

The core (this package minus ``edgetui.views.app``/``edgetui.views.screens``) never imports
Textual: parsers turn raw bytes into :class:`edgetui.events.Event` objects and
the :class:`edgetui.record.recorder.Recorder` is the only writer of the DuckDB file.
"""

__version__ = "0.1.0"
