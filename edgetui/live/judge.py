"""Read-only polling of the SForge judge's ``/api/v1/history`` (docs/sforge-judge.md; the history
object: docs/sforge-run-folders.md §3.4.6, its quirks §11.5).

* The token is the work container's ``SFORGE_TOKEN`` (read by
  :class:`~edgetui.hosts.docker_watch.DockerWatch` from the container's
  environment); the admin secret comes from ``SFORGE_ADMIN_SECRET`` or
  ``<log_dir>/.judge-admin-secret`` (1.1.0). Without a secret the agent view
  is fetched (auto rounds hidden).
* Only ``GET /api/v1/history`` is ever called: never register, never submit
  (a supervisor token would restart the round counters and overwrite folders).
* Requests run on a small thread pool with a short timeout; a judge that does
  not answer becomes one line in :attr:`JudgePoller.error` and is retried at
  the next interval — the supervisor keeps going.
* Neither the token nor the secret is ever put in a message or the database
  (callers add both to the recorder's secrets so any echo is scrubbed).
* Two ways to authenticate (docs/sforge-judge.md, "Authentication"): the newer
  judge's headers (``Authorization: Bearer <token>``, ``X-SForge-Admin-Secret``)
  are tried first; a judge that answers 400/401/403/422 to them is asked again
  in SForge 1.1.0's query form (``?token=..&admin_secret=..``). The form that
  worked is kept per poller (:attr:`JudgePoller.auth_form`) so later polls make
  one request; a refusal of the kept form starts over with the headers.

Entry classification (docs/sforge-run-folders.md §3.4.6, §11.5; docs/sforge-judge.md): ``error``
key or status ``error`` → judge error; status ``completed`` with ``total_tests`` 0 and a null
``summary`` → failed grading (unless the entry says ``timed_out``: an evaluation that ran out of its
time, said so); ``running`` → grading; ``queued`` → waiting in the judge's queue
(also "grading" for the run's status).
"""

from __future__ import annotations

import json
import os
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Optional

from edgetui.error_log import note_swallowed
from edgetui.events import one_line
from edgetui.parsers.run_folder_files import SMALL_FILE_LIMIT, read_run_file
from edgetui.redact import redact_obj
from edgetui.parsers.json_fields import list_at


def read_admin_secret(candidates: Iterable[Path]) -> Optional[str]:
    """``SFORGE_ADMIN_SECRET``, else the first readable ``.judge-admin-secret`` among ``candidates``."""
    env = os.environ.get("SFORGE_ADMIN_SECRET")
    if env:
        return env.strip()
    for c in candidates:
        try:
            v = read_run_file(c, limit=SMALL_FILE_LIMIT, folder=Path(c).parent).decode("utf-8", "replace").strip()
        except OSError:  # (missing; a FIFO, a link out of its folder: noted by the ingest of the runs)
            continue
        if v:
            return v
    return None


def secret_candidates(roots: Iterable[Path]) -> list[Path]:
    """Where a log dir's ``.judge-admin-secret`` can be, for runs roots given as ``<log_dir>/runs``,
    ``<log_dir>`` or a machine-grouped root."""
    out: list[Path] = []
    for r in roots:
        r = Path(r).expanduser()
        for d in (r, r.parent, r.parent.parent):
            p = d / ".judge-admin-secret"
            if p not in out:
                out.append(p)
    return out


@dataclass
class HistoryView:
    """What one /history answer says about one run."""

    fetched_at: float
    ok: bool = True
    message: Optional[str] = None
    running: list[str] = field(default_factory=list)  # rounds grading or queued (both in flight)
    queued: list[str] = field(default_factory=list)  # rounds waiting in the judge's queue (status queued)
    judge_errors: dict[str, str] = field(default_factory=dict)  # round -> error text
    failed: dict[str, str] = field(default_factory=dict)  # round -> reason
    timed_out: dict[str, str] = field(default_factory=dict)  # round -> "evaluation timed out …" (newer judges)
    best_round: Optional[str] = None
    best_pass_rate: Optional[float] = None
    best_score: Optional[float] = None
    agent_submissions: int = 0
    auto_submissions: int = 0
    n_entries: int = 0


def classify_history(h: Any, now: float) -> HistoryView:
    """:class:`HistoryView` of a parsed /history object."""
    v = HistoryView(fetched_at=now)
    if not isinstance(h, dict):
        v.ok, v.message = False, "judge history: not a JSON object"
        return v
    entries = list_at(h, "entries")
    v.n_entries = len(entries)
    for i, e in enumerate(entries):
        if not isinstance(e, dict):
            continue
        rnd = str(e.get("round") or e.get("submission_id") or f"#{i + 1}")
        status = e.get("status")
        if e.get("error") or status == "error":
            v.judge_errors[rnd] = one_line(str(e.get("error") or "evaluation failed (status error)"), 200)
        elif status in ("running", "queued"):
            v.running.append(rnd)
            if status == "queued":
                v.queued.append(rnd)
        elif (
            status == "completed"
            and e.get("type", "submission") == "submission"
            and e.get("total_tests") in (0, None)
            and e.get("summary") is None
        ):
            # the judge's own words first: a newer judge's entry says its evaluation timed out (SForge
            # 1.1.0's has no timed_out: the round's report.json and run_instance.log say it, read by
            # the live side's files, RunState.eval_timeouts)
            if e.get("timed_out"):
                rt = next(
                    (e[k] for k in ("runtime_seconds", "runtime", "runtime_s") if isinstance(e.get(k), (int, float))),
                    None,
                )
                v.timed_out[rnd] = "evaluation timed out" + (
                    f" after {rt:.0f} s (the judge's history)" if rt is not None else " (the judge's history)"
                )
            else:
                words = next((str(e[k]) for k in ("message", "stderr", "detail") if e.get(k)), None)
                v.failed[rnd] = one_line(f"judge: {words}", 200) if words else "judge reported 0 tests and no summary"
    v.best_round = h.get("best_round") or None
    v.best_pass_rate = h.get("best_pass_rate") if isinstance(h.get("best_pass_rate"), (int, float)) else None
    v.best_score = h.get("best_score") if isinstance(h.get("best_score"), (int, float)) else None
    v.agent_submissions = int(h.get("agent_submissions") or 0)
    v.auto_submissions = int(h.get("auto_submissions") or 0)
    return v


#: the two ways to authenticate to /history: the newer judge's headers, SForge 1.1.0's query string
AUTH_FORMS = ("header", "query")
#: answers that mean "not this way of authenticating" (1.1.0 answers 422 to a request without the
#: token query parameter; a headers-only judge 401 / 403 to one without the Authorization header)
_AUTH_REFUSED = (400, 401, 403, 422)


class JudgeHTTPError(RuntimeError):
    """An HTTP error status of the judge (its message names the code only, never the request)."""

    def __init__(self, code: int):
        super().__init__(f"HTTP {code}")
        self.code = code


def history_request(base_url: str, token: str, admin_secret: Optional[str], form: str) -> urllib.request.Request:
    """The GET ``/api/v1/history`` request in ``form`` (:data:`AUTH_FORMS`)."""
    url = base_url.rstrip("/") + "/api/v1/history"
    headers = {"Accept": "application/json"}
    if form == "header":
        headers["Authorization"] = f"Bearer {token}"
        if admin_secret:
            headers["X-SForge-Admin-Secret"] = admin_secret
    else:
        q = {"token": token}
        if admin_secret:
            q["admin_secret"] = admin_secret
        url += "?" + urllib.parse.urlencode(q)
    return urllib.request.Request(url, headers=headers, method="GET")


def fetch_history(base_url: str, token: str, admin_secret: Optional[str], timeout: float, form: str = "query") -> Any:
    """GET ``/api/v1/history`` in ``form`` (raises on HTTP / network / JSON errors, with secret-free
    messages: :class:`JudgeHTTPError` for an HTTP status)."""
    req = history_request(base_url, token, admin_secret, form)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:  # the user-given judge URL
            body = r.read(64 << 20)
    except urllib.error.HTTPError as e:
        raise JudgeHTTPError(e.code) from None
    except urllib.error.URLError as e:
        reason = getattr(e, "reason", e)
        raise RuntimeError(one_line(str(getattr(reason, "strerror", None) or reason), 120)) from None
    except (TimeoutError, OSError) as e:
        raise RuntimeError("timed out" if isinstance(e, TimeoutError) else (e.strerror or type(e).__name__)) from None
    try:
        return json.loads(body)
    except ValueError:
        raise RuntimeError("answer is not JSON") from None


def fetch_history_any(
    base_url: str, token: str, admin_secret: Optional[str], timeout: float, known: Optional[str]
) -> tuple[Any, str]:
    """``(history, form)``: the ``known`` form when given, else the headers, then 1.1.0's query form
    when the judge refuses the first way of authenticating (:data:`_AUTH_REFUSED`). The token and
    the secret are replaced wherever the answer holds them."""
    forms = (known,) if known else AUTH_FORMS
    sent = frozenset(x for x in (token, admin_secret) if x)
    for i, form in enumerate(forms):
        try:
            # what the judge says back (an error text may echo the request) never carries what was sent
            return redact_obj(fetch_history(base_url, token, admin_secret, timeout, form), sent), form
        except JudgeHTTPError as e:
            if e.code not in _AUTH_REFUSED or i == len(forms) - 1:
                raise
    raise AssertionError("unreachable")


class JudgePoller:
    """Polls /history for each run that has a token, every ``interval_s``, on a thread pool."""

    def __init__(
        self,
        url: str,
        admin_secret: Optional[str],
        *,
        interval_s: float = 30.0,
        timeout_s: float = 3.0,
        workers: int = 4,
        clock=time.time,
    ):
        self.url = url.rstrip("/")
        #: the judge's URL as a remote host calls it (``url`` being the local forward to it), for
        #: messages; None for a judge reached directly
        self.remote_url: Optional[str] = None
        self.admin_secret = admin_secret
        #: set while the caller is still finding the admin secret: the supervisor does not poll meanwhile
        self.holding = False
        self.interval_s = interval_s
        self.timeout_s = timeout_s
        self.clock = clock
        self.error: Optional[str] = None  # one line while the judge does not answer
        #: the way of authenticating this judge accepted (:data:`AUTH_FORMS`); None until one answer
        self.auth_form: Optional[str] = None
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="edgetui-judge")
        self._inflight: dict[str, Future] = {}
        self._next: dict[str, float] = {}
        self.views: dict[str, HistoryView] = {}
        self._lock = threading.Lock()
        self._fail_streak = 0

    def poke(self, key: str) -> None:
        """Poll ``key`` at the next :meth:`poll` (a new submission folder appeared): each poll writes
        the admin secret into the judge's log, as SForge's API requires, so polls stay rare."""
        self._next[key] = 0.0

    def poll(self, tokens: dict[str, str]) -> dict[str, HistoryView]:
        """Start due requests for ``{run_key: token}``; return views that arrived since the last call."""
        now = self.clock()
        arrived: dict[str, HistoryView] = {}
        for key, fut in list(self._inflight.items()):
            if not fut.done():
                continue
            del self._inflight[key]
            try:
                body, form = fut.result()
                self.auth_form = form
                view = classify_history(body, now)
                self._fail_streak = 0
                self.error = None
            except Exception as e:  # noqa: BLE001 - network, HTTP, JSON: one line
                if isinstance(e, JudgeHTTPError) and e.code in _AUTH_REFUSED:
                    self.auth_form = None  # the judge was replaced (an upgrade): try both ways again
                self._fail_streak += 1
                self.error = one_line(f"judge {self.url}: {e}", 200)
                view = HistoryView(fetched_at=now, ok=False, message=self.error)
            self.views[key] = view
            arrived[key] = view
        backoff = (
            min(300.0, self.interval_s * (2 ** min(self._fail_streak, 4))) if self._fail_streak else self.interval_s
        )
        for key, tok in tokens.items():
            if key in self._inflight or not tok:
                continue
            if now < self._next.get(key, 0.0):
                continue
            self._next[key] = now + backoff
            try:
                self._inflight[key] = self._pool.submit(
                    fetch_history_any, self.url, tok, self.admin_secret, self.timeout_s, self.auth_form
                )
            except RuntimeError:  # pool shut down
                break
        return arrived

    def wait(self, timeout: float = 5.0) -> None:
        """Wait for requests in flight (tests)."""
        end = time.monotonic() + timeout
        for fut in list(self._inflight.values()):
            try:
                fut.result(max(0.0, end - time.monotonic()))
            except Exception:  # noqa: BLE001 - waiting for polls in flight: their failures are theirs
                note_swallowed("waiting for polls in flight: their failures are theirs")

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
