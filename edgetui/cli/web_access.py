"""Who may use ``edgetui serve``: the token, the Host and the websocket's Origin (aiohttp middleware).

textual-serve has no access control of its own. :func:`access_middleware` adds three checks to
every request, before any handler runs (docs/browser.md says what they protect and what not):

* **Token** (when one is set: any address but 127.0.0.1 / ::1 / localhost, or ``--token-file``):
  the page, the websocket, the downloads and the static files each present it, as ``?token=…``,
  as the ``edgetui_token_<port>`` cookie the page sets (HttpOnly, SameSite=Strict), or as
  ``Authorization: Bearer …``. Compared with :func:`hmac.compare_digest` (constant time).
  A request without it gets 401 and a line saying where the token is.
* **Host**: the ``Host`` header names the address served (or the ``--public-url``): a page
  of another site whose name was re-pointed at this address (DNS rebinding) gets 421.
* **Origin** of a websocket handshake: the page's own origin only (scheme, host, port), so
  a page of another site cannot drive a tab (cross-site websocket hijacking); no Origin, or
  another one, gets 403.

Every response also says it may not be framed by another page (``X-Frame-Options``, CSP
``frame-ancestors``) and sends no ``Referer`` (the token may be in the page's URL).
"""

from __future__ import annotations

import hmac
import re
import secrets
from pathlib import Path
from typing import Awaitable, Callable, Iterable, Optional
from urllib.parse import urlsplit

from aiohttp import hdrs, web

__all__ = [
    "COOKIE",
    "LOOPBACK",
    "access_middleware",
    "allowed_origins",
    "new_token",
    "read_token_file",
    "token_matches",
]

#: the cookie the page sets once its URL's token was right (sent back by the browser with the
#: websocket, the static files and the downloads); the server's port is added to it (:func:`cookie_name`)
COOKIE = "edgetui_token"
#: the addresses served without a token (the default is the first)
LOOPBACK = ("127.0.0.1", "::1", "localhost")
#: tokens shorter than this (from a file) are refused: guessable
MIN_TOKEN_CHARS = 16

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def new_token() -> str:
    """A fresh token: 32 random bytes, URL-safe base64 (43 characters)."""
    return secrets.token_urlsafe(32)


def read_token_file(path: Path) -> str:
    """The token in ``path`` (its first line, spaces around it dropped). Raises ``ValueError`` (one
    line, naming the file) when it is empty, shorter than :data:`MIN_TOKEN_CHARS` or not printable
    ASCII (it travels in URLs and cookies)."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise ValueError(f"--token-file {path}: {e.strerror or e}") from None
    lines = text.splitlines()
    token = lines[0].strip() if lines else ""
    if len(token) < MIN_TOKEN_CHARS:
        raise ValueError(f"{path}: line 1: a token of at least {MIN_TOKEN_CHARS} characters is needed")
    if not all(33 <= ord(c) < 127 for c in token) or any(c in token for c in ';,"\\'):
        raise ValueError(f'{path}: line 1: the token must be printable ASCII without ; , " or \\')
    return token


def token_matches(given: Optional[str], token: str) -> bool:
    """Is ``given`` the token? In constant time (:func:`hmac.compare_digest` on the UTF-8 bytes)."""
    if given is None:
        return False
    return hmac.compare_digest(given.encode("utf-8", "replace"), token.encode("utf-8"))


def _presented(request: web.Request, cookie: str) -> tuple[Optional[str], bool]:
    """The token a request presents, and whether it came in the URL (the page then sets the cookie)."""
    q = request.query.get("token")
    if q is not None:
        return q, True
    auth = request.headers.get(hdrs.AUTHORIZATION, "")
    if auth.startswith("Bearer "):
        return auth[len("Bearer ") :].strip(), False
    return request.cookies.get(cookie), False


def _origin(url: str) -> str:
    """``scheme://host[:port]`` of ``url``, lower-cased, the default port left out."""
    p = urlsplit(url)
    host = (p.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    default = {"http": 80, "https": 443}.get(p.scheme)
    port = "" if p.port in (None, default) else f":{p.port}"
    return f"{p.scheme.lower()}://{host}{port}"


def allowed_origins(bind: str, port: int, public_url: Optional[str] = None) -> set[str]:
    """The origins a page of this server has: the bound address (and ``localhost`` for a loopback
    one), and the public URL's when the server is reached through a proxy."""
    host = f"[{bind}]" if ":" in bind else bind
    out = {_origin(f"http://{host}:{port}")}
    if bind in LOOPBACK:
        out |= {_origin(f"http://{h}:{port}") for h in ("127.0.0.1", "localhost", "[::1]")}
    if public_url:
        out.add(_origin(public_url))
    return out


def _host_ok(request: web.Request, origins: Iterable[str]) -> bool:
    host = request.headers.get(hdrs.HOST, "").lower()
    return bool(host) and any(o.split("://", 1)[1] == host for o in origins)


def cookie_name(port: int) -> str:
    """The token's cookie for the server on ``port``: browsers share a host's cookies across its
    ports, so two servers of one machine would overwrite each other's under one name."""
    return f"{COOKIE}_{port}"


#: a Host header as a browser sends it: a name or an address, and a port
HOST_HEADER = re.compile(r"^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$")


def access_middleware(
    token: Optional[str], origins: set[str], secure: bool = False, cookie: str = COOKIE, any_host: bool = False
) -> Callable:
    """The aiohttp middleware of the checks above (``token`` None: no token asked, as on 127.0.0.1;
    ``secure``: the public URL is https, so the cookie is sent over https only; ``cookie``: its name,
    :func:`cookie_name`). ``any_host``: served on every address (``--bind 0.0.0.0``, always with a
    token), so the names it is reached under are not known: any well-formed ``Host`` is taken, and
    the websocket's Origin must be the page's own, ``http://<Host>``."""

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        host = request.headers.get(hdrs.HOST, "")
        if not (HOST_HEADER.match(host) if any_host else _host_ok(request, origins)):
            return web.Response(status=421, text="edgetui serve: this server is not reached under that name\n")
        from_url = False
        if token is not None:
            given, from_url = _presented(request, cookie)
            if not token_matches(given, token):
                return web.Response(
                    status=401,
                    text="edgetui serve: this address needs the token printed when the server started "
                    "(open the URL it printed, with ?token=…)\n",
                )
        if request.headers.get(hdrs.UPGRADE, "").lower() == "websocket" or request.path == "/ws":
            own = origins | ({_origin(f"http://{host}")} if any_host else set())
            if request.headers.get(hdrs.ORIGIN) is None or _origin(request.headers[hdrs.ORIGIN]) not in own:
                return web.Response(status=403, text="edgetui serve: a websocket from another origin is refused\n")
        response = await handler(request)
        if not response.prepared:  # (a websocket's response is sent already)
            # never framed by another page (keys typed into a hidden tab), no Referer with the token
            response.headers["X-Frame-Options"] = "DENY"
            response.headers["Content-Security-Policy"] = "frame-ancestors 'none'"
            response.headers["Referrer-Policy"] = "no-referrer"
        if token is not None and from_url and not response.prepared:
            response.set_cookie(cookie, token, httponly=True, samesite="Strict", path="/", secure=secure)
        return response

    return check
