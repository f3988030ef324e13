"""The observers the HTTP shell tells what happened: what it wrote, its journal events, the
requests' headers and the client checks' findings (the journal, the verifier, the control channel).
"""

from __future__ import annotations

from typing import Any, Callable

from mockmcp.core.actions import Send
from mockmcp.shells.http.channel import End, Out, Reset

OnOutput = Callable[[Any, bytes], None]  # a message written (None for raw bytes) and its bytes
OnEvent = Callable[[str, dict[str, Any]], None]  # a journal event: its name and fields
OnRequest = Callable[[dict[str, str]], None]  # a request's headers, before its body
OnFinding = Callable[[str, str, Any, Any], None]  # a client check found: check, text, message, request id


class Taps:
    """Who is told what: each observer optional. ``on_data`` is the control channel's tap (its
    journal of what is written); the control server sets it when it starts."""

    __slots__ = ("on_output", "on_event", "on_request", "on_finding", "on_data")

    def __init__(self, on_output: OnOutput | None = None, on_event: OnEvent | None = None,
                 on_request: OnRequest | None = None, on_finding: OnFinding | None = None,
                 on_data: Callable[[bytes], None] | None = None) -> None:
        self.on_output = on_output
        self.on_event = on_event
        self.on_request = on_request  # the verifier: each request's headers, before its body
        self.on_finding = on_finding  # the verifier: client checks the rules found
        self.on_data = on_data  # the control channel's journal: every message written

    def event(self, name: str, fields: dict[str, Any]) -> None:
        if self.on_event is not None:
            self.on_event(name, fields)

    def item_event(self, item: Reset | End) -> None:
        if item.event is not None:
            self.event(*item.event)

    def finding(self, check: str, text: str, message: Any = None, request_id: Any = None) -> None:
        if self.on_finding is not None:
            self.on_finding(check, text, message, request_id)

    def emitted(self, send: Send) -> None:
        """A message written as it was planned (an answer sent at once)."""
        if self.on_output is not None:
            self.on_output(send.message, send.data)
        if self.on_data is not None:
            self.on_data(send.data)

    def written(self, item: Out) -> None:
        """An item of a plan's channel written to the socket."""
        if self.on_output is not None:
            if item.send is not None:
                self.on_output(item.send.message, item.send.data)
            elif item.raw is not None:
                self.on_output(None, item.raw)
        if self.on_data is not None:
            data = item.send.data if item.send is not None else item.raw
            if data is not None:
                self.on_data(data)
