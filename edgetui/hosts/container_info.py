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
    # ---- pods (edgetui.hosts.pod_watch): None / empty for a Docker container
    #: the pod's phase (Pending, Running, Succeeded, Failed, Unknown)
    phase: Optional[str] = None
    #: the node it was scheduled on
    node: Optional[str] = None
    #: why it waits or ended, in the cluster's words (ImagePullBackOff, OOMKilled, Evicted...)
    reason: Optional[str] = None
    #: its alarm events and status in the cluster's words ("FailedScheduling: 0/3 nodes are available...")
    problems: list[str] = []
    created_at: Optional[float] = None
    #: the image as the pod spec names it
    image: Optional[str] = None
    #: SFORGE_TOKEN from the pod spec's environment
    token: Optional[str] = None
    #: joined to its run by an inference (a cut name, a time window), not an exact name
    inferred: bool = False
