"""Run 1 of the bundled samples: the 12-hour gravitational-wave search (score task, score_first),
whose machinery the moment runs extend.

FROZEN with the moment detector's tuning: tests/test_moments_acceptance.py checks this file's
SHA-256 against docs/moments.md (any edit fails it; see there before changing it).
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

from .claude_transcript import CLAUDE_TOOLS, Claude, bash_tur, read_result
from .judge_rounds import EMPTY_GRADE, Judge, grade_structured
from .run_folder import AutoEval, NPM_OUT_CLAUDE, RunBase, jqv, run_config
from .sforge_texts import (
    CLAUDE_RESUME,
    CLAUDE_RUN,
    NODE_INSTALL_CMD,
    evolve_prompt,
    k8s_name,
    submit_header_lines,
    submit_list_lines,
    submit_result_lines,
    submit_round_lines,
)
from .writers import Clock, SEED, TextFile, epoch_of, jdump, q6, tiny_targz, tokens_of


# ---------------------------------------------------------------------------
# Synthetic domain text (gravitational-wave search task)
# ---------------------------------------------------------------------------

GW_CWD = "/workspace/gw_search"
GW_FILES = ["config.yaml", "run_search.py", "search/__init__.py", "search/bank.py", "search/coincidence.py",
            "search/localize.py", "search/matched_filter.py", "search/pe.py", "search/pipeline.py",
            "search/psd.py", "search/triggers.py", "search/whiten.py"]
GW_CODE = {
    "search/psd.py": [
        "import numpy as np", "from scipy import signal", "",
        "def estimate_psd(strain, fs, seglen=4.0, method=\"median\"):",
        "    nperseg = int(seglen * fs)",
        "    f, pxx = signal.welch(strain, fs=fs, nperseg=nperseg, noverlap=nperseg // 2, average=method)",
        "    return f, np.maximum(pxx, 1e-50)", "",
        "def sliding_psd(strain, fs, window=64.0, step=16.0):",
        "    out = []", "    n = int(window * fs)", "    for start in range(0, len(strain) - n + 1, int(step * fs)):",
        "        out.append(estimate_psd(strain[start:start + n], fs)[1])", "    return np.array(out)",
    ],
    "search/whiten.py": [
        "import numpy as np", "from .psd import estimate_psd, sliding_psd", "",
        "def whiten(strain, fs, psd=None, taper=8.0):",
        "    if psd is None:", "        _, psd = estimate_psd(strain, fs)",
        "    win = signal.windows.tukey(len(strain), alpha=2 * taper * fs / len(strain))",
        "    spec = np.fft.rfft(strain * win)", "    freqs = np.fft.rfftfreq(len(strain), 1 / fs)",
        "    asd = np.sqrt(np.interp(freqs, np.linspace(0, fs / 2, len(psd)), psd))",
        "    return np.fft.irfft(spec / asd, n=len(strain))", "",
        "def gate_glitches(x, fs, thresh=25.0, half_width=0.25):",
        "    loud = np.flatnonzero(np.abs(x) > thresh)", "    for idx in loud:",
        "        lo, hi = max(0, idx - int(half_width * fs)), idx + int(half_width * fs)",
        "        x[lo:hi] *= signal.windows.tukey(hi - lo, 0.5)", "    return x",
    ],
    "search/bank.py": [
        "import numpy as np", "from dataclasses import dataclass", "",
        "@dataclass", "class Template:", "    mchirp: float", "    q: float", "    f_low: float = 20.0", "",
        "def build_bank(mc_min=5.0, mc_max=40.0, q_max=4.0, minimal_match=0.97):",
        "    mcs = np.geomspace(mc_min, mc_max, int(180 * (1 - minimal_match) ** -0.5 / 6))",
        "    qs = np.linspace(1.0, q_max, 7)", "    return [Template(m, q) for m in mcs for q in qs]",
    ],
    "search/matched_filter.py": [
        "import numpy as np", "from .bank import Template", "",
        "def snr_series(data_f, tmpl_f, psd, df):",
        "    corr = np.fft.irfft(data_f * np.conj(tmpl_f) / psd) * 4 * df",
        "    sigma = np.sqrt(4 * df * np.sum(np.abs(tmpl_f) ** 2 / psd))", "    return np.abs(corr) / sigma", "",
        "def chisq_veto(snr, data_f, tmpl_f, psd, bins=16):",
        "    edges = np.linspace(0, len(tmpl_f), bins + 1).astype(int)", "    chi = 0.0",
        "    for lo, hi in zip(edges[:-1], edges[1:]):",
        "        part = np.fft.irfft(data_f[lo:hi] * np.conj(tmpl_f[lo:hi]) / psd[lo:hi])",
        "        chi += np.max(np.abs(part)) ** 2", "    return chi / (2 * bins - 2)",
    ],
    "search/coincidence.py": [
        "import numpy as np", "", "MAX_DT = 0.010  # light travel time H1-L1 plus margin", "",
        "def coincide(trigs_h, trigs_l, snr_min=5.5):",
        "    pairs = []", "    for th in trigs_h:", "        if th.snr < snr_min:", "            continue",
        "        for tl in trigs_l:",
        "            if abs(th.t - tl.t) < MAX_DT and tl.snr >= snr_min:",
        "                pairs.append((th, tl, np.hypot(th.snr, tl.snr)))", "    return pairs",
    ],
    "search/localize.py": [
        "import numpy as np", "import healpy as hp", "",
        "def skymap(dt, snr_h, snr_l, nside=64):",
        "    npix = hp.nside2npix(nside)", "    theta, phi = hp.pix2ang(nside, np.arange(npix))",
        "    model_dt = 0.0100 * np.cos(theta)", "    sigma = 0.0006 * 10.0 / np.hypot(snr_h, snr_l)",
        "    logp = -0.5 * ((dt - model_dt) / sigma) ** 2", "    p = np.exp(logp - logp.max())",
        "    return p / p.sum()",
    ],
    "search/pe.py": [
        "import numpy as np", "", "def estimate(candidate, bank):",
        "    best = max(candidate.matches, key=lambda m: m.snr)",
        "    return {\"mchirp\": best.template.mchirp, \"q\": best.template.q, \"tc\": best.t}",
    ],
    "search/triggers.py": [
        "import json", "", "def write_triggers(cands, path):", "    rows = []", "    for c in cands:",
        "        rows.append({\"injection_id\": c.injection_id, \"gps\": c.t, \"snr\": round(c.snr, 3),",
        "                     \"far\": c.far, \"mchirp\": c.mchirp, \"skymap\": c.skymap_path})",
        "    with open(path, \"w\") as fh:", "        json.dump(rows, fh)",
    ],
    "search/pipeline.py": [
        "import numpy as np", "from .psd import sliding_psd", "from .whiten import whiten, gate_glitches",
        "from .bank import build_bank", "from .matched_filter import snr_series, chisq_veto",
        "from .coincidence import coincide", "from .triggers import write_triggers", "",
        "def run(strain_dir, out_dir, cfg):", "    bank = build_bank(**cfg[\"bank\"])",
        "    for chunk in load_chunks(strain_dir):", "        white = {ifo: whiten(x, chunk.fs) for ifo, x in chunk.data.items()}",
        "        trigs = {ifo: filter_bank(white[ifo], bank, cfg) for ifo in white}",
        "        cands = coincide(trigs[\"H1\"], trigs[\"L1\"], cfg[\"snr_min\"])",
        "    write_triggers(cands, f\"{out_dir}/triggers.json\")",
    ],
    "run_search.py": [
        "import argparse", "import yaml", "from search import pipeline", "",
        "def main():", "    ap = argparse.ArgumentParser()", "    ap.add_argument(\"--strain\", required=True)",
        "    ap.add_argument(\"--out\", required=True)", "    args = ap.parse_args()",
        "    cfg = yaml.safe_load(open(\"config.yaml\"))", "    pipeline.run(args.strain, args.out, cfg)", "",
        "if __name__ == \"__main__\":", "    main()",
    ],
}
GW_IDEAS = [
    "tune the chi-squared veto bin count", "tighten the bank's minimal match in the low chirp-mass corner",
    "lengthen the whitening taper to 16 s", "cluster triggers over a 0.2 s window instead of 0.5 s",
    "raise the single-detector SNR floor for the background estimate", "add a phase-consistency cut",
    "rescale the sky-map width by the measured timing error", "drop templates above q=3.5",
    "recompute the PSD every 32 s instead of 64 s", "re-rank candidates by reweighted SNR",
    "smooth the sky map with a 2-pixel Gaussian", "use the loudest template's tc instead of the bin centre",
    "cap the number of candidates per 4096-s chunk", "fix the off-by-one in the FFT frequency grid",
]
GW_COMPONENTS = ["detection", "localisation", "parameter_estimation", "false_alarm"]


def gw_code(path: str, R: random.Random, n: int) -> tuple[list[str], int]:
    body = list(GW_CODE.get(path, GW_CODE["search/pe.py"]))
    extra = [f"    # tuned {R.choice(['2026-03-12', 'run', 'dev set'])}: {R.choice(GW_IDEAS)}",
             f"    thresh = {R.uniform(4.5, 8.5):.2f}", f"    n_bins = {R.choice([8, 12, 16, 20, 24])}"]
    while len(body) < n:
        body += extra
    start = R.randint(1, 40)
    return body[:n], start


def gw_local_eval(R: random.Random, proxy: float, n=120) -> str:
    rec = min(n, int(n * (0.55 + proxy / 250) + R.randint(-3, 3)))
    return (f"loaded {n} dev injections (seed {R.randint(1, 99)})\n"
            f"detection:    {rec}/{n} recovered ({100 * rec / n:.1f}%)\n"
            f"localisation: median 90% area {R.randint(180, 1400)} deg2\n"
            f"pe:           median |dMc/Mc| {R.uniform(0.6, 9.0):.2f}%\n"
            f"background:   {R.randint(0, 14)} triggers / 10 days\n"
            f"proxy composite: {proxy + R.uniform(-2.5, 2.5):.2f}")


# ---------------------------------------------------------------------------
# Run 1: 12-hour gravitational-wave search (score task, score_first)
# ---------------------------------------------------------------------------

GW_W = {"detection": 4, "parameter_estimation": 3, "localisation": 2, "false_alarm": 1}   # tenths
GW_MOMENTS = [
    {"h": 2.55, "files": ["search/psd.py", "search/whiten.py"], "new_file": None,
     "realisation": "False alarms were eating every threshold gain because the PSD was a plain mean over the "
                    "whole 4096-s chunk: loud glitches inflated it and non-stationary stretches were mis-whitened. "
                    "Switched to a median-averaged Welch PSD on 64-s sliding windows plus glitch gating.",
     "text": "Stepping back before touching another threshold. For two hours every gain in detection has been "
             "cancelled by new false alarms, and the missed/false lists share one feature: they cluster in the "
             "chunks with loud glitches. I estimate the PSD as a plain mean over the whole 4096-s chunk, so a "
             "single glitch inflates it and the quiet, non-stationary stretches around it are mis-whitened. The "
             "problem is not the template bank or the veto, it's the noise model. New plan: median-averaged Welch "
             "PSD on 64-s sliding windows, gate loud transients before filtering, and leave every threshold "
             "exactly where it is so the effect is measurable."},
    {"h": 4.35, "files": ["search/coincidence.py", "search/matched_filter.py"], "new_file": "search/coherent.py",
     "realisation": "Requiring coincident single-detector triggers above SNR 5.5 threw away every signal that is "
                    "quiet in one detector; replaced coincidence with a coherent two-detector network statistic "
                    "(time-of-flight window + phase consistency).",
     "text": "Rethinking detection from scratch. The missed-injection list is dominated by signals with network "
             "SNR above 9 that are simply quiet in L1: I require each detector to cross SNR 5.5 on its own and "
             "then look for coincidences, so anything weak in one detector never becomes a candidate. That is the "
             "wrong question. A coherent network statistic (sum of squared SNRs within the 10 ms light-travel "
             "window, with a phase-consistency check) ranks exactly those signals. This means replacing "
             "search/coincidence.py with a coherent stage, not tuning it."},
    {"h": 8.75, "files": ["search/pe.py", "search/bank.py"], "new_file": "search/refine.py",
     "realisation": "Parameter estimation reported the template-bank grid point, whose chirp-mass spacing is "
                    "coarser than the scorer's tolerance; added a per-candidate local maximisation of the match over "
                    "(Mc, q, tc, phi) instead of refining the bank.",
     "text": "The subagent's breakdown settles it: the parameter-estimation error is the bank spacing. I report the "
             "grid point of the loudest template as the estimate, and the chirp-mass step of the bank is larger "
             "than the error the scorer tolerates, so no amount of bank tuning fixes it cheaply. Instead of a "
             "denser bank I should refine each candidate: start from the peak template and maximise the match "
             "locally over (Mc, q, tc, phi) with a few Nelder-Mead iterations. That is cheap per candidate and "
             "attacks the error directly."},
]
GW_SMALL_TARGETS = [(0.5, "agent"), (0.7, "agent"), (0.95, "agent"), (1.45, "agent"), (1.75, "agent"),
                    (2.05, "agent"), (2.3, "agent"), (3.2, "agent"), (3.55, "agent"), (3.85, "agent"),
                    (4.1, "agent"), (5.0, "auto"), (5.5, "agent"), (5.9, "agent"), (6.35, "agent"),
                    (6.75, "agent"), (7.15, "auto"), (7.55, "agent"), (8.15, "agent"), (9.5, "agent"),
                    (10.1, "agent"), (10.75, "agent"), (11.25, "agent")]


def gw_nominal(h, m1, m2, m3, h_m2):
    det = 63.6 + 0.8 * min(1.0, h / 3.0)
    if m2:
        det = 79.4 + 10.0 * min(1.0, max(0.0, h - h_m2) / 2.6)
    loc = 20.0 + 20.0 * (1 - math.exp(-h / 4.0)) + (6.0 if m1 else 0.0)
    fa = 58.0 + 3.0 * min(1.0, h / 3.0) + (16.0 if m1 else 0.0) + 2.0 * min(1.0, max(0.0, h - 6.0) / 5.0)
    pe = 24.0 + 14.0 * (1 - math.exp(-h / 3.5)) + (5.0 if m1 else 0.0) + (13.0 if m3 else 0.0)
    return {"detection": det, "localisation": loc, "false_alarm": fa, "parameter_estimation": pe}


def solve_components(s100: int, nominal: dict) -> dict:
    """Integer tenths per component with sum(w*c) == s100 exactly (score in hundredths)."""
    if s100 <= 0:
        return {k: 0 for k in GW_W}

    def cl(v):
        return max(0, min(1000, int(round(v))))

    d, l, f0 = cl(nominal["detection"] * 10), cl(nominal["localisation"] * 10), cl(nominal["false_alarm"] * 10)
    rest = s100 - 4 * d - 2 * l
    if rest > 4000:
        dd = min(1000 - d, -(-(rest - 4000) // 4))
        d += dd
        rest -= 4 * dd
        if rest > 4000:
            dl = -(-(rest - 4000) // 2)
            l += dl
            rest -= 2 * dl
    if rest < 0:
        dd = min(d, -(rest // 4))  # ceil(-rest / 4)
        d -= dd
        rest += 4 * dd
        if rest < 0:
            dl = -(rest // 2)  # ceil(-rest / 2)
            l -= dl
            rest += 2 * dl
    p = max(0, min(1000, int(round((rest - f0) / 3))))
    f = rest - 3 * p
    if f > 1000:
        p += -(-(f - 1000) // 3)
    elif f < 0:
        p -= -(f // 3)  # ceil(-f / 3)
    f = rest - 3 * p
    c = {"detection": d, "parameter_estimation": p, "localisation": l, "false_alarm": f}
    assert all(0 <= v <= 1000 for v in c.values()) and sum(GW_W[k] * v for k, v in c.items()) == s100, (s100, c)
    return c


class GWScorer:
    def __init__(self, R: random.Random):
        self.R = R
        h_m2 = GW_MOMENTS[1]["h"]
        targets = [{"h": h, "who": who} for h, who in GW_SMALL_TARGETS]
        targets += [{"h": m["h"], "who": "moment", "moment": i} for i, m in enumerate(GW_MOMENTS)]
        targets.sort(key=lambda x: x["h"])
        first_h = 0.33
        rows = [{"h": first_h, "who": "first"}] + targets
        for r in rows:
            flags = [r["h"] >= m["h"] for m in GW_MOMENTS]
            r["nominal"] = gw_nominal(r["h"], *flags, h_m2)
            r["N"] = sum(GW_W[k] * r["nominal"][k] for k in GW_W) * 10   # hundredths
        n0, n1 = rows[0]["N"], rows[-1]["N"]
        for r in rows:
            r["v"] = int(round(4280 + (r["N"] - n0) * (6700 - 4280) / (n1 - n0)))
        for a, b in zip(rows, rows[1:]):
            assert b["v"] > a["v"] + 4, (a, b)
        for r in rows:
            r["comps"] = solve_components(r["v"], r["nominal"])
        self.first = rows[0]
        self.targets = rows[1:]
        self.best = None
        self.best_comps = None
        self.new_bests: list[dict] = []

    def _below(self, kind: str, forced: str | None) -> dict:
        R = self.R
        best = self.best
        if forced == "crash":
            return {"type": "crash", "s100": None, "comps": None}
        if forced == "invalid":
            return {"type": "invalid", "s100": 0, "comps": {k: 0 for k in GW_W}}
        r = R.random()
        if kind == "auto":
            typ = "broken" if r < 0.08 else "below"
            d = int(R.expovariate(1 / 260.0)) + 15
        else:
            typ = "broken" if r < 0.09 else "below"
            d = int(R.uniform(10, 420)) if r < 0.75 else int(R.uniform(420, 1350))
        if typ == "broken":
            s = int(R.uniform(1100, 3400))
            nominal = {k: self.best_comps[k] / 10 * R.uniform(0.25, 0.75) for k in GW_W}
        else:
            d = min(d, best - 50)
            s = best - max(5, d)
            drop = [R.random() + 0.05 for _ in GW_W]
            tot = sum(drop)
            nominal = {}
            for (k, w), fr in zip(GW_W.items(), drop):
                nominal[k] = max(0.0, self.best_comps[k] / 10 - (fr / tot) * (best - s) / 100 / (w / 10))
        return {"type": typ, "s100": s, "comps": solve_components(s, nominal)}

    def assign(self, kind: str, h: float, *, moment: int | None = None, forced: str | None = None) -> dict:
        if self.best is None:
            row = self.first
            self.best, self.best_comps = row["v"], row["comps"]
            out = {"type": "best", "s100": row["v"], "comps": row["comps"], "new_best": True, "prev_best": None,
                   "prev_comps": None}
            self.new_bests.append(out)
            return out
        if forced is None and self.targets:
            tgt = self.targets[0]
            ok = (tgt["who"] == "moment" and moment == tgt["moment"]) or \
                 (tgt["who"] == kind and moment is None and h >= tgt["h"])
            if ok:
                self.targets.pop(0)
                prev, prev_c = self.best, self.best_comps
                self.best, self.best_comps = tgt["v"], tgt["comps"]
                out = {"type": "best", "s100": tgt["v"], "comps": tgt["comps"], "new_best": True,
                       "prev_best": prev, "prev_comps": prev_c, "moment": tgt.get("moment")}
                self.new_bests.append(out)
                return out
            if moment is not None:
                raise RuntimeError(f"moment {moment} submitted before pending target {tgt}")
        out = self._below(kind, forced)
        out.update(new_best=False, prev_best=self.best)
        return out


def gw_eval_output(outcome: dict, runtime: float, R: random.Random, task: dict) -> tuple[str, dict]:
    eval_cmd = task["judge"]["eval_cmd"]
    pre = ["+ echo '>>>>> Start Test Output'", ">>>>> Start Test Output"]
    pre += ["+ " + part.strip() for part in eval_cmd.split("&&")]
    n_tmpl = R.randint(900, 1900)
    body = ["[evaluate] strain: 2 detectors x 12 chunks x 4096 s, fs=4096 Hz; 400 blind injections",
            "[evaluate] running submission: python run_search.py --strain /opt/judge/data/strain --out /tmp/eval_out",
            f"[run_search] bank: {n_tmpl} templates"]
    post = ["+ EXIT_CODE=0", "+ echo '>>>>> End Test Output'", ">>>>> End Test Output",
            "+ echo 'Exit code: 0'", "Exit code: 0"]
    if outcome["type"] == "crash":
        body += ["Traceback (most recent call last):",
                 '  File "/workspace/gw_search/run_search.py", line 3, in <module>',
                 "    from search import pipeline",
                 '  File "/workspace/gw_search/search/pipeline.py", line 9, in <module>',
                 "    from .triggers import write_triggers, TriggerRow",
                 "ImportError: cannot import name 'TriggerRow' from 'search.triggers' "
                 "(/workspace/gw_search/search/triggers.py)",
                 "[evaluate] submission exited with code 1; no triggers to score"]
        post = [p.replace("EXIT_CODE=0", "EXIT_CODE=1").replace("code: 0", "code: 1") for p in post]
        text = "\n".join(pre[:2] + pre[2:] + body + post) + "\n"
        return text, dict(EMPTY_GRADE)
    comps = outcome["comps"]
    s100 = outcome["s100"]
    det, loc, pe, fa = (comps["detection"] / 10, comps["localisation"] / 10,
                        comps["parameter_estimation"] / 10, comps["false_alarm"] / 10)
    rec = int(round(4 * det))
    n_fa = int(round(60 * (1 - fa / 100)))
    if outcome["type"] == "invalid":
        bad = R.randint(120, 330)
        data = {"valid": False, "score": 0.0,
                "summary": f"invalid submission: triggers.json has {bad} rows without an injection_id",
                "details": [{"name": k, "status": "FAILED", "message": "not scored (invalid output)",
                             "score": 0.0, "weight": GW_W[k] / 10} for k in GW_COMPONENTS],
                "metrics": {"injections": 400, "rows_rejected": bad}}
        body += [f"[run_search] wrote {R.randint(380, 460)} candidates to /tmp/eval_out/triggers.json",
                 f"[evaluate] schema check failed: {bad} rows without injection_id"]
    else:
        msgs = {"detection": f"recovered {rec}/400 injections at FAR <= 1/month",
                "localisation": f"median 90% credible area {2000 * (1 - loc / 100) + 40:.0f} deg2",
                "parameter_estimation": f"median |dMc/Mc| = {12 * (1 - pe / 100) + 0.3:.2f}%",
                "false_alarm": f"{n_fa} background triggers above threshold in 30 days"}
        vals = {"detection": det, "localisation": loc, "parameter_estimation": pe, "false_alarm": fa}
        data = {"valid": True, "score": s100 / 100,
                "summary": (f"composite {s100 / 100:.2f} (detection {det:.1f}, localisation {loc:.1f}, "
                            f"parameter_estimation {pe:.1f}, false_alarm {fa:.1f})"),
                "details": [{"name": k, "status": "PASSED" if vals[k] >= 60.0 else "FAILED", "message": msgs[k],
                             "score": vals[k], "weight": GW_W[k] / 10} for k in GW_COMPONENTS],
                "metrics": {"injections": 400, "recovered": rec, "background_days": 30, "false_alarms": n_fa,
                            "eval_wall_seconds": round(runtime - R.uniform(1.0, 3.0), 1)}}
        body += [f"[run_search] wrote {R.randint(380, 520)} candidates to /tmp/eval_out/triggers.json",
                 f"[evaluate] matched {rec}/400 injections (|dt| < 50 ms)",
                 f"[evaluate] background: 30 days of time slides, {n_fa} triggers above threshold"]
    body += [">>>>> Start Structured Result", json.dumps(data, indent=2), ">>>>> End Structured Result"]
    text = "\n".join(pre + body + post) + "\n"
    return text, grade_structured(data)


GW_QUERY = """# Gravitational-wave signal search (synthetic task description)

You are given two detectors' worth of calibrated strain (`data/strain/`, H1 and L1, 4096 Hz, 4096-s
chunks) from a simulated observing run with realistic non-stationary noise and glitches. Blind
compact-binary injections are hidden in the judge's copy of the data.

Write a search pipeline in `search/` driven by `run_search.py --strain <dir> --out <dir>` that writes
`<out>/triggers.json`: one row per candidate with `injection_id` (the GPS second of the candidate, as
an integer string), `gps`, `snr`, `far` (per year), `mchirp`, `q`, and a sky-map path.

The judge runs your pipeline on 400 blind injections plus 30 days of time-slid background and reports a
composite score (0-100) with four components:

- `detection` (weight 0.4): fraction of injections recovered at FAR <= 1/month
- `parameter_estimation` (weight 0.3): accuracy of chirp mass and mass ratio
- `localisation` (weight 0.2): size of the 90% credible sky area
- `false_alarm` (weight 0.1): background triggers above your own threshold

`tools/local_eval.py` scores your pipeline on a small public dev set. Runtime limit: 15 minutes per
evaluation on 4 CPUs."""


def gw_task() -> dict:
    return {
        "task_id": "gw_signal_search",
        "name": "Gravitational-wave compact-binary signal search",
        "base_image": "python311_sci",
        "platform": "linux/amd64",
        "cwd": GW_CWD,
        "submit_paths": ["search", "run_search.py", "config.yaml"],
        "submit_exclude": ["tests/", "data/"],
        "internet": True,
        "game_mode": False,
        "category": "Scientific Computing",
        "work": {"agent_query": GW_QUERY, "image_tag": "5b1f0c7d2e94", "cpu_limit": 4, "mem_limit": "16g"},
        "judge": {
            "eval_cmd": ("cd /workspace/gw_search && python /opt/judge/evaluate.py --submission /workspace/gw_search "
                         "--injections /opt/judge/data/blind_o4_400.hdf5 --background-days 30"),
            "eval_timeout": 900,
            "parser": "structured_json",
            "score_direction": "maximize",
            "selection": "score_first",
            "rescale": {"kind": "linear", "lower": 10.0, "upper": 90.0},
            "image_tag": "a41c9e07b3d2",
            "cpu_limit": 4,
            "mem_limit": "8g",
        },
    }


class GWRun(RunBase):
    RUN_ID = "opus48-edge-3-20260312005800"
    EVENTS = [(0.06, "subagent1"), (1.2, "crash_cooldown"), (1.6, "stop_hook"), (1.9, "invalid"),
              (2.55, "moment0"), (3.9, "stop_hook"), (4.35, "moment1"),
              (5.25, "api_error"), (6.2, "list"), (6.5, "stop_hook"),
              (7.7, "shell_timeout"), (8.45, "subagent2"), (8.75, "moment2"), (9.45, "invalid"),
              (9.65, "stop_hook"), (11.45, "stop_hook"), (11.8, "final")]

    def __init__(self, root: Path, task: dict):
        super().__init__(root, self.RUN_ID, task, Clock(480), "k8s", SEED + 101)
        self.model = "claude-opus-4-8"
        self.skew = 1.37
        self.judge_url = "http://10.128.0.12:8080"
        self.timeout, self.interval, self.cooldown = 43200, 1800, 120
        self.agent_n = 0
        self.last_accept = None
        self.state = {"best_pass_rate": 0, "best_score": None, "best_round": "", "submissions": []}
        self.subs: dict[str, dict] = {}
        self.rejections: list[dict] = []
        self.moments: list[dict] = []
        self.killed = False
        self.t_kill = float("inf")
        self.last: dict | None = None
        self.events = list(self.EVENTS)
        self.auto_specials = [(6.1, "invalid")]
        self.files = list(GW_FILES)
        self.pending_text: str | None = None
        self.ws: dict[str, str] = {}   # the edited files as the moment runs' archives hold them (GWLikeRun)
        self.ws_log: list[tuple] = []  # (time the tool result came, file, text written) or (..., old, new)
        self._archive: tuple[float, bytes] | None = None

    # -- helpers -------------------------------------------------------------
    def make_scorer(self, R: random.Random):
        return GWScorer(R)

    def h(self, t):
        return (t - self.started) / 3600.0

    def archive_size(self, t):
        return int(2100 + 95 * len(self.files) + 55 * self.h(t) + self.R.randint(-40, 40))

    # -- the workspace, so that each submission.tar.gz holds what the transcript did ----------
    def workspace_at(self, t: float) -> dict[str, str]:
        """The submitted files at time ``t``: the task's files as the transcript reads them (a file
        without code of its own reads as search/pe.py, as ``gw_code`` shows it), then every
        Write and Edit done by ``t``. No random draw."""
        ws = {f: ("\n".join(GW_CODE.get(f, GW_CODE["search/pe.py"])) + "\n" if f.endswith(".py")
                  else "# gw_search settings (synthetic)\nthreshold: 6.0\nbank: bank.hdf5\n") for f in GW_FILES}
        for op in self.ws_log:
            if op[0] > t:
                break
            if len(op) == 3:                       # Write
                ws[op[1]] = op[2]
            else:                                  # Edit: as the Edit tool does (an old string not found: appended)
                cur, old, new = ws.get(op[1], ""), op[2], op[3]
                ws[op[1]] = cur.replace(old, new, 1) if old in cur else cur + new + "\n"
        return ws

    def archive_at(self, t: float) -> bytes:
        """``submission.tar.gz`` of a submission posted at ``t`` (the last one built is kept)."""
        if self._archive is None or self._archive[0] != t:
            ws = self.workspace_at(t)
            self._archive = (t, tiny_targz([(f, ws[f]) for f in sorted(ws)]))
        return self._archive[1]

    def submitted_size(self, t: float) -> int:
        """The size sforge-submit, the judge and the tick log print: the archive's own."""
        self.archive_size(t)   # drawn as before the archives were written: the run's other draws stay as they were
        return len(self.archive_at(t))

    def final_files(self, t: float) -> list[tuple[str, str]]:
        ws = self.workspace_at(t)
        return [(f, ws[f]) for f in sorted(ws)]

    def runtime_for(self, outcome):
        if outcome["type"] == "crash":
            return self.R.uniform(5.0, 9.0)
        return self.R.uniform(58.0, 140.0)

    def archive_bytes(self, t_post: float) -> bytes:
        return self.archive_at(t_post)

    def grade(self, rid, kind, t_post, outcome, runtime, size=None):
        text, graded = gw_eval_output(outcome, runtime, self.RC, self.task)
        info = self.judge.grade(rid, kind, t_post, size or self.submitted_size(t_post), runtime, text, graded,
                                allowed_files=sorted(self.files), archive_bytes=self.archive_bytes(t_post))
        info["outcome"] = outcome
        info["elapsed_hours"] = round(self.h(info["grading_start_epoch"]), 4)
        self.subs[rid] = info
        return info

    def fire_auto(self, rid, t_post):
        h = self.h(t_post)
        forced = None
        if self.auto_specials and h >= self.auto_specials[0][0]:
            forced = self.auto_specials.pop(0)[1]
        outcome = self.scorer.assign("auto", h, forced=forced)
        return self.grade(rid, "auto", t_post, outcome, self.runtime_for(outcome))

    def flush_autos(self, upto):
        self.auto.flush(upto, self.fire_auto)

    # -- agent actions -------------------------------------------------------
    def step(self, tool, inp, result, *, exec_s=(0.05, 0.3), is_error=False, tur=None, pre=(), latency=(2.0, 7.0)):
        cl = self.cl
        tid = cl.api(list(pre) + [("tool", tool, inp)], latency=latency)[0]
        dt = self.R.uniform(*exec_s) if isinstance(exec_s, tuple) else exec_s
        cl.tool_result(tid, result, is_error=is_error, dt=dt, tur=tur)
        path = inp.get("file_path", "") if isinstance(inp, dict) else ""
        if not is_error and path.startswith(GW_CWD + "/") and tool in ("Write", "Edit"):
            rel = path[len(GW_CWD) + 1:]
            if tool == "Write":
                self.ws[rel] = inp["content"] + "\n"
                self.ws_log.append((cl.t, rel, self.ws[rel]))
            else:
                cur = self.ws.get(rel, "\n".join(GW_CODE.get(rel, [])) + "\n")
                old, new = inp["old_string"], inp["new_string"]
                self.ws[rel] = cur.replace(old, new, 1) if old in cur else cur + new + "\n"
                self.ws_log.append((cl.t, rel, old, new))
        return tid

    def take_pre(self, think_p=0.35) -> list:
        pre = []
        if self.RC.random() < think_p:
            pre.append(("thinking", self.thinking()))
        if self.pending_text:
            pre.append(("text", self.pending_text))
            self.pending_text = None
        return pre

    def thinking(self) -> str:
        R = self.RC
        best = self.scorer.best / 100 if self.scorer.best else 0
        parts = [f"Best is {best:.2f}.",
                 f"The {R.choice(GW_COMPONENTS)} component is the one with the most headroom per hour of work.",
                 f"If I {R.choice(GW_IDEAS)}, the local proxy should move by maybe {R.uniform(0.2, 1.5):.1f}.",
                 "The dev set is only 120 injections, so differences below ~1 point are noise.",
                 f"Last eval took {R.randint(60, 140)} s; keep the pipeline under the 15-minute limit.",
                 "I should keep the submitted files runnable at all times because of the auto-eval.",
                 f"Check whether the {R.choice(['whitening', 'veto', 'clustering', 'sky map', 'bank'])} change "
                 f"interacts with the threshold ({R.uniform(4.5, 8.5):.2f})."]
        R.shuffle(parts)
        return " ".join(parts[:R.randint(2, 5)])

    def action(self):
        R = self.RC
        kind = R.choices(["read", "edit", "grep", "local", "misc", "todo"], [26, 34, 10, 20, 8, 2])[0]
        path = R.choice([f for f in self.files if f.endswith(".py")])
        full = f"{GW_CWD}/{path}"
        pre = self.take_pre()
        if kind == "read":
            lines, start = gw_code(path, R, R.randint(12, 40))
            inp = {"file_path": full} if R.random() < 0.5 else {"file_path": full, "offset": start, "limit": len(lines)}
            content = read_result(lines, start)
            self.step("Read", inp, content, pre=pre,
                      tur={"type": "text", "file": {"filePath": full, "content": "\n".join(lines),
                                                    "numLines": len(lines), "startLine": start,
                                                    "totalLines": start + len(lines) + R.randint(0, 60)}})
        elif kind == "edit":
            lines, _ = gw_code(path, R, 14)
            old = R.choice([ln for ln in lines if ln.strip()])
            new = old + f"  # {R.choice(GW_IDEAS)}" if R.random() < 0.5 else old.replace("0", "1", 1)
            if new == old:
                new = old + "  # revisit"
            if R.random() < 0.04:
                msg = f"String to replace not found in file.\nString: {old}"
                self.step("Edit", {"file_path": full, "old_string": old, "new_string": new},
                          f"<tool_use_error>{msg}</tool_use_error>", is_error=True, pre=pre, tur="Error: " + msg)
            else:
                self.step("Edit", {"file_path": full, "old_string": old, "new_string": new},
                          f"The file {full} has been updated successfully.", pre=pre,
                          tur={"filePath": full, "oldString": old, "newString": new, "replaceAll": False,
                               "userModified": False})
        elif kind == "grep":
            pat = R.choice(["snr_min", "thresh", "chisq", "psd", "tc", "far", "nside", "minimal_match"])
            hits = [f"{p}:{R.randint(3, 120)}:    {pat} = {R.uniform(0.1, 9.0):.3f}"
                    for p in R.sample([f for f in self.files if f.endswith('.py')], R.randint(1, 4))]
            out = "\n".join(hits)
            self.step("Bash", {"command": f"cd {GW_CWD} && grep -rn \"{pat}\" search/ run_search.py | head -20",
                               "description": f"Find uses of {pat}"}, out, exec_s=(0.05, 0.4), pre=pre,
                      tur=bash_tur(out))
        elif kind == "local":
            proxy = (self.scorer.best or 4280) / 100 - R.uniform(-1.0, 3.0)
            if R.random() < 0.06:
                out = ("Exit code 1\nTraceback (most recent call last):\n"
                       f'  File "{GW_CWD}/tools/local_eval.py", line 41, in <module>\n'
                       "    res = run_pipeline(cfg)\n"
                       f'  File "{GW_CWD}/search/whiten.py", line {R.randint(10, 40)}, in whiten\n'
                       "    return np.fft.irfft(spec / asd, n=len(strain))\n"
                       "ValueError: operands could not be broadcast together with shapes (8193,) (4097,)")
                self.step("Bash", {"command": f"cd {GW_CWD} && python tools/local_eval.py --subset dev --n 120",
                                   "description": "Run local dev evaluation", "timeout": 300000}, out,
                          exec_s=(6.0, 14.0), is_error=True, pre=pre, tur="Error: " + out[len("Exit code 1\n"):])
            else:
                out = gw_local_eval(R, proxy)
                self.step("Bash", {"command": f"cd {GW_CWD} && python tools/local_eval.py --subset dev --n 120",
                                   "description": "Run local dev evaluation", "timeout": 300000}, out,
                          exec_s=(22.0, 95.0), pre=pre, tur=bash_tur(out))
        elif kind == "misc":
            n = R.randint(6, 14)
            out = "." * n + f"{' ' * (70 - n)}[100%]\n{n} passed in {R.uniform(1.5, 6.0):.2f}s"
            self.step("Bash", {"command": f"cd {GW_CWD} && python -m pytest -q tests/test_units.py",
                               "description": "Run unit tests"}, out, exec_s=(2.0, 7.0), pre=pre,
                      tur=bash_tur(out))
        else:
            todos = [{"content": R.choice(GW_IDEAS).capitalize(), "status": st,
                      "activeForm": "Working on " + R.choice(GW_IDEAS)} for st in ("completed", "in_progress", "pending")]
            self.step("TodoWrite", {"todos": todos},
                      "Todos have been modified successfully. Ensure that you continue to use the todo list to track "
                      "your progress. Please proceed with the current tasks if applicable", pre=pre,
                      tur={"oldTodos": [], "newTodos": todos})

    def reaction(self, info) -> str:
        R = self.RC
        o, rid = info["outcome"], info["round"]
        if o["type"] == "crash":
            return (f"{rid} came back without a score: the judge's run hit an ImportError (search/pipeline.py still "
                    "imports TriggerRow, which I renamed). Fixing the import right away.")
        best = self.scorer.best / 100
        if o["type"] == "invalid":
            return (f"{rid} was marked invalid ({info['api_report']['summary']}). The writer drops injection_id for "
                    "candidates that merged during clustering; restoring the field.")
        s = o["s100"] / 100
        if o["new_best"]:
            prev = o["prev_best"] / 100 if o["prev_best"] else None
            pb = o["prev_comps"] or o["comps"]
            diffs = sorted(GW_COMPONENTS, key=lambda k: o["comps"][k] - pb[k], reverse=True)
            k = diffs[0]
            head = f"{rid}: new best {s:.2f}" + (f" (previous best {prev:.2f})." if prev else ".")
            return (f"{head} {k} moved {pb[k] / 10:.1f} -> {o['comps'][k] / 10:.1f}. Keeping it; next I'll "
                    f"{R.choice(GW_IDEAS)}.")
        bc = self.scorer.best_comps
        k = min(GW_COMPONENTS, key=lambda c: o["comps"][c] - bc[c])
        what = ("That change hurt" if o["type"] == "broken" else R.choice(["Slightly worse", "No gain", "Worse"]))
        return (f"{rid}: {s:.2f}, below the best {best:.2f}. {what}: {k} {bc[k] / 10:.1f} -> {o['comps'][k] / 10:.1f}. "
                f"{R.choice(['Reverting that part.', 'Reverting and trying the next idea.', 'Keeping the refactor, undoing the tweak.', 'Going back to the best config.'])}")

    def submit(self, *, moment=None, forced=None, runtime=None, details=False, pre=()):
        cl, R = self.cl, self.R
        cmd = "sforge-submit --details" if details else "sforge-submit"
        tid = cl.api(list(pre) + [("tool", "Bash", {"command": f"cd {GW_CWD} && {cmd}",
                                                    "description": "Submit current code for evaluation",
                                                    "timeout": 600000})])[0]
        t_call = cl.t
        t_post = t_call + R.uniform(0.9, 2.4)
        if t_post > self.t_kill:
            self.killed = True
            return None
        size = self.submitted_size(t_post)
        header = submit_header_lines(size)
        if self.last_accept is not None and t_post - self.last_accept < self.cooldown:
            wait = int(self.cooldown - (t_post - self.last_accept)) + 1
            detail = (f"Submission cooldown active — wait {wait}s before next submission. "
                      "Continue working on improvements and submit again later.")
            out = "\n".join(header + [detail, f"COOLDOWN: {detail}"])
            cl.tool_result(tid, "Exit code 1\n" + out.strip("\n"), is_error=True, dt=t_post + 0.08 - cl.t,
                           tur="Error: Exit code 1\n" + out.strip("\n"))
            self.rejections.append({"reason": "cooldown", "tool_use_id": tid, "call_epoch": q6(t_call),
                                    "post_epoch": q6(t_post), "wait_seconds": wait})
            return {"rejected": True, "wait": wait}
        self.flush_autos(t_post)
        self.agent_n += 1
        rid = f"agent-{self.agent_n}"
        self.last_accept = t_post + 0.02
        h = self.h(t_post)
        outcome = self.scorer.assign("agent", h, moment=moment, forced=forced)
        info = self.grade(rid, "agent", t_post, outcome, runtime or self.runtime_for(outcome), size)
        info["submit_call_epoch"] = q6(t_call)
        info["tool_use_id"] = tid
        t_ret = info["grading_start_epoch"] + R.uniform(0.005, 0.03)
        k = math.ceil((info["completed_epoch"] - t_ret) / 10.03)
        t_seen = t_ret + k * 10.03 + R.uniform(0.01, 0.08)
        if t_seen - t_call > 600:
            t_to = t_call + 600 + R.uniform(0.05, 0.3)
            partial = "\n".join(header + submit_round_lines(rid, None)).strip("\n")
            cl.tool_result(tid, "Command timed out after 10m 0s\n" + partial, is_error=True, dt=t_to - cl.t,
                           tur="Error: Command timed out after 10m 0s\n" + partial)
            info["shell_tool_timeout"] = True
            info["result_seen_epoch"] = None
            self.last = info
            return info
        if t_seen > self.t_kill:
            self.killed = True
            cl.t = t_seen
            info["result_seen_epoch"] = None
            return info
        at = int(t_seen + self.skew)
        rep = info["api_report"]
        rate, score = jqv(rep["pass_rate"]), jqv(rep["score"])
        self.state["submissions"].append({"kind": "agent", "round": rid, "at": at, "pass_rate": rate,
                                          "score": score})
        if rate > self.state["best_pass_rate"]:
            self.state.update(best_pass_rate=rate, best_round=rid, best_score=score)
        info["result_seen_epoch"] = q6(t_seen)
        info["evolve_at"] = at
        content = "\n".join(header + submit_round_lines(rid, None) + submit_result_lines(rid, rep, details)).strip("\n")
        cl.tool_result(tid, content, dt=t_seen + R.uniform(0.15, 0.4) - cl.t, tur=bash_tur(content))
        self.last = info
        self.pending_text = self.reaction(info)
        return info

    def normal_cycle(self, forced=None):
        for _ in range(self.RC.choice([1, 2, 2, 3, 3, 3, 4, 4])):
            self.action()
            if self.cl.t > self.t_kill:
                return
        # the prompt announces the cooldown: keep working until it has passed
        while self.last_accept is not None and self.cl.t + 10 - self.last_accept < self.cooldown + 4:
            self.action()
        self.submit(pre=self.take_pre(0.2), forced=forced)

    # -- special events ------------------------------------------------------
    def subagent(self, desc, prompt, steps, final, intro):
        cl = self.cl
        tid = cl.api(self.take_pre(0.3) + [("text", intro), ("tool", "Task", {"description": desc, "prompt": prompt,
                                                                              "subagent_type": "general-purpose"})])[0]
        cl.user_text(prompt, parent=tid, dt=0.4)
        for name, inp, res, dt in steps:
            sid = cl.api([("tool", name, inp)], parent=tid, latency=(1.5, 4.0))[0]
            cl.tool_result(sid, res, parent=tid, dt=dt, tur=bash_tur(res) if name == "Bash" else None)
        cl.api([("text", final)], parent=tid, latency=(2.0, 5.0))
        cl.tool_result(tid, [{"type": "text", "text": final}], dt=0.5)
        self.subagent_ids.append(tid)

    def moment(self, i):
        cl, R = self.cl, self.RC
        m = GW_MOMENTS[i]
        think = (f"Best is stuck around {self.scorer.best / 100:.2f}. Listing what the last dozen rounds changed: "
                 "thresholds, veto bins, clustering windows. All local optimisations of the same structure. "
                 "Before another tweak, re-check the assumption the structure rests on. "
                 + m["realisation"])
        pre = [("thinking", think)]
        if self.pending_text:
            pre.append(("text", self.pending_text))
            self.pending_text = None
        line_index = len(self.out.items)
        tid = cl.api(pre + [("text", m["text"]), ("tool", "Read", {"file_path": f"{GW_CWD}/{m['files'][0]}"})],
                     latency=(6.0, 14.0))[0]
        # locate the text line we just emitted
        msg_line = None
        for j in range(line_index, len(self.out.items)):
            if '"type":"text"' in self.out.items[j][0] and m["text"][:40] in self.out.items[j][0]:
                msg_line = j
        lines, start = gw_code(m["files"][0], R, 30)
        cl.tool_result(tid, read_result(lines, start), dt=0.12)
        self.moment_msg.append((i, msg_line))
        for f in m["files"][1:]:
            lines, start = gw_code(f, R, 25)
            self.step("Read", {"file_path": f"{GW_CWD}/{f}"}, read_result(lines, start))
        if m["new_file"]:
            code = "\n".join(["import numpy as np", "", f"# {m['realisation'][:90]}"] +
                             [f"def stage_{j}(x, fs, cfg):\n    return x" for j in range(6)])
            path = f"{GW_CWD}/{m['new_file']}"
            self.step("Write", {"file_path": path, "content": code}, f"File created successfully at: {path}",
                      tur={"type": "create", "filePath": path, "content": code})
            self.files.append(m["new_file"])
            self.files.sort()
        for _ in range(3):
            f = R.choice(m["files"])
            old = R.choice([ln for ln in GW_CODE[f] if ln.strip()])
            self.step("Edit", {"file_path": f"{GW_CWD}/{f}", "old_string": old, "new_string": old + "  # reworked"},
                      f"The file {GW_CWD}/{f} has been updated successfully.", pre=self.take_pre(0.5))
        proxy = self.scorer.best / 100 + 3.5
        out = gw_local_eval(R, proxy)
        self.step("Bash", {"command": f"cd {GW_CWD} && python tools/local_eval.py --subset dev --n 120",
                           "description": "Run local dev evaluation", "timeout": 300000}, out,
                  exec_s=(110.0, 190.0), tur=bash_tur(out))
        before = self.scorer.best
        info = self.submit(moment=i, pre=[("text", "The dev proxy jumped. Submitting to confirm on the blind set.")])
        self.moments.append({"index": i, "round": info["round"], "score_before": before / 100,
                             "score_after": info["outcome"]["s100"] / 100, "realisation": m["realisation"],
                             "planned_hours": m["h"], "text": m["text"]})

    def handle(self, ev):
        cl, R = self.cl, self.RC
        if ev == "subagent1":
            listing = ("H1-4096-chunk-000.npy\nH1-4096-chunk-001.npy\n...\nL1-4096-chunk-011.npy\nmeta.json")
            self.subagent(
                "Survey strain data layout",
                f"Look at {GW_CWD}/data and tools/local_eval.py. Report: file format and sampling rate of the strain, "
                "how chunks are named, what metadata exists, and exactly what local_eval.py expects in triggers.json. "
                "Keep it under 200 words.",
                [("Bash", {"command": f"ls {GW_CWD}/data/strain | head; cat {GW_CWD}/data/strain/meta.json",
                           "description": "List strain files"}, listing + '\n{"fs": 4096, "chunk_seconds": 4096, '
                                                                          '"ifos": ["H1", "L1"], "gps_start": 1400000000}', 0.2),
                 ("Read", {"file_path": f"{GW_CWD}/tools/local_eval.py"},
                  read_result(["import json", "import numpy as np", "", "def score(rows, truth):",
                               "    ...  # matches rows to injections by |gps - t_inj| < 0.05"], 1), 0.1)],
                "Strain: 12 chunks per detector, numpy float64 arrays, 4096 Hz, 4096 s each, GPS start in meta.json. "
                "local_eval.py matches triggers.json rows to injections by |gps - t_inj| < 50 ms, requires "
                "injection_id, snr, far, mchirp, q; FAR threshold 1/month; sky maps optional locally.",
                "I'll have a subagent survey the data layout while I read the local evaluator.")
        elif ev == "crash_cooldown":
            self.normal_cycle(forced="crash")
            # quick fix, resubmit too early -> COOLDOWN
            self.step("Edit", {"file_path": f"{GW_CWD}/search/pipeline.py",
                               "old_string": "from .triggers import write_triggers, TriggerRow",
                               "new_string": "from .triggers import write_triggers"},
                      f"The file {GW_CWD}/search/pipeline.py has been updated successfully.", pre=self.take_pre(0.0))
            r = self.submit(pre=[("text", "Fixed; resubmitting.")])
            if r and r.get("rejected"):
                wait = r["wait"] + 3
                self.step("Bash", {"command": f"sleep {wait}", "description": "Wait for the submission cooldown",
                                   "timeout": 200000}, "", exec_s=float(wait),
                          pre=[("text", f"Cooldown is {self.cooldown}s between submissions; waiting {wait}s.")],
                          tur=bash_tur(""))
                self.submit()
        elif ev == "invalid":
            self.normal_cycle(forced="invalid")
        elif ev == "stop_hook":
            best = self.scorer.best / 100
            pre = self.take_pre(0.3)
            cl.api(pre + [("text", f"Summary so far: best composite {best:.2f}. The pipeline is stable and all "
                                  "submitted files are in a runnable state. Remaining ideas are small threshold "
                                  "tweaks with diminishing returns, so this is a reasonable place to stop.")])
            cl.stop_hook(dt=R.uniform(0.6, 1.8))
            self.pending_text = R.choice(["Continuing — there is still time budget, so back to the missed-injection list.",
                                          "Understood, continuing with the next improvement.",
                                          "Continuing. Next target: the weakest component."])
        elif ev.startswith("moment"):
            self.moment(int(ev[-1]))
        elif ev == "compact":
            best = self.scorer.best / 100
            cl.compact(f"Task: gravitational-wave search pipeline in {GW_CWD}/search, scored by a composite of "
                       f"detection, parameter_estimation, localisation and false_alarm. Best so far {best:.2f} "
                       f"after {self.agent_n} agent submissions. Key decisions: " +
                       "; ".join(m["realisation"][:80] for m in GW_MOMENTS[:len(self.moments)]) +
                       ". Files: " + ", ".join(self.files) + ". Keep submissions under 15 minutes of runtime.")
        elif ev == "list":
            view = self.judge.agent_view(self.run_id, "score_first", "maximize", self.cl.t + 8.0)
            out = "\n".join(submit_list_lines(view)).strip("\n")
            self.step("Bash", {"command": "sforge-submit --list", "description": "List previous submissions"},
                      out, exec_s=(0.3, 0.9), pre=self.take_pre(0.2) + [("text", "Checking the submission history.")],
                      tur=bash_tur(out))
            self.list_calls.append(q6(self.cl.t))
        elif ev == "shell_timeout":
            for _ in range(2):
                self.action()
            self.submit(runtime=884.3, pre=[("text", "Submitting the larger bank (evaluation will be slow).")])
            self.pending_text = ("The sforge-submit call hit my 10-minute tool timeout; the round was still consumed "
                                 "and will be graded. The larger bank is too slow anyway — reverting to the previous "
                                 "bank size.")
        elif ev == "subagent2":
            self.subagent(
                "Break down parameter-estimation errors",
                f"In {GW_CWD}, run tools/local_eval.py --subset dev --n 120 --dump-pe /tmp/pe.csv and analyse the "
                "chirp-mass errors per injection: how do they relate to the template bank spacing? Report numbers.",
                [("Bash", {"command": f"cd {GW_CWD} && python tools/local_eval.py --subset dev --n 120 --dump-pe /tmp/pe.csv",
                           "description": "Dump PE errors"}, gw_local_eval(R, self.scorer.best / 100), 75.0),
                 ("Bash", {"command": "python -c \"import pandas as pd; d=pd.read_csv('/tmp/pe.csv'); "
                                      "print(d.describe())\"", "description": "Summarise PE errors"},
                  "       dmc_rel     bank_step\ncount  97.000     97.000\nmean    0.041      0.043\n"
                  "50%     0.037      0.041\nmax     0.118      0.090", 2.1)],
                "Chirp-mass relative errors (median 3.7%) track the bank's local chirp-mass step (median 4.1%) almost "
                "one-to-one (correlation 0.93). The estimate is the grid point of the loudest template; errors are "
                "dominated by grid spacing, not by noise.",
                "Before tuning PE further I'll have a subagent quantify where the errors come from.")
        elif ev == "final":
            while cl.t < self.t_kill - 260 and not self.killed:
                self.action()
            if not self.killed:
                target = self.t_kill - self.R.uniform(62.0, 75.0)
                assert cl.t < target, "final submission would not be in flight at the kill"
                cl.t = target
                self.submit(pre=self.take_pre(0.0) + [("text", "Submitting the final cleanup.")])

    # -- segments ------------------------------------------------------------
    def opening(self):
        R = self.RC
        listing = ("total 40\ndrwxr-xr-x 1 agent agent 4096 Mar 12 08:58 .\n-rw-r--r-- 1 agent agent 2210 TASK.md\n"
                   "drwxr-xr-x 1 agent agent 4096 data\ndrwxr-xr-x 1 agent agent 4096 search\n"
                   "drwxr-xr-x 1 agent agent 4096 tests\ndrwxr-xr-x 1 agent agent 4096 tools\n---\n" + GW_QUERY[:900])
        self.step("Bash", {"command": f"cd {GW_CWD} && ls -la && sed -n 1,60p TASK.md",
                           "description": "List workspace and read the task"}, listing,
                  pre=[("thinking", "Long-horizon task, 12 hours, scored on a blind set. First understand the data "
                                    "and the local evaluator, then get a complete but simple pipeline submitted early "
                                    "so there is a baseline, then iterate."),
                       ("text", "I'll start by reading the task description and surveying the workspace.")],
                  tur=bash_tur(listing))
        self.handle("subagent1")
        self.events = [e for e in self.events if e[1] != "subagent1"]
        todos = [{"content": c, "status": "pending", "activeForm": a} for c, a in [
            ("Baseline pipeline: PSD, whitening, bank, matched filter, coincidence", "Building the baseline"),
            ("Submit baseline", "Submitting baseline"), ("Improve detection", "Improving detection"),
            ("Sky localisation", "Working on localisation"), ("Parameter estimation", "Working on PE")]]
        self.step("TodoWrite", {"todos": todos}, "Todos have been modified successfully. Ensure that you continue to "
                  "use the todo list to track your progress. Please proceed with the current tasks if applicable",
                  tur={"oldTodos": [], "newTodos": todos})
        for f in ["search/psd.py", "search/whiten.py", "search/bank.py", "search/matched_filter.py",
                  "search/coincidence.py", "search/localize.py", "search/pe.py", "search/triggers.py",
                  "search/pipeline.py", "run_search.py"]:
            code = "\n".join(GW_CODE[f])
            path = f"{GW_CWD}/{f}"
            self.step("Write", {"file_path": path, "content": code}, f"File created successfully at: {path}",
                      pre=self.take_pre(0.25), tur={"type": "create", "filePath": path, "content": code})
        err = ("Exit code 1\nTraceback (most recent call last):\n  File \"/workspace/gw_search/tools/local_eval.py\", "
               "line 12, in <module>\n    from search import pipeline\n  File \"/workspace/gw_search/search/pipeline.py\", "
               "line 9, in <module>\n    def run(strain_dir, out_dir, cfg):\nNameError: name 'load_chunks' is not defined")
        self.step("Bash", {"command": f"cd {GW_CWD} && python tools/local_eval.py --subset dev --n 120",
                           "description": "First local evaluation", "timeout": 300000}, err, exec_s=(3.0, 5.0),
                  is_error=True, tur="Error: " + err[len("Exit code 1\n"):])
        self.step("Edit", {"file_path": f"{GW_CWD}/search/pipeline.py", "old_string": "def run(strain_dir, out_dir, cfg):",
                           "new_string": "from .io import load_chunks\n\ndef run(strain_dir, out_dir, cfg):"},
                  f"The file {GW_CWD}/search/pipeline.py has been updated successfully.",
                  pre=[("text", "Missing loader import; fixing.")])
        out = gw_local_eval(R, 41.0)
        self.step("Bash", {"command": f"cd {GW_CWD} && python tools/local_eval.py --subset dev --n 120",
                           "description": "Local evaluation", "timeout": 300000}, out, exec_s=(70.0, 110.0),
                  tur=bash_tur(out))
        self.submit(pre=[("text", "Baseline runs end to end. Submitting it to get a first blind score.")])

    def agent_loop(self, seg_end: float):
        while not self.killed and self.cl.t < seg_end and self.cl.t < self.t_kill:
            h = self.h(self.cl.t)
            if self.cl.ctx[None] + self.cl.pending[None] > 160000:
                self.handle("compact")
                continue
            if self.events and h >= self.events[0][0]:
                ev = self.events.pop(0)[1]
                if ev == "api_error":
                    return "api_error"
                self.handle(ev)
                continue
            self.normal_cycle()
        return "timeout"

    # -- whole run -----------------------------------------------------------
    def build(self):
        R = self.R
        task = self.task
        cfg = run_config(self.task_id, "claude-code", self.model, self.timeout, self.interval, True, self.judge_url,
                         work_cpu=4, work_mem="16g", judge_cpu=4, judge_mem="8g", cooldown=self.cooldown)
        self.write_configs(cfg, experiment="experiments/opus48-edge.yaml", stagger=600,
                           experiment_yaml=("# synthetic experiment file (copied by sforge run --experiment)\n"
                                            "model:\n  model: claude-opus-4-8\ndefaults:\n  agent: claude-code\n"
                                            "  backend: k8s\n  judge_url: http://10.128.0.12:8080\n  timeout: 43200\n"
                                            "  eval_interval: 1800\n  submission_cooldown: 120\n  cpu_limit: 4\n"
                                            "  work_mem_limit: 16g\n  judge_mem_limit: 8g\nstagger: 600\n"
                                            "tasks:\n  gw_signal_search: {}\n"))
        prompt = evolve_prompt(task["work"]["agent_query"], task["submit_paths"], True, None, self.cooldown)
        t0 = epoch_of(2026, 3, 12, 8, 58, 1, 480) + 0.183
        s = self.setup(t0, agent="claude-code", install_cmds=[NODE_INSTALL_CMD,
                       "sudo -E npm install -g @anthropic-ai/claude-code@2.1.159"],
                       install_outs=["", NPM_OUT_CLAUDE.format(s=23)], judge_url=self.judge_url,
                       eval_interval=self.interval, prompt=prompt)
        self.started = s["started_at"]
        self.judge = Judge(task, self.clock, "k8s", self.ids, R, self.tdir)
        self.scorer = self.make_scorer(R)
        self.auto = AutoEval(self, s["t_ae"], self.interval, extract=(1.8, 4.2))
        self.out = TextFile()
        self.cl = Claude(self.ids, R, self.out, model=self.model, version="2.1.159", cwd=GW_CWD,
                         tools=CLAUDE_TOOLS, skew=self.skew)
        self.subagent_ids, self.moment_msg, self.list_calls = [], [], []
        self.prev_best_comps = None
        cmd = f"{CLAUDE_RUN} --model {self.model}"
        t = s["t"] + 0.001
        self.log.info(t, f"Running agent: {cmd[:200]}... (timeout={self.timeout:.0f}s)")
        seg1_start = t + 0.04
        self.cl.start_segment(seg1_start, self.ids.uuid(), tokens_of(prompt))
        self.cl.init(R.uniform(2.2, 3.4))
        self.opening()
        how = self.agent_loop(float("inf"))
        assert how == "api_error"
        self.cl.synthetic_api_error('API Error: 529 {"type":"error","error":{"type":"overloaded_error",'
                                    '"message":"Overloaded"}}', "server_error")
        self.cl.result('API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
                       is_error=True, api_error_status=529)
        self.cl.t += 0.35
        self.cl.raw("__SFORGE_EXIT__1")
        t_exit = self.cl.t + 0.04
        self.cl.end_segment(t_exit, "exit (API error), resumed")
        e1 = t_exit - seg1_start
        remaining = self.timeout - e1
        self.log.info(t_exit + 0.001, f"Agent exited after {e1:.1f}s, will resume")
        rcmd = f"{CLAUDE_RESUME} --model {self.model}"
        self.log.info(t_exit + 0.002, f"Resuming agent (attempt 1/100, {remaining:.0f}s left): {rcmd[:200]}...")
        seg2_start = t_exit + 0.045
        self.t_kill = seg2_start + int(remaining) + 0.31
        self.cl.start_segment(seg2_start, self.ids.uuid(), 12, resumed_ctx=self.cl.ctx[None])
        self.cl.init(R.uniform(2.5, 4.0))
        self.pending_text = (f"Resuming after the API interruption. Last round was agent-{self.agent_n}; best so far "
                             f"{self.scorer.best / 100:.2f}. Re-reading my notes before continuing.")
        self.step("Read", {"file_path": f"{GW_CWD}/NOTES.md"},
                  read_result([f"- best {self.scorer.best / 100:.2f}", "- coherent stage in search/coherent.py",
                               "- next: localisation (sky map width), PE"], 1), pre=self.take_pre(0.0))
        self.agent_loop(float("inf"))
        # cut everything the agent would have printed after the kill
        self.out.items = [it for it in self.out.items if it[1] <= self.t_kill]
        self.cl.end_segment(self.t_kill, "timeout (killed)")
        e2 = self.t_kill - seg2_start
        runtime = e1 + e2
        L = self.log
        t = self.t_kill + 0.012
        L.info(t, f"Agent finished: runtime={runtime:.1f}s, timed_out=True, resumes=1")
        self.auto.stop(t, self.fire_auto)
        t += 0.001
        L.info(t, "Auto-eval thread stopped")
        archive = tiny_targz(self.final_files(self.t_kill))
        (self.tdir / "final_archive.tar.gz").write_bytes(archive)
        t += R.uniform(2.5, 4.5)
        L.info(t, f"Final archive: {len(archive)} bytes")
        self.write("evolve_state.json", jdump(self.state))
        t += R.uniform(0.6, 1.4)
        L.info(t, "Work container processes stopped")
        while True:
            t += R.uniform(0.01, 0.05)
            hist = self.judge.history(self.run_id, "score_first", "maximize", at=t)
            pending = [e for e in hist["entries"] if e["status"] == "running"]
            if not pending:
                break
            L.info(t, f"Draining {len(pending)} pending judge evals...")
            self.drain_lines = getattr(self, "drain_lines", 0) + 1
            t += 15.0
        t += R.uniform(0.01, 0.05)
        hist = self.judge.history(self.run_id, "score_first", "maximize", at=t)
        self.write("run_history.json", jdump(hist))
        L.info(t + 0.002, f"Done: best={hist['best_pass_rate']:.2%} (round {hist['best_round']!r}), "
                          f"agent_subs={hist['agent_submissions']}, auto_subs={hist['auto_submissions']}, "
                          f"resumes=1, runtime={runtime:.1f}s")
        pod = k8s_name(self.container)
        t += 0.01
        L.info(t, f"Deleting pod {pod}...")
        t += R.uniform(15.5, 17.5)
        L.info(t, f"Pod {pod} deleted.")
        self.write("run_agent.log", self.log.text())
        self.auto.write()
        data, index = self.out.render()
        self.index = index
        (self.tdir / "agent_output.txt").write_bytes(data)
        fr = self.final_result("claude-code", self.model, hist, hist["agent_submissions"] + hist["auto_submissions"],
                               hist["agent_submissions"], hist["auto_submissions"], True, runtime, len(archive), 1)
        self.runtime = runtime
        return self.truth(index, hist, fr, seg1_start, seg2_start, t_exit)

    def truth(self, index, hist, fr, seg1_start, seg2_start, t_exit) -> dict:
        rounds = []
        best, nb = None, 0
        for info in self.judge.rounds:
            o = info["outcome"]
            s = info["report"]["score"] if info["report"] else None
            new = s is not None and (best is None or s > best)
            if new:
                best, nb = s, nb + 1
            rounds.append({
                "round": info["round"], "kind": info["kind"], "submission_id": info["submission_id"],
                "submit_call_epoch": info.get("submit_call_epoch"), "tool_use_id": info.get("tool_use_id"),
                "post_epoch": info["post_epoch"], "grading_start_epoch": info["grading_start_epoch"],
                "grading_end_epoch": info["grading_end_epoch"], "completed_epoch": info["completed_epoch"],
                "result_seen_epoch": info.get("result_seen_epoch"), "evolve_at": info.get("evolve_at"),
                "tick_log_epoch": info.get("tick_log_epoch"), "elapsed_hours": info["elapsed_hours"],
                "score": s, "score_0_100": info["report"]["score_0_100"] if info["report"] else None,
                "pass_rate": info["report"]["pass_rate"] if info["report"] else 0.0,
                "valid": info["report"]["valid"] if info["report"] else None, "outcome": o["type"],
                "components": ({k: v / 10 for k, v in o["comps"].items()} if o.get("comps") else None),
                "new_best": new, "best_so_far": best, "shell_tool_timeout": info.get("shell_tool_timeout", False),
            })
        index_by_line = index
        moments = []
        for m in self.moments:
            line = dict(self.moment_msg)[m["index"]]
            r = next(x for x in rounds if x["round"] == m["round"])
            moments.append({"round": m["round"], "elapsed_hours": r["elapsed_hours"],
                            "message_line_index": line, "message_byte_offset": index_by_line[line][0],
                            "message_epoch": index_by_line[line][1], "score_before": m["score_before"],
                            "score_after": m["score_after"], "jump": round(m["score_after"] - m["score_before"], 2),
                            "realisation": m["realisation"], "message_text": m["text"]})
        agent_rounds = [r for r in rounds if r["kind"] == "agent"]
        auto_rounds = [r for r in rounds if r["kind"] == "auto"]
        return {
            "segments": [{"start_epoch": q6(seg1_start), "end_epoch": q6(t_exit), "ended_by": "exit (API error 529), auto-resumed",
                          "session_id": self.cl.segments[0]["session_id"]},
                         {"start_epoch": q6(seg2_start), "end_epoch": q6(self.t_kill), "ended_by": "timeout (killed by harness)",
                          "session_id": self.cl.segments[1]["session_id"]}],
            "rounds": rounds,
            "rejected_submissions": self.rejections,
            "sforge_submit_list_calls": self.list_calls,
            "reframing_moments": moments,
            "expected": {
                "best_round": hist["best_round"], "best_score": hist["best_score"],
                "best_pass_rate": hist["best_pass_rate"],
                "best_score_0_100": next(r["score_0_100"] for r in rounds if r["round"] == hist["best_round"]),
                "first_best_score": next(r["score"] for r in rounds if r["new_best"]),
                "agent_rounds": len(agent_rounds), "auto_rounds": len(auto_rounds), "total_rounds": len(rounds),
                "graded_attempts": len(rounds), "new_bests": nb,
                "rounds_without_report": [info["round"] for info in self.judge.rounds if not info["has_report"]],
                "rounds_with_null_score": [r["round"] for r in rounds if r["score"] is None],
                "invalid_rounds": [r["round"] for r in rounds if r["valid"] is False],
                "agent_rounds_without_result_in_transcript": [r["round"] for r in agent_rounds if r["result_seen_epoch"] is None],
                "runtime_seconds": self.runtime, "resume_count": 1, "timed_out": True,
                "detection_component_jump": {"from": 64.0, "to": 89.4, "between_hours": [GW_MOMENTS[1]["h"], 7.2]},
            },
            "transcript": {"format": "claude-code stream-json", "claude_code_version": "2.1.159",
                           "stats": self.cl.stats, "usage_totals": self.cl.totals,
                           "segments_cost_usd": [sg["cost"] for sg in self.cl.segments],
                           "subagent_tool_use_ids": self.subagent_ids,
                           "events": self.cl.events,
                           "user_event_timestamps": "present (container clock = true time + container_clock_skew_seconds)",
                           "assistant_event_timestamps": "absent",
                           "k8s_exit_markers": ["__SFORGE_EXIT__1"]},
            "container_clock_skew_seconds": self.skew,
            "drain_log_lines": getattr(self, "drain_lines", 0),
        }
