"""One container as an engine's listing shows it (local or remote Docker; core: no Textual)."""

from __future__ import annotations

from typing import Optional

from pydantic import BaseModel


class ContainerInfo(BaseModel):
    """One container as seen in one engine listing (docker SDK ``containers.list(all=True)``)."""

    id: str
    name: str
    role: str  # work | judge | game | other
    task_id: Optional[str] = None
    run_id: Optional[str] = None  # work containers: from the name sforge.run.<task>.<run>
    submission_id: Optional[str] = None  # judge containers: <benchmark>.judge.<task>.<submission_id>
    state: str = ""  # running | exited | dead | created | paused | restarting | removing
    exit_code: Optional[int] = None
    oom_killed: bool = False
    restart_count: int = 0
    started_at: Optional[float] = None  # epoch UTC
    finished_at: Optional[float] = None
    cpu_percent: Optional[float] = None  # of one core (100 = one core busy)
    mem_bytes: Optional[int] = None
    mem_limit_bytes: Optional[int] = None
    host: str = "local"
    #: the container's image by digest (``sha256:…``, the engine's image id; None when the engine
    #: does not say): the run's task variant (docs/sforge-formats.md, "Task variants")
    image_id: Optional[str] = None
