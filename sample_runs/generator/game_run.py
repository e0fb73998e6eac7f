"""Run 4 of the bundled samples: game mode (HTTP text adventure), claude-code-2.1.214 + glm-5.1."""

from __future__ import annotations

import json
from pathlib import Path

from edgetui.replay.selection import select_best

from .claude_transcript import CLAUDE_TOOLS, Claude, bash_tur, read_result
from .run_folder import NPM_OUT_CLAUDE, RunBase, run_config, write_task
from .sforge_texts import CLAUDE_RUN, NODE_INSTALL_CMD, game_prompt
from .truth import analyse_claude, write_truth
from .writers import Clock, SEED, TextFile, epoch_of, jdump, q6, tiny_targz, tokens_of


# ---------------------------------------------------------------------------
# Run 4: game mode (HTTP text adventure), claude-code-2.1.214 + glm-5.1
# ---------------------------------------------------------------------------

GAME_CWD = "/workspace/game"
GAME_QUERY = """# Lantern Cove (synthetic interactive-fiction task)

Play the text adventure *Lantern Cove* through the game API and reach the highest score you can
(maximum 350). Keep notes of the map and puzzles in `notes.md`; only the game score counts."""
GAME_ROOMS = [
    "Harbour Steps",
    "Net Loft",
    "Chandlery",
    "Tide Cave",
    "Lighthouse Base",
    "Lamp Room",
    "Cliff Path",
    "Smugglers' Passage",
    "Chapel Ruins",
    "Flooded Crypt",
    "Keeper's Cottage",
    "Boathouse",
]
GAME_ACTIONS = [
    "look",
    "north",
    "south",
    "east",
    "west",
    "up",
    "down",
    "take lantern",
    "light lantern",
    "open hatch",
    "read logbook",
    "take rope",
    "tie rope to post",
    "examine nets",
    "inventory",
    "take brass key",
    "unlock door with brass key",
    "push barrel",
    "take oilcan",
    "oil hinge",
    "pull lever",
    "wait",
    "climb ladder",
    "search rubble",
    "take silver bell",
    "ring bell",
    "give coin to ferryman",
    "swim",
]


def game_task() -> dict:
    return {
        "task_id": "lantern_cove_adventure",
        "name": "Lantern Cove text adventure",
        "base_image": "python311",
        "platform": "linux/amd64",
        "cwd": GAME_CWD,
        "submit_paths": ["notes.md"],
        "internet": True,
        "game_mode": True,
        "category": "Interactive Fiction",
        "work": {"agent_query": GAME_QUERY, "image_tag": "e3b1d9f0a4c8"},
        "judge": {
            "eval_cmd": "true",
            "eval_timeout": 60,
            "parser": "structured_json",
            "score_direction": "maximize",
            "selection": "pass_rate_first",
            "game_server_cmd": "python /opt/game/server.py --port 8000 --story /opt/game/lantern_cove.z5",
            "image_tag": "7f0c2a5e9b13",
        },
    }


GAME_PLAN = [  # start_h, moves, final, peak, ending
    (0.06, 22, 15, 15, "closed"),
    (0.25, 38, 35, 40, "done"),
    (0.52, 55, 80, 80, "closed"),
    (0.82, 80, 135, 135, "done"),
    (1.16, 30, 60, 70, "closed"),
    (1.36, None, None, None, "in_flight"),
]


class GameRun(RunBase):
    RUN_ID = "glm51-game-20260420"

    def __init__(self, root: Path, task: dict):
        super().__init__(root, self.RUN_ID, task, Clock(0), "docker", SEED + 404)
        self.model = "glm-5.1"
        self.timeout = 5400
        self.sessions: list[dict] = []

    def h(self, t):
        return (t - self.started) / 3600.0

    def make_steps(self, n, final, peak, done, R):
        """Score path reaching `peak` then ending at `final`."""
        steps, score, pk = [], 0, 0
        gains = sorted(R.sample(range(2, n - 2), 6))
        inc = [peak // 6] * 5 + [peak - 5 * (peak // 6)]
        room = R.choice(GAME_ROOMS)
        for m in range(1, n + 1):
            a = R.choice(GAME_ACTIONS)
            if a in ("north", "south", "east", "west", "up", "down", "climb ladder"):
                room = R.choice(GAME_ROOMS)
            if gains and m == gains[0]:
                score += inc.pop(0)
                gains.pop(0)
                obs = f"{room}\nDone. [Your score has just gone up.]"
            else:
                obs = f"{room}\n" + R.choice(
                    [
                        "You see nothing special.",
                        "The wind howls through the gaps.",
                        "It's too dark to see much.",
                        "Taken.",
                        "Nothing happens.",
                        "You can't go that way.",
                        "The lantern flickers.",
                        "Water drips from the ceiling.",
                    ]
                )
            if m == n and final < score:
                score = final
                obs = f"{room}\nThe floor gives way beneath you.\n\n    *** You have died ***"
            pk = max(pk, score)
            steps.append(
                {
                    "move": m,
                    "action": a,
                    "observation": obs,
                    "score": score,
                    "peak_score": pk,
                    "max_score": 350,
                    "done": bool(done and m == n),
                }
            )
        return steps

    def build(self):
        R, RC = self.R, self.RC
        task = self.task
        extra = {
            "ANTHROPIC_DEFAULT_OPUS_MODEL": "glm-5.1",
            "ANTHROPIC_DEFAULT_SONNET_MODEL": "glm-5.1",
            "ANTHROPIC_DEFAULT_HAIKU_MODEL": "glm-5.1",
            "CLAUDE_CODE_AUTO_COMPACT_WINDOW": "200000",
            "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "80",
        }
        cfg = run_config(
            self.task_id,
            "claude-code-2.1.214",
            self.model,
            self.timeout,
            1800,
            True,
            "http://host.docker.internal:8080",
            api_base_url="https://llm-gateway.example.internal/anthropic",
            api_key=True,
            extra_env=extra,
        )
        self.write_configs(cfg)
        prompt = game_prompt(task["work"]["agent_query"])
        t0 = epoch_of(2026, 4, 20, 6, 40, 11, 0) + 0.094
        s = self.setup(
            t0,
            agent="claude-code-2.1.214",
            game=True,
            install_cmds=[NODE_INSTALL_CMD, "sudo -E npm install -g @anthropic-ai/claude-code@2.1.214"],
            install_outs=["", NPM_OUT_CLAUDE.format(s=26)],
            stale_chain="SFORGE_" + self.ids.hexn(12),
            prompt=prompt,
        )
        self.started = s["started_at"]
        self.out = TextFile()
        cl = self.cl = Claude(
            self.ids,
            R,
            self.out,
            model=self.model,
            version="2.1.214",
            cwd=GAME_CWD,
            tools=[t if t != "Task" else "Agent" for t in CLAUDE_TOOLS],
            asst_ts=True,
            api_key_source="none",
            subagent_tool="Agent",
        )
        cmd = (
            f"{CLAUDE_RUN} --model {self.model} --exclude-dynamic-system-prompt-sections"
            """ --settings '{"includeGitInstructions":false}'"""
        )
        t = s["t"] + 0.001
        self.log.info(t, f"Running agent: {cmd[:200]}... (timeout={self.timeout:.0f}s)")
        seg = t + 0.03
        t_kill = seg + self.timeout + 0.25
        cl.start_segment(seg, self.ids.uuid(), tokens_of(prompt))
        cl.init(R.uniform(2.0, 3.0))

        def step(tool, inp, res, dt, pre=(), is_error=False, latency=(3.0, 11.0)):
            tid = cl.api(list(pre) + [("tool", tool, inp)], latency=latency)[0]
            cl.tool_result(tid, res, dt=dt, is_error=is_error, tur=bash_tur(res) if tool == "Bash" else None)
            return tid

        play = (
            "import json, os, sys, urllib.request\nURL = os.environ['GAME_SERVER_URL']\n\n"
            "def post(path, body):\n    req = urllib.request.Request(URL + path, json.dumps(body).encode(), "
            "{'Content-Type': 'application/json'})\n    return json.load(urllib.request.urlopen(req))\n\n"
            "if sys.argv[1] == 'new':\n    print(json.dumps(post('/new', {})))\nelif sys.argv[1] == 'close':\n"
            "    print(json.dumps(post(f'/{sys.argv[2]}/close', {})))\nelse:\n    sid = sys.argv[2]\n"
            "    for a in sys.argv[3:]:\n        r = post(f'/{sid}/step', {'action': a})\n"
            "        print(f\"> {a}\\n{r['observation']}\\n[score {r['score']}/{r['max_score']} moves {r['moves']}]\")\n"
        )
        step(
            "Write",
            {"file_path": f"{GAME_CWD}/play.py", "content": play},
            f"File created successfully at: {GAME_CWD}/play.py",
            0.05,
            pre=[
                ("thinking", "Write a small client so each tool call can send several moves."),
                ("text", "I'll write a tiny client for the game API first."),
            ],
        )
        sub_dir = self.tdir / "submissions"
        sub_dir.mkdir(exist_ok=True)
        hist_entries = []
        for gi, (start_h, n, final, peak, ending) in enumerate(GAME_PLAN, 1):
            while self.h(cl.t) < start_h:
                step(
                    "Edit",
                    {
                        "file_path": f"{GAME_CWD}/notes.md",
                        "old_string": "## Map",
                        "new_string": f"## Map\n- {RC.choice(GAME_ROOMS)} -> {RC.choice(GAME_ROOMS)}",
                    },
                    f"The file {GAME_CWD}/notes.md has been updated successfully.",
                    0.05,
                    pre=[
                        (
                            "thinking",
                            RC.choice(
                                [
                                    "Update the map before the next attempt.",
                                    "The bell puzzle needs the rope first.",
                                    "Dying in the crypt costs the points from the chapel.",
                                ]
                            ),
                        )
                    ],
                    latency=(25.0, 75.0),
                )
            sid = self.ids.hexn(12)
            new_obs = {
                "session_id": sid,
                "observation": "LANTERN COVE\nAn interactive fiction.\n\nHarbour Steps",
                "score": 0,
                "peak_score": 0,
                "max_score": 350,
                "done": False,
                "moves": 0,
            }
            step(
                "Bash",
                {"command": "python3 play.py new", "description": "Start a game session"},
                json.dumps(new_obs),
                R.uniform(2.0, 6.0),
                pre=[("text", f"Starting session {gi}.")],
            )
            if n is None:
                n = 40
            steps = self.make_steps(n, final if final is not None else 10**9, peak or 50, ending == "done", RC)
            if ending == "in_flight":
                steps = self.make_steps(400, 10**9, 60, False, RC)
            d = sub_dir / f"game-{gi}"
            d.mkdir()
            step_lines, step_times = [], []
            i = 0
            while i < len(steps) and cl.t < t_kill:
                batch = steps[i : i + RC.randint(4, 11)]
                tid = cl.api(
                    [
                        (
                            "tool",
                            "Bash",
                            {
                                "command": "python3 play.py step "
                                + sid
                                + " "
                                + " ".join(json.dumps(b["action"]) for b in batch),
                                "description": "Send moves",
                            },
                        )
                    ],
                    latency=(8.0, 30.0),
                )[0]
                tt = cl.t
                for b in batch:
                    tt += R.uniform(0.15, 0.6)
                    if tt > t_kill:
                        break
                    step_lines.append(json.dumps(b, ensure_ascii=False))
                    step_times.append(q6(tt))
                out = "\n".join(
                    f"> {b['action']}\n{b['observation']}\n[score {b['score']}/350 moves {b['move']}]"
                    for b in batch[: len(step_times) - i]
                )
                i += len(batch)
                if tt > t_kill:
                    break
                cl.tool_result(tid, out, dt=tt - cl.t + 0.05, tur=bash_tur(out))
                if RC.random() < 0.3:
                    cl.api(
                        [
                            (
                                "text",
                                RC.choice(
                                    [
                                        "Score went up — the lantern matters.",
                                        "Dead end; backtracking.",
                                        "Noting the route in notes.md later.",
                                    ]
                                ),
                            )
                        ]
                    )
            (d / "steps.jsonl").write_text("".join(x + "\n" for x in step_lines))
            sess = {
                "round": f"game-{gi}",
                "session_id": sid,
                "start_epoch": None,
                "step_epochs": step_times,
                "moves": len(step_lines),
                "ending": ending,
            }
            if ending in ("closed", "done"):
                last = steps[-1]
                if ending == "closed":
                    res = {
                        "session_id": sid,
                        "final_score": last["score"],
                        "peak_score": last["peak_score"],
                        "max_score": 350,
                        "moves": last["move"],
                    }
                    step(
                        "Bash",
                        {"command": f"python3 play.py close {sid}", "description": "Close session"},
                        json.dumps(res),
                        R.uniform(1.0, 3.0),
                    )
                t_arch = cl.t + R.uniform(0.2, 2.0)
                entry = {
                    "type": "game",
                    "round": f"game-{gi}",
                    "session_id": sid,
                    "task_id": self.task_id,
                    "max_score": 350,
                    "peak_score": last["peak_score"],
                    "final_score": last["score"],
                    "score": last["score"],
                    "moves": last["move"],
                    "steps": steps,
                    "pass_rate": last["score"] / 350,
                }
                (d / "game_result.json").write_text(jdump(entry))
                hist_entries.append(entry)
                sess.update(archived_epoch=q6(t_arch), final_score=last["score"], peak_score=last["peak_score"])
            self.sessions.append(sess)
            if gi == 3:
                tid = cl.api(
                    [
                        ("text", "Let me have a subagent consolidate the map from my notes."),
                        (
                            "tool",
                            "Agent",
                            {
                                "description": "Consolidate map",
                                "subagent_type": "general-purpose",
                                "prompt": f"Read {GAME_CWD}/notes.md and produce a compact room graph "
                                "with unexplored exits marked.",
                            },
                        ),
                    ]
                )[0]
                cl.user_text(
                    f"Read {GAME_CWD}/notes.md and produce a compact room graph with unexplored exits marked.",
                    parent=tid,
                    dt=0.3,
                )
                rid2 = cl.api([("tool", "Read", {"file_path": f"{GAME_CWD}/notes.md"})], parent=tid)[0]
                cl.tool_result(
                    rid2,
                    read_result(["## Map", "- Harbour Steps -> Net Loft", "- Tide Cave -> ?"], 1),
                    parent=tid,
                    dt=0.1,
                )
                summary = (
                    "Harbour Steps - Net Loft - Chandlery; Tide Cave (exit east unexplored); Lighthouse Base - "
                    "Lamp Room (needs lit lantern); Chapel Ruins - Flooded Crypt (deadly without rope)."
                )
                cl.api([("text", summary)], parent=tid)
                cl.tool_result(tid, [{"type": "text", "text": summary}], dt=0.4)
            if gi == 4:
                cl.api(
                    [("text", "135 points is a solid result and the remaining puzzles look expensive. I'll stop here.")]
                )
                cl.stop_hook()
        self.out.items = [it for it in self.out.items if it[1] <= t_kill]
        cl.end_segment(t_kill, "timeout (killed)")
        runtime = t_kill - seg
        L = self.log
        t = t_kill + 0.01
        L.info(t, f"Agent finished: runtime={runtime:.1f}s, timed_out=True, resumes=0")
        archive = tiny_targz([("notes.md", "# Lantern Cove notes\n## Map\n- Harbour Steps -> Net Loft\n")])
        (self.tdir / "final_archive.tar.gz").write_bytes(archive)
        t += R.uniform(0.6, 1.2)
        L.info(t, f"Final archive: {len(archive)} bytes")
        t += 30.0
        L.warning(t, "Failed to close active game sessions")
        best = select_best(hist_entries, "maximize", "pass_rate_first")
        hist = {
            "run_id": self.run_id,
            "best_score": best.best_score,
            "best_pass_rate": best.best_pass_rate,
            "best_round": best.best_round,
            "agent_submissions": 0,
            "auto_submissions": 0,
            "entries": hist_entries,
        }
        self.write("game_history.json", jdump(hist))
        bs = float(best.best_score)
        L.info(
            t + 0.02,
            f"Done (game): best_score={bs} ({best.best_round}), sessions={len(hist_entries)}, "
            f"resumes=0, runtime={runtime:.1f}s",
        )
        t += 0.03
        L.info(t, f"Stopping container {self.container}...")
        t += R.uniform(10.1, 10.5)
        L.info(t, f"Removing container {self.container}...")
        t += R.uniform(0.2, 0.5)
        L.info(t, f"Container {self.container} removed.")
        self.write("run_agent.log", self.log.text())
        data, index = self.out.render()
        self.index = index
        (self.tdir / "agent_output.txt").write_bytes(data)
        self.final_result(
            "claude-code-2.1.214",
            self.model,
            hist,
            len(hist_entries),
            len(hist_entries),
            0,
            True,
            runtime,
            len(archive),
            0,
        )
        self.hist, self.runtime, self.seg = hist, runtime, (seg, t_kill)

    def truth(self) -> dict:
        return {
            "segments": [
                {
                    "start_epoch": q6(self.seg[0]),
                    "end_epoch": q6(self.seg[1]),
                    "ended_by": "timeout (killed by harness)",
                }
            ],
            "game_sessions": self.sessions,
            "expected": {
                "best_round": self.hist["best_round"],
                "best_score": self.hist["best_score"],
                "best_pass_rate": self.hist["best_pass_rate"],
                "archived_sessions": len(self.hist["entries"]),
                "game_folders": len(self.sessions),
                "in_flight_rounds": [s["round"] for s in self.sessions if s["ending"] == "in_flight"],
                "runtime_seconds": self.runtime,
                "resume_count": 0,
                "timed_out": True,
            },
        }


def build_game(root: Path) -> dict:
    task = game_task()
    write_task(root, task)
    run = GameRun(root, task)
    run.build()
    spec = run.truth()
    spec["transcript"] = {
        "format": "claude-code stream-json",
        "claude_code_version": "2.1.214",
        "analysis": analyse_claude((run.tdir / "agent_output.txt").read_bytes()),
        "user_event_timestamps": "present",
        "assistant_event_timestamps": "present",
        "subagent_tool_name": "Agent",
    }
    common = {
        "agent": "claude-code-2.1.214",
        "model": run.model,
        "started_at_epoch": run.started,
        "exercises": [
            "game mode: game-N folders with steps.jsonl (no timestamps) and game_result.json",
            "one in-flight session (steps.jsonl only) because close-all failed",
            "game_history.json instead of run_history.json; no auto-eval, no sforge-submit",
            "Game Mode prompt; claude-code-2.1.214 with a non-Anthropic model via api_base_url",
            "cache-opt flags make the logged command longer than 200 chars (truncated)",
            "timestamps on assistant AND user events; subagent via the `Agent` tool",
            "host UTC offset +00:00",
        ],
    }
    return write_truth(run, common, spec, run.index)
