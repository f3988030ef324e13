"""What one control line asks of the shell: a response, MCP lines to write, an effect, a wait.

The core decides; the shell performs: it writes the ``sends`` to the MCP stream, performs the
effect only it can (pause or resume reading, shut down), parks on a wait, then writes the
response back to the control client. Sans-I/O.
"""

from __future__ import annotations

import json
from typing import Any

from mockmcp.wire import jsonrpc
from mockmcp.core.actions import Send
from mockmcp.core.control.waits import Waiter


class Pause:
    """Stop reading stdin (for ``seconds``, or until a resume when ``None``)."""

    __slots__ = ("seconds",)

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds


class Resume:
    """Read stdin again."""

    __slots__ = ()


class Shutdown:
    """End the mock: gracefully (as at EOF of stdin), or at once with ``status`` (a crash)."""

    __slots__ = ("crash", "status")

    def __init__(self, crash: bool, status: int) -> None:
        self.crash = crash
        self.status = status


Effect = Pause | Resume | Shutdown


class Outcome:
    """What one control line asks of the shell: write ``sends`` to stdout, perform ``effect``,
    then write the response back to the control client (none: park on ``waiter`` first).

    The response is a dict, or (``encoded``) its line already built, as ``journal`` builds
    it from the lines it keeps (decoded here only if someone reads ``response``)."""

    __slots__ = ("_response", "encoded", "sends", "effect", "waiter")

    def __init__(
        self,
        response: dict[str, Any] | None,
        sends: list[Send] | None = None,
        effect: Effect | None = None,
        waiter: Waiter | None = None,
        encoded: bytes | None = None,
    ) -> None:
        self._response = response
        self.encoded = encoded
        self.sends = sends or []
        self.effect = effect
        self.waiter = waiter

    @property
    def response(self) -> dict[str, Any] | None:
        if self._response is None and self.encoded is not None:
            self._response = json.loads(self.encoded)
        return self._response

    def line(self) -> bytes | None:
        """The response line to write (``None``: nothing to write now)."""
        if self.encoded is not None:
            return self.encoded
        return None if self._response is None else jsonrpc.encode(self._response)

    def answered(self) -> None:
        """The shell wrote the response ahead of the effect (a shutdown): nothing more to write."""
        self._response = self.encoded = None
