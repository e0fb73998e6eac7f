"""Recording: runs' files into the database (the ingest, change detection, the Recorder, time
alignment, derived rows, migrations that re-record). May import ``edgetui.store.queries``, ``edgetui.parsers``,
``edgetui.hosts``, ``edgetui.replay`` and the base modules of ``edgetui``; never ``live``, ``analysis``,
``views`` or ``cli``."""
