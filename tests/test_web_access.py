"""The access checks of ``edgetui serve`` (edgetui/cli/web_access.py) on a real aiohttp server.

A small aiohttp application with the middleware and the three kinds of route the served app
has (the page, the websocket, a download) runs on a port the OS gives (127.0.0.1); real HTTP
requests and websocket handshakes are sent to it. The browser-level checks, against the real
``edgetui serve``, are in tests/test_serve_browser.py.
"""

from __future__ import annotations

import hmac
from pathlib import Path

import aiohttp
import pytest
import pytest_asyncio
from aiohttp import web
from aiohttp.test_utils import TestServer

from edgetui.cli import web_access
from edgetui.cli.web_access import COOKIE, access_middleware, allowed_origins, read_token_file, token_matches

TOKEN = "t0ken-" + "x" * 30


async def _page(request: web.Request) -> web.Response:
    return web.Response(text="the page")


async def _download(request: web.Request) -> web.Response:
    return web.Response(body=b"report bytes")


async def _ws(request: web.Request) -> web.WebSocketResponse:
    ws = web.WebSocketResponse()
    await ws.prepare(request)
    await ws.send_str("hello")
    await ws.close()
    return ws


async def _server(token, port_holder: dict) -> TestServer:
    """The app with the middleware; its origins need the port, which the OS gives at start."""
    app = web.Application()
    app.add_routes([web.get("/", _page), web.get("/ws", _ws), web.get("/download/{key}", _download)])

    @web.middleware
    async def late(request, handler):  # the real middleware, made once the port is known
        return await port_holder["mw"](request, handler)

    app.middlewares.append(late)
    server = TestServer(app, host="127.0.0.1", port=0)
    await server.start_server()
    port_holder["mw"] = access_middleware(token, allowed_origins("127.0.0.1", server.port))
    port_holder["origin"] = f"http://127.0.0.1:{server.port}"
    return server


@pytest_asyncio.fixture
async def served():
    holder: dict = {}
    server = await _server(TOKEN, holder)
    async with aiohttp.ClientSession() as s:
        yield server, s, holder["origin"]
    await server.close()


@pytest.mark.asyncio
async def test_every_request_without_the_token_is_refused(served):
    server, s, origin = served
    base = f"http://127.0.0.1:{server.port}"
    for path in ("/", "/download/abc", "/ws"):
        async with s.get(base + path) as r:
            assert r.status == 401, path
            assert "token" in await r.text()
    async with s.get(base + "/?token=" + TOKEN[:-1] + "y") as r:  # one character wrong
        assert r.status == 401
    with pytest.raises(aiohttp.WSServerHandshakeError) as e:
        await s.ws_connect(base + "/ws", origin=origin)
    assert e.value.status == 401


@pytest.mark.asyncio
async def test_the_token_in_the_url_sets_a_strict_cookie_that_then_suffices(served):
    server, _, origin = served
    base = f"http://127.0.0.1:{server.port}"
    jar = aiohttp.CookieJar(unsafe=True)  # (an IP address host: aiohttp keeps its cookies only so)
    async with aiohttp.ClientSession(cookie_jar=jar) as s:
        async with s.get(base + "/?token=" + TOKEN) as r:
            assert r.status == 200 and await r.text() == "the page"
            assert r.headers["X-Frame-Options"] == "DENY" and r.headers["Referrer-Policy"] == "no-referrer"
            assert r.headers["Content-Security-Policy"] == "frame-ancestors 'none'"
            cookie = r.cookies[COOKIE]
            assert cookie.value == TOKEN
            assert cookie["httponly"] and cookie["samesite"] == "Strict" and cookie["path"] == "/"
        async with s.get(base + "/download/k") as r:  # the cookie alone
            assert r.status == 200 and await r.read() == b"report bytes"
        ws = await s.ws_connect(base + "/ws", origin=origin)
        assert (await ws.receive_str()) == "hello"
        await ws.close()
    async with aiohttp.ClientSession() as s:  # a bearer header, for scripts
        async with s.get(base + "/", headers={"Authorization": f"Bearer {TOKEN}"}) as r:
            assert r.status == 200
            assert COOKIE not in r.cookies  # set only when the token came in the page's URL


@pytest.mark.asyncio
async def test_a_websocket_from_another_origin_or_none_is_refused_even_with_the_token(served):
    server, s, origin = served
    url = f"http://127.0.0.1:{server.port}/ws?token={TOKEN}"
    for bad in ("http://evil.example", f"http://127.0.0.1:{server.port + 1}", "https://127.0.0.1:" + str(server.port)):
        with pytest.raises(aiohttp.WSServerHandshakeError) as e:
            await s.ws_connect(url, origin=bad)
        assert e.value.status == 403, bad
    with pytest.raises(aiohttp.WSServerHandshakeError) as e:  # no Origin at all
        await s.ws_connect(url)
    assert e.value.status == 403
    ws = await s.ws_connect(url, origin=origin)  # the page's own origin: accepted
    assert (await ws.receive_str()) == "hello"
    await ws.close()
    ws = await s.ws_connect(url, origin=f"http://localhost:{server.port}")  # loopback by name
    await ws.close()


@pytest.mark.asyncio
async def test_a_request_under_another_host_name_is_refused(served):
    server, s, _ = served
    async with s.get(f"http://127.0.0.1:{server.port}/?token={TOKEN}", headers={"Host": "rebound.example"}) as r:
        assert r.status == 421


@pytest.mark.asyncio
async def test_without_a_token_pages_open_but_the_origin_is_still_checked():
    holder: dict = {}
    server = await _server(None, holder)
    try:
        async with aiohttp.ClientSession() as s:
            async with s.get(f"http://127.0.0.1:{server.port}/") as r:
                assert r.status == 200
            with pytest.raises(aiohttp.WSServerHandshakeError) as e:
                await s.ws_connect(f"http://127.0.0.1:{server.port}/ws", origin="http://evil.example")
            assert e.value.status == 403
            ws = await s.ws_connect(f"http://127.0.0.1:{server.port}/ws", origin=holder["origin"])
            await ws.close()
    finally:
        await server.close()


def test_the_token_is_compared_in_constant_time(monkeypatch):
    calls = []
    real = hmac.compare_digest

    def spy(a, b):
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(web_access.hmac, "compare_digest", spy)
    assert token_matches(TOKEN, TOKEN)
    assert not token_matches(TOKEN + "x", TOKEN)
    assert not token_matches(None, TOKEN)
    assert calls == [(TOKEN.encode(), TOKEN.encode()), ((TOKEN + "x").encode(), TOKEN.encode())]


def test_a_token_file_too_short_or_with_odd_characters_is_one_line_naming_it(tmp_path: Path):
    f = tmp_path / "token"
    f.write_text("  " + TOKEN + "  \nsecond line\n")
    assert read_token_file(f) == TOKEN
    for bad in ("short\n", "", "a" * 20 + ";b\n", "é" * 20):
        f.write_text(bad)
        with pytest.raises(ValueError) as e:
            read_token_file(f)
        assert str(e.value).startswith(f"{f}: line 1: ") and "\n" not in str(e.value)


def test_the_origins_allowed_are_the_served_address_and_the_public_url():
    assert allowed_origins("127.0.0.2", 8123) == {"http://127.0.0.2:8123"}
    assert allowed_origins("127.0.0.1", 80) == {"http://127.0.0.1", "http://localhost", "http://[::1]"}
    assert allowed_origins("10.0.0.5", 8000, "https://runs.example.org/") == {
        "http://10.0.0.5:8000",
        "https://runs.example.org",
    }


@pytest.mark.asyncio
async def test_on_every_address_any_host_name_is_taken_and_the_origin_must_be_its_own():
    """``--bind 0.0.0.0``: the names the server is reached by are not known (always with a token)."""
    holder: dict = {}
    server = await _server(TOKEN, holder)
    holder["mw"] = access_middleware(TOKEN, set(), any_host=True)
    base = f"http://127.0.0.1:{server.port}"
    try:
        async with aiohttp.ClientSession() as s:
            name = f"colleague-box.example:{server.port}"
            async with s.get(f"{base}/?token={TOKEN}", headers={"Host": name}) as r:
                assert r.status == 200
            async with s.get(f"{base}/", headers={"Host": name}) as r:
                assert r.status == 401  # the token still
            async with s.get(f"{base}/?token={TOKEN}", headers={"Host": 'x"><script>'}) as r:
                assert r.status in (400, 421)  # not a host name: never reflected into the page
            ws = await s.ws_connect(f"{base}/ws?token={TOKEN}", origin=f"http://{name}", headers={"Host": name})
            await ws.close()
            with pytest.raises(aiohttp.WSServerHandshakeError) as e:
                await s.ws_connect(f"{base}/ws?token={TOKEN}", origin="http://evil.example", headers={"Host": name})
            assert e.value.status == 403
    finally:
        await server.close()


@pytest.mark.asyncio
async def test_on_every_address_the_page_names_the_host_it_was_reached_by():
    from edgetui.cli.serve import TabServer

    tabs = TabServer("true", host="127.0.0.1", port=0, token=TOKEN)
    tabs.any_host = True  # (as for --bind 0.0.0.0; the test binds loopback only)
    await tabs.start()
    try:
        name = f"colleague-box.example:{tabs.port}"
        async with aiohttp.ClientSession() as s:
            async with s.get(f"http://127.0.0.1:{tabs.port}/?token={TOKEN}", headers={"Host": name}) as r:
                page = await r.text()
        assert r.status == 200
        assert f'data-session-websocket-url="ws://{name}/ws"' in page
        assert f"http://{name}/static/" in page and "127.0.0.1" not in page
        assert "fonts.googleapis.com" not in page
    finally:
        await tabs.stop()
