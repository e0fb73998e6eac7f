"""What one ingest did (:class:`IngestReport`), and the memory DuckDB may use while ingesting (no Textual)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Optional

#: DuckDB buffer limit while ingesting (keeps peak RSS under ~400 MB whatever the file size)
INGEST_MEMORY_LIMIT = os.environ.get("EDGETUI_INGEST_MEMORY_LIMIT", "112MB")


@dataclass
class IngestReport:
    """What one ingest did; ``messages`` are one-line notes (bad input, skipped files)."""

    runs: list[str] = field(default_factory=list)
    events_offered: int = 0
    bytes_read: int = 0
    messages: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    new_events: Optional[int] = None  # events the database did not hold before (set by the CLI)
    unchanged: int = 0  # runs recognised as unchanged from their recorded tree signature (not re-read)

    @property
    def recorded_anything(self) -> bool:
        return bool(self.runs)

    def merge(self, other: "IngestReport") -> "IngestReport":
        """This report with ``other``'s added (two ingests reported as one)."""
        self.runs += other.runs
        self.messages += other.messages
        self.failed += other.failed
        self.events_offered += other.events_offered
        self.bytes_read += other.bytes_read
        self.unchanged += other.unchanged
        if other.new_events is not None:
            self.new_events = (self.new_events or 0) + other.new_events
        return self


def note_read(report: IngestReport, nbytes: int, n_errors: int, first_error: Optional[str]) -> None:
    """Count the bytes read and note a file's bad records once (first one + how many more)."""
    report.bytes_read += nbytes
    if n_errors:
        more = (
            f" (+{n_errors - 1} more bad record(s), kept as parse_error events)"
            if n_errors > 1
            else " (kept as a parse_error event)"
        )
        report.messages.append(f"{first_error}{more}")
