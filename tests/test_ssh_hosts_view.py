"""The hosts view (H on the runs screen) in the real app (Pilot): this machine and a host of
hosts.toml reached over a real OpenSSH sshd through an ~/.ssh/config alias, with the remote engine
behind the forwarded Docker socket (this machine's engine); the view follows the host going down
(since when, next retry, why) and the remote run's work container shows on the runs screen."""

from __future__ import annotations

import os
import time

import pytest

docker = pytest.importorskip("docker")

from docker_images import remove_containers  # noqa: E402 - after pytest.importorskip("docker") above
from test_live_app_docker import _rows, _until  # noqa: E402 - after pytest.importorskip("docker") above
from test_ssh_engine_live import APPEND_LOOP, make_run, start_work  # noqa: E402 - after pytest.importorskip("docker") above

from edgetui.hosts.config import load_hosts  # noqa: E402 - after pytest.importorskip("docker") above


def _text(renderable, width: int) -> str:
    from rich.console import Console

    con = Console(width=width, record=True, color_system=None)
    con.print(renderable)
    return con.export_text()


@pytest.mark.sshd
@pytest.mark.asyncio
async def test_hosts_view_follows_a_remote_host_and_its_engine(tmp_path, monkeypatch, engine, image, start_sshd):
    from edgetui.views.app import EdgeTUIApp, LiveConfig
    from edgetui.views.screens.hosts import HostsScreen, hosts_table
    from edgetui.views.screens.runs import RunsScreen

    tok = "edt" + __import__("uuid").uuid4().hex[:8]
    os.chmod(tmp_path, 0o777)
    s = start_sshd()
    remote = tmp_path / "remote" / "logs" / "runs"
    td = make_run(remote, "r1", f"{tok}_hv")
    local = tmp_path / "local" / "runs"
    local.mkdir(parents=True)
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    s.known_hosts(home / ".ssh" / "known_hosts")
    (home / ".ssh" / "config").write_text(
        f"Host devbox\n  HostName 127.0.0.1\n  Port {s.port}\n  User {s.user}\n  IdentityFile {s.user_key}\n"
    )
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(f'[hosts.lab]\nssh = "devbox"\nroots = ["{remote}"]\nengine = "socket"\n')
    for k, v in (("HOME", home), ("XDG_CACHE_HOME", tmp_path / "xc"), ("XDG_CONFIG_HOME", tmp_path / "xcfg")):
        monkeypatch.setenv(k, str(v))
    start_work(engine, image, f"{tok}_hv", "r1", td, APPEND_LOOP)
    app = EdgeTUIApp(
        tmp_path / "app.duckdb",
        live=LiveConfig([local], home=True, interval=0.5, docker=True, hosts=load_hosts(hosts)),
        on_empty=lambda p: None,
    )
    try:
        async with app.run_test(size=(160, 48)) as pilot:
            await _until(pilot, lambda: isinstance(app.screen, RunsScreen), what="runs screen")
            runs = app.screen
            await _until(
                pilot,
                lambda: runs.runs and runs.runs[0].container is not None and runs.runs[0].container.state == "running",
                timeout=30,
                what="remote container joined",
            )
            assert runs.runs[0].run_key == f"lab/r1/{tok}_hv" and runs.runs[0].container.host == "lab"
            assert any(r.startswith("● lab") for r in _rows(runs))
            await pilot.press("H")
            await _until(pilot, lambda: isinstance(app.screen, HostsScreen), what="hosts view")
            view = app.screen
            await _until(
                pilot,
                lambda: [r.engine for r in view.rows] == ["up", "up (socket)"],
                timeout=20,
                what="the remote engine up in the view",
            )
            local_row, lab = view.rows
            assert (local_row.name, local_row.kind, local_row.runs) == ("local", "local", 0)
            assert (lab.name, lab.kind, lab.runs) == ("lab", "up", 1) and lab.rtt_s is not None and lab.rtt_s < 2
            for width in (72, 150):  # the modal's inner width at 80 and 160 columns
                txt = _text(hosts_table(view.rows, time.time()), width)
                line = next(x for x in txt.splitlines() if x.startswith("lab"))
                assert "● up" in line and " ms" in line and line.rstrip().endswith("up (socket)"), txt
            # the host goes down: the open view follows (since when, next retry, why; engine unreachable)
            s.kill_all()
            await _until(
                pilot,
                lambda: view.rows[1].kind == "down" and view.rows[1].next_retry is not None,
                timeout=20,
                what="lab down in the view",
            )
            lab = view.rows[1]
            assert lab.engine == "unreachable" and lab.since <= time.time()
            txt = _text(hosts_table(view.rows, time.time()), 150)
            assert "✗ down" in txt and "retry" in txt and "in " in txt and "lost" in txt, txt
            await pilot.press("escape")
            await _until(pilot, lambda: isinstance(app.screen, RunsScreen), what="back to the runs")
            assert len(runs.runs) == 1
    finally:
        remove_containers(engine, tok)
        s.close()
