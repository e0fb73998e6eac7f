"""The data steps of the schema's migrations, for files written by an earlier version: transcript runs
re-keyed (:mod:`edgetui.store.migrate_rekey`), secrets scrubbed again and the file rewritten
(:mod:`edgetui.store.migrate_rescrub`). Loaded by :func:`edgetui.store.schema.data_steps` only when
such a file is opened (they load the parsers and pyarrow)."""

from __future__ import annotations

from edgetui.store.migrate_rekey import rekey_transcript_runs
from edgetui.store.migrate_rescrub import rescrub_database, rewrite_file

__all__ = ["rekey_transcript_runs", "rescrub_database", "rewrite_file"]
