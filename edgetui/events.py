"""Typed event model shared by every parser, the recorder and the views.

One :class:`Event` is one thing that happened in a run: a line of
``run_agent.log``, an assistant text block, a tool call, a graded submission...
Every event carries

* its **run** (``run_key`` = ``host/run_id/task_id``; an SForge run id alone can
  hold many tasks and run ids repeat across hosts),
* its **origin** (``source`` = path relative to the run directory or an absolute
  path for a bare transcript, ``generation`` = inode + hash of the first 4 KiB so
  a truncated/rewritten file is a new generation, ``offset`` = byte offset of the
  record in the file, ``sub`` = index of the event within that record),
* its **time** (``t`` epoch seconds UTC, ``t_source`` one of ``observed`` /
  ``recorded`` / ``interpolated``; ``None`` until aligned).

The identity ``event_id`` is a hash of (run_key, source, generation, offset,
sub): re-ingesting the same bytes yields the same ids, so the recorder's
``INSERT OR IGNORE`` adds nothing.
"""

from __future__ import annotations

import hashlib
from enum import Enum
from typing import Any, Callable, Optional

from pydantic import BaseModel, ConfigDict, Field


class Kind(str, Enum):
    """Event kinds (vocabulary of architecture.md)."""

    # run lifecycle (run_agent.log, started_at, final_result.json, ...)
    RUN_CONFIG = "run_config"
    RUN_START = "run_start"
    RUN_END = "run_end"
    SEGMENT_START = "segment_start"  # "Running agent" / "Resuming agent" / init
    SEGMENT_END = "segment_end"  # "Agent exited", __SFORGE_EXIT__<n>, result event
    RESUME = "resume"  # auto-resume ("Resuming agent (attempt k/100 ...)")
    LOG = "log"  # any other harness log line
    INFRA_ERROR = "infra_error"  # ERROR line (+ its traceback lines)
    # agent transcript
    SESSION_INIT = "session_init"
    AGENT_MESSAGE = "agent_message"
    USER_MESSAGE = "user_message"
    THINKING = "thinking"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    STOP_HOOK_BLOCK = "stop_hook_block"
    COMPACTION = "compaction"
    SYSTEM = "system"  # other system / progress / hook records
    TOKEN_USAGE = "token_usage"  # usage-only records (e.g. Codex token_count)
    AGENT_RESULT = "agent_result"  # Claude ``result`` event (segment totals, cost)
    AGENT_ERROR = "agent_error"
    # submissions and grading
    SUBMISSION_SENT = "submission_sent"  # sforge-submit call (agent) / auto-eval tick
    JUDGE_RESULT = "judge_result"  # graded report.json (or failed grading)
    AUTO_EVAL_SAMPLE = "auto_eval_sample"
    AUTO_EVAL_ERROR = "auto_eval_error"
    GAME_STEP = "game_step"
    GAME_RESULT = "game_result"
    # live side
    CONTAINER_STATE = "container_state"
    RESOURCE_SAMPLE = "resource_sample"
    ALARM = "alarm"
    # user
    ANNOTATION = "annotation"
    # bad input, kept with its bytes
    PARSE_ERROR = "parse_error"


class TimeSource(str, Enum):
    OBSERVED = "observed"
    RECORDED = "recorded"
    INTERPOLATED = "interpolated"


class Usage(BaseModel):
    """Token use of one model call (tokens, not thousands)."""

    model_config = ConfigDict(frozen=True)
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


class Event(BaseModel):
    """One event of one run. See the module docstring for identity and time.

    ``data`` holds the kind-specific payload as plain JSON (tool input, tool
    output text, report fields...); ``raw`` holds the original bytes only for
    ``parse_error`` events (nothing is dropped silently).
    """

    model_config = ConfigDict(use_enum_values=True)

    run_key: str = ""
    kind: Kind
    source: str
    generation: str = ""
    offset: int = 0
    sub: int = 0
    t: Optional[float] = None
    t_source: Optional[TimeSource] = None
    summary: str = ""
    level: Optional[str] = None
    segment: Optional[int] = None
    agent_format: Optional[str] = None
    message_id: Optional[str] = None
    tool_use_id: Optional[str] = None
    parent_tool_use_id: Optional[str] = None
    tool_name: Optional[str] = None
    is_error: Optional[bool] = None
    round: Optional[str] = None
    model: Optional[str] = None
    usage: Optional[Usage] = None
    stated_cost_usd: Optional[float] = None
    data: dict[str, Any] = Field(default_factory=dict)
    raw: Optional[bytes] = None

    def event_id(self) -> str:
        """Stable identity: 16 hex chars of sha1(run_key, source, generation, offset, sub)."""
        return event_id(self.run_key, self.source, self.generation, self.offset, self.sub)


_setattr = object.__setattr__


def trusted_instance(cls: type[BaseModel], values: dict[str, Any], fields_set: set[str]) -> Any:
    """An instance of the pydantic model ``cls`` whose ``__dict__`` is ``values`` (every field, values
    already of the model's types), no validation: the end of pydantic's ``model_construct`` without
    its per-field loop. For models without extra fields, private attributes or post-init; callers
    check once that it gives what ``model_construct`` / validation gives (and fall back otherwise)."""
    m = cls.__new__(cls)
    _setattr(m, "__dict__", values)
    _setattr(m, "__pydantic_fields_set__", fields_set)
    _setattr(m, "__pydantic_extra__", None)
    _setattr(m, "__pydantic_private__", None)
    return m


#: every field in declaration order (so dumps keep the model's key order); the
#: required ``kind``/``source`` and the factory-made ``data`` are always overwritten
EVENT_DEFAULTS: dict[str, Any] = {
    _name: (None if (_field.is_required() or _field.default_factory is not None) else _field.default)
    for _name, _field in Event.model_fields.items()
}


def fast_event(d: dict[str, Any]) -> Event:
    """Build an Event from a dict whose values already have the model's types.

    Equivalent to ``Event.model_construct(**d)`` (same ``__dict__``, fields set,
    no extra / private) but ~6x cheaper. Enum fields must be given as their plain
    string values (the model uses ``use_enum_values``). Use :func:`make_event`.
    """
    full = EVENT_DEFAULTS.copy()
    full.update(d)
    if "data" not in d or full["data"] is None:
        full["data"] = {}
    return trusted_instance(Event, full, set(d))


def validated_event(d: dict[str, Any]) -> Event:
    return Event(**d)


def _self_check() -> Callable[[dict[str, Any]], Event]:
    """Use the fast path only if it yields exactly what validation yields."""
    probe: dict[str, Any] = {
        "kind": Kind.TOOL_CALL.value,
        "source": "s",
        "generation": "g",
        "offset": 3,
        "sub": 1,
        "t": 1.5,
        "t_source": TimeSource.RECORDED.value,
        "summary": "x",
        "usage": Usage(input_tokens=1),
        "data": {"input": {"a": 1}},
    }
    try:
        a = fast_event(dict(probe))
        b = Event(**probe)
        if a == b and list(a.model_dump().items()) == list(b.model_dump().items()) and type(a.kind) is str:
            return fast_event
    except Exception:  # pragma: no cover  # noqa: BLE001 - pydantic internals changed
        pass
    return validated_event  # pragma: no cover


#: ``make_event(d)``: an :class:`Event` of ``d`` (field -> value, values of the model's types, enums as
#: their string values): :func:`fast_event` when it gives what validation gives (checked once at
#: import), else validation
make_event = _self_check()

_USAGE_FIELDS = frozenset(Usage.model_fields)


def _usage_fast(input_tokens: int, output_tokens: int, cache_read_tokens: int, cache_write_tokens: int) -> Usage:
    return trusted_instance(
        Usage,
        {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cache_read_tokens": cache_read_tokens,
            "cache_write_tokens": cache_write_tokens,
        },
        set(_USAGE_FIELDS),
    )


def _usage_check() -> Callable[[int, int, int, int], Usage]:
    """Use the unvalidated Usage only if it equals (and hashes as) the validated one."""
    try:
        a, b = (
            _usage_fast(1, 2, 3, 4),
            Usage(input_tokens=1, output_tokens=2, cache_read_tokens=3, cache_write_tokens=4),
        )
        if (
            a == b
            and hash(a) == hash(b)
            and a.model_dump() == b.model_dump()
            and a.model_fields_set == b.model_fields_set
        ):
            return _usage_fast
    except Exception:  # pragma: no cover  # noqa: BLE001 - pydantic internals changed
        pass
    return lambda i, o, cr, cw: Usage(
        input_tokens=i,
        output_tokens=o,
        cache_read_tokens=cr,  # pragma: no cover
        cache_write_tokens=cw,
    )


#: ``make_usage(input, output, cache_read, cache_write)``: a :class:`Usage` of four ints (tokens), not
#: validated when that gives what validation gives (checked once at import); the parsers' hot path
make_usage = _usage_check()


def event_id(run_key: str, source: str, generation: str, offset: int, sub: int) -> str:
    h = hashlib.sha1(f"{run_key}\x1f{source}\x1f{generation}\x1f{offset}\x1f{sub}".encode())
    return h.hexdigest()[:16]


def one_line(text: Any, width: int = 160) -> str:
    """Collapse whitespace of ``text`` into one line cut to ``width`` chars (… marks a cut)."""
    if text is None:
        return ""
    if not isinstance(text, str):
        text = str(text)
    # a growing prefix, not the whole text (a tool output of megabytes for 160 characters): the
    # collapsed prefix is a prefix of the collapsed text, so once it is longer than ``width`` its
    # cut is the whole text's cut
    n = 2 * width + 16
    while n < len(text):
        s = " ".join(text[:n].split())
        if len(s) > width:
            return s[: width - 1] + "…"
        n *= 4
    s = " ".join(text.split())
    return s if len(s) <= width else s[: width - 1] + "…"
