"""The event loop every SSH host runs on (one daemon thread for all hosts), and SFTP errors as the
``OSError`` local calls raise. Imported by the SSH host and by its SFTP reads, kept shell and port
forwards (core: no Textual)."""

from __future__ import annotations

import asyncio
import errno
import threading
import warnings
from typing import Optional

# asyncssh still names DSA keys (for the servers that offer them); cryptography deprecates DSA with a
# warning per name on asyncssh's import: ten lines of CryptographyDeprecationWarning (a UserWarning)
# before anything an ``ingest --host`` says. Only that warning, only from asyncssh's modules, is
# silenced; every module that imports asyncssh imports this one first.
warnings.filterwarnings("ignore", message=r"DSA is deprecated", category=UserWarning, module=r"asyncssh(\.|$)")

_LOOP: Optional[asyncio.AbstractEventLoop] = None
_LOOP_LOCK = threading.Lock()


def ssh_loop() -> asyncio.AbstractEventLoop:
    """The event loop every SSH host runs on, in a daemon thread started on first use."""
    global _LOOP
    with _LOOP_LOCK:
        if _LOOP is None or _LOOP.is_closed():
            loop = asyncio.new_event_loop()
            ready = threading.Event()

            def run():
                asyncio.set_event_loop(loop)
                loop.call_soon(ready.set)
                loop.run_forever()

            threading.Thread(target=run, name="edgetui-ssh", daemon=True).start()
            ready.wait()
            _LOOP = loop
        return _LOOP


def os_error(e: BaseException, path: str) -> OSError:
    """An SFTP error as the ``OSError`` the local calls raise (errno and filename set)."""
    # lazy: asyncssh loads only when a host is reached over SSH
    import asyncssh

    if isinstance(e, OSError):
        return e
    code = errno.EIO
    if isinstance(e, asyncssh.SFTPNoSuchFile):
        code = errno.ENOENT
    elif isinstance(e, asyncssh.SFTPPermissionDenied):
        code = errno.EACCES
    elif isinstance(e, getattr(asyncssh, "SFTPNotADirectory", ())):
        code = errno.ENOTDIR
    elif isinstance(e, getattr(asyncssh, "SFTPFileIsADirectory", ())):
        code = errno.EISDIR
    reason = getattr(e, "reason", None) or str(e) or type(e).__name__
    return OSError(code, reason, path)
