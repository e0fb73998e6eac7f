"""Moment-detection runs: gravitational-wave-like 12-hour runs with planted reframing moments and
distractors (not part of the committed samples: ``generate.py --moment-runs DIR SEED...``). The
acceptance test of the moment detector (tests/test_moments_acceptance.py) writes them into a
temporary folder.

FROZEN with the moment detector's tuning: tests/test_moments_acceptance.py checks this file's
SHA-256 against docs/moments.md (any edit fails it; see there before changing it).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from .claude_transcript import bash_tur, read_result
from .gw_run import (
    GWRun,
    GW_CODE,
    GW_COMPONENTS,
    GW_CWD,
    GW_IDEAS,
    GW_W,
    gw_code,
    gw_local_eval,
    gw_task,
    solve_components,
)
from .run_folder import write_task
from .writers import Ids, tiny_targz


#: Spread of the non-improving scores: below-best scores are best - U(0, 2 * MR_W) hundredths, whose
#: robust spread (1.4826 x MAD) is 0.741 * MR_W. Jumps are planted as multiples of MR_SIGMA.
MR_W = 100
MR_SIGMA = 0.741 * MR_W
MR_REFRAMES = ["The residuals are not random: they all share {a}. I have been tuning {b} for an hour, but the "
               "structure itself is wrong. Stepping back: rebuild {c} around {d} instead of adjusting thresholds.",
               "Listing what the last rounds changed: only {b}. Every gain was cancelled elsewhere. The assumption "
               "under the whole pipeline, {a}, does not hold; the fix is a new stage for {d} in {c}.",
               "Stepping back before another tweak. The failures cluster in {a}. That points at {c}, not {b}. New "
               "plan: replace the approach there with {d} and keep every threshold fixed so the effect is measurable."]
MR_CAUSES = ["loud glitches in a few chunks", "signals quiet in one detector", "templates near the bank edge",
             "high mass-ratio injections", "chunks with non-stationary noise", "the shortest signals"]
MR_DIRS = ["the whitening", "coincidence", "the template bank", "parameter estimation", "the veto", "clustering"]
MR_IDEAS = ["a median-averaged PSD", "a coherent network statistic", "a local match maximisation",
            "a sine-Gaussian glitch gate", "a phase-consistency test", "per-chunk adaptive thresholds"]


class PlantedScorer:
    """Scores for a GW-like run: below-best noise of known spread, planted jumps of k * MR_SIGMA,
    small tuning gains and lucky noise (both well under the spread)."""

    def __init__(self, R: random.Random, plan: dict, control: bool):
        self.R, self.plan, self.control = R, plan, control
        self.best = None
        self.best_comps = None
        self.new_bests: list[dict] = []
        self.log: list[dict] = []     # (kind of outcome) per assign, for the truth file

    def _comps(self, s100: int, focus: str | None = None) -> dict:
        base = self.best_comps or {k: 0 for k in GW_W}
        cur = sum(GW_W[k] * base[k] for k in GW_W) if self.best_comps else None
        nominal = {k: base[k] / 10 for k in GW_W} if self.best_comps else {
            "detection": 63.6, "localisation": 21.0, "false_alarm": 58.0, "parameter_estimation": 24.0}
        if cur is not None:
            focus = focus or self.R.choice(GW_COMPONENTS)
            nominal[focus] = max(0.0, min(100.0, nominal[focus] + (s100 - cur) / 100 / (GW_W[focus] / 10)))
        return solve_components(s100, nominal)

    def _best(self, s100: int, why: str, focus: str | None = None, moment=None) -> dict:
        prev, prev_c = self.best, self.best_comps
        comps = self._comps(s100, focus)
        self.best, self.best_comps = s100, comps
        out = {"type": "best", "s100": s100, "comps": comps, "new_best": True, "prev_best": prev,
               "prev_comps": prev_c, "moment": moment, "why": why}
        self.new_bests.append(out)
        return out

    def assign(self, kind: str, h: float, *, moment: int | None = None, forced: str | None = None) -> dict:
        R = self.R
        if self.best is None:
            self.best = 4280 + R.randint(-60, 60)
            self.best_comps = None
            comps = self._comps(self.best)
            self.best_comps = comps
            out = {"type": "best", "s100": self.best, "comps": comps, "new_best": True, "prev_best": None,
                   "prev_comps": None, "why": "first"}
            self.new_bests.append(out)
            return out
        if forced == "crash":
            return {"type": "crash", "s100": None, "comps": None, "new_best": False, "prev_best": self.best}
        if forced == "invalid":
            return {"type": "invalid", "s100": 0, "comps": {k: 0 for k in GW_W}, "new_best": False,
                    "prev_best": self.best}
        if forced and forced.startswith("jump:"):
            _, why, k = forced.split(":")
            focus = R.choice(GW_COMPONENTS)
            return self._best(self.best + int(round(float(k) * MR_SIGMA)), why, focus, moment)
        r = R.random()
        if forced != "below" and kind == "agent":
            p_small = 0.10 if self.control else 0.05
            if r < p_small:   # tuning: a small real gain, or lucky noise just above the best
                return self._best(self.best + R.randint(3, int(0.3 * MR_SIGMA)), "tuning")
            if r < p_small + 0.02:
                return self._best(self.best + R.randint(1, 8), "lucky")
        if R.random() < 0.06:
            s = int(R.uniform(1100, 3400))
            return {"type": "broken", "s100": s, "comps": self._comps(s), "new_best": False, "prev_best": self.best}
        s = self.best - R.randint(1, 2 * MR_W)
        return {"type": "below", "s100": s, "comps": self._comps(s), "new_best": False, "prev_best": self.best}


def moment_plan(seed: int, control: bool) -> dict:
    """Hours of the planted reframing moments (4), behaviour changes without a jump (3), jumps
    without a behaviour change (3), with jump sizes 1-5 x MR_SIGMA; the API error that forces
    the auto-resume; the usual stop hooks, an invalid round and a --list."""
    R = random.Random(seed * 7919 + 17)
    kinds = [] if control else ["reframe"] * 4 + ["behave"] * 3 + ["jumponly"] * 3
    R.shuffle(kinds)
    hours: list[float] = []
    while len(hours) < len(kinds):
        h = round(R.uniform(1.0, 11.2), 2)
        if all(abs(h - x) >= 0.6 for x in hours):
            hours.append(h)
    hours.sort()
    items = []
    for i, (h, k) in enumerate(zip(hours, kinds)):
        items.append({"h": h, "kind": k, "id": i, "jump_sigma": round(R.uniform(1.0, 5.0), 2),
                      "delayed": k == "reframe" and R.random() < 0.3,
                      "new_file": R.random() < 0.6,
                      "text": R.choice(MR_REFRAMES).format(a=R.choice(MR_CAUSES), b=R.choice(MR_DIRS),
                                                           c=R.choice(MR_DIRS), d=R.choice(MR_IDEAS))})
    api_h = round(R.uniform(4.0, 8.0), 2)
    while any(abs(api_h - x["h"]) < 0.3 for x in items):
        api_h = round(api_h + 0.31, 2)
    events = [(it["h"], f"planted{it['id']}") for it in items]
    events += [(api_h, "api_error"), (round(R.uniform(1.2, 3.0), 2), "stop_hook"),
               (round(R.uniform(6.0, 9.0), 2), "stop_hook"), (round(R.uniform(2.0, 10.0), 2), "invalid"),
               (round(R.uniform(3.0, 9.0), 2), "list"), (11.8, "final")]
    events.sort()
    return {"items": items, "events": events}


class GWLikeRun(GWRun):
    """A GW-like 12-hour run (GWRun's machinery) with a seeded plan of planted moments."""

    def __init__(self, root: Path, task: dict, seed: int, control: bool = False):
        super().__init__(root, task)
        self.seed, self.control = seed, control
        self.plan = moment_plan(seed, control)
        self.events = list(self.plan["events"])
        self.auto_specials = []
        self.R = random.Random(seed)
        self.RC = random.Random(seed + 7)
        self.ids = Ids(seed + 13)
        self.planted_rounds: list[dict] = []

    def make_scorer(self, R):
        return PlantedScorer(R, self.plan, self.control)

    # -- the archives as these runs have written them since they had archives (frozen with the
    # detector's tuning): the edited files only, as they are when the submission is graded; the
    # logged sizes are the drawn ones; the final archive is the task's files as first read
    def archive_bytes(self, t_post: float) -> bytes:
        return tiny_targz([(f, self.ws[f]) for f in sorted(self.ws) if f.startswith("search/") or f == "run_search.py"])

    def submitted_size(self, t: float) -> int:
        return self.archive_size(t)

    def final_files(self, t: float) -> list[tuple[str, str]]:
        return [(f"{f}", "\n".join(GW_CODE.get(f, ["# synthetic"])) + "\n") for f in sorted(self.files)
                if f.endswith(".py") or f.endswith(".yaml")]

    def rethink(self, it: dict):
        """The behaviour of a reframing: a long thought and message, reading parts not touched lately,
        a new module, larger edits, a long local evaluation."""
        cl, R = self.cl, self.RC
        think = (f"Best is {self.scorer.best / 100:.2f} and the last rounds only moved it by noise. " + it["text"] +
                 " " + " ".join(R.sample(["Before the next edit, re-read the stage the failures point at.",
                                         "The dev proxy has been flat for an hour; thresholds are not the lever.",
                                         "This needs a different structure, not a different constant.",
                                         "If this is right, the component it touches should move by several points."],
                                        3)))
        pre = [("thinking", think)]
        if self.pending_text:
            pre.append(("text", self.pending_text))
            self.pending_text = None
        files = R.sample([f for f in self.files if f in GW_CODE and f.endswith(".py")], 2)
        tid = cl.api(pre + [("text", it["text"]), ("tool", "Read", {"file_path": f"{GW_CWD}/{files[0]}"})],
                     latency=(6.0, 14.0))[0]
        lines, start = gw_code(files[0], R, 30)
        cl.tool_result(tid, read_result(lines, start), dt=0.12)
        lines, start = gw_code(files[1], R, 25)
        self.step("Read", {"file_path": f"{GW_CWD}/{files[1]}"}, read_result(lines, start))
        if it["new_file"]:
            name = f"search/{R.choice(['gate', 'network', 'refine', 'adaptive', 'phasecheck'])}_{it['id']}.py"
            code = "\n".join(["import numpy as np", "", f"# {it['text'][:90]}"] +
                             [f"def stage_{j}(x, fs, cfg):\n    return x" for j in range(8)])
            path = f"{GW_CWD}/{name}"
            self.step("Write", {"file_path": path, "content": code}, f"File created successfully at: {path}",
                      tur={"type": "create", "filePath": path, "content": code})
            self.files.append(name)
            self.files.sort()
        for _ in range(3):
            f = R.choice(files)
            old = R.choice([ln for ln in GW_CODE[f] if ln.strip()])
            new = old + "\n" + "\n".join(f"    # {R.choice(GW_IDEAS)}" for _ in range(4))
            self.step("Edit", {"file_path": f"{GW_CWD}/{f}", "old_string": old, "new_string": new},
                      f"The file {GW_CWD}/{f} has been updated successfully.", pre=self.take_pre(0.5))
        out = gw_local_eval(R, self.scorer.best / 100 + 2.0)
        self.step("Bash", {"command": f"cd {GW_CWD} && python tools/local_eval.py --subset dev --n 120",
                           "description": "Run local dev evaluation", "timeout": 300000}, out,
                  exec_s=(110.0, 190.0), tur=bash_tur(out))

    def handle(self, ev):
        if not ev.startswith("planted"):
            return super().handle(ev)
        it = self.plan["items"][int(ev[len("planted"):])]
        k = it["kind"]
        if k == "jumponly":
            while True:   # an ordinary cycle whose submission jumps
                for _ in range(self.RC.choice([1, 2, 3])):
                    self.action()
                while self.last_accept is not None and self.cl.t + 10 - self.last_accept < self.cooldown + 4:
                    self.action()
                info = self.submit(pre=self.take_pre(0.2), forced=f"jump:jumponly:{it['jump_sigma']}")
                if info and not info.get("rejected"):
                    break
        else:
            self.rethink(it)
            while self.last_accept is not None and self.cl.t + 10 - self.last_accept < self.cooldown + 4:
                self.action()
            if k == "behave" or it["delayed"]:
                info = self.submit(pre=[("text", "Submitting the restructured stage.")], forced="below")
                if k == "behave":
                    self.planted_rounds.append({**it, "round": info["round"] if info else None})
                    return
                self.normal_cycle(forced=f"jump:reframe:{it['jump_sigma']}")
                info = self.last
            else:
                info = self.submit(pre=[("text", "The dev proxy jumped. Submitting to confirm on the blind set.")],
                                   forced=f"jump:reframe:{it['jump_sigma']}")
        self.planted_rounds.append({**it, "round": info["round"] if info else None})

    def truth(self, index, hist, fr, seg1_start, seg2_start, t_exit) -> dict:
        rounds = [{"round": info["round"], "kind": info["kind"], "post_epoch": info["post_epoch"],
                   "score": info["report"]["score"] if info["report"] else None,
                   "outcome": info["outcome"]["type"], "why": info["outcome"].get("why")}
                  for info in self.judge.rounds]
        return {"rounds": rounds, "control": self.control, "spread_hundredths": MR_SIGMA,
                "planted": [p for p in self.planted_rounds if p["kind"] == "reframe"],
                "distractors": [p for p in self.planted_rounds if p["kind"] != "reframe"],
                "lucky_rounds": [r["round"] for r in rounds if r["why"] == "lucky"],
                "tuning_rounds": [r["round"] for r in rounds if r["why"] == "tuning"],
                "expected": {"best_round": hist["best_round"], "best_score": hist["best_score"]}}


def build_moment_run(root: Path, seed: int, control: bool = False) -> dict:
    """Write one GW-like run ``gwlike-<seed>`` (``gwsmooth-<seed>`` for a control run without
    reframings) under ``root/runs`` with its task under ``root/tasks`` and its truth under
    ``root/_truth``; returns the truth."""
    task = gw_task()
    (root / "tasks").mkdir(parents=True, exist_ok=True)
    write_task(root, task)
    cls = type("GWLikeRunSeeded", (GWLikeRun,), {"RUN_ID": f"{'gwsmooth' if control else 'gwlike'}-{seed}"})
    run = cls(root, task, seed, control)
    spec = run.build()
    spec.update({"generated_by": "sample_runs/generate.py --moment-runs", "synthetic": True, "seed": seed,
                 "run_id": run.run_id, "task_id": run.task_id, "path": run.rel()})
    (root / "_truth").mkdir(exist_ok=True)
    (root / "_truth" / f"{run.run_id}__{run.task_id}.json").write_text(json.dumps(spec, indent=1) + "\n")
    return spec


def main(argv: list[str]) -> int:
    """``DIR SEED... [--control SEED...]``: write the runs of these seeds under DIR, those after
    ``--control`` as control runs (no reframing)."""
    out, control = Path(argv[0]), False
    for a in argv[1:]:
        if a == "--control":
            control = True
            continue
        build_moment_run(out, int(a), control)
    return 0
