"""Who the stdio shell tells what it wrote and what happened: each observer optional.

``on_output`` (the journal, the verifier: each message written, ``None`` for raw bytes) and
``on_event`` (journal events) and ``on_data`` (every line written, undecoded: the control
channel's tap) are given when the shell is built. The reader, the plan tasks and the shell all write, so they share this one holder.
"""

from __future__ import annotations

from typing import Any, Callable

from mockmcp.core.actions import Send

OnOutput = Callable[[Any, bytes], None]  # a message written (None for raw bytes) and its bytes
OnEvent = Callable[[str, dict[str, Any]], None]  # a journal event: its name and fields
OnData = Callable[[bytes], None]  # every line written, undecoded


class Observers:
    __slots__ = ("on_output", "on_event", "on_data")

    def __init__(self, on_output: OnOutput | None = None, on_event: OnEvent | None = None,
                 on_data: OnData | None = None) -> None:
        self.on_output = on_output
        self.on_event = on_event
        self.on_data = on_data

    def emitted(self, send: Send) -> None:
        """A message on its way to stdout."""
        if self.on_output is not None:
            self.on_output(send.message, send.data)
        if self.on_data is not None:
            self.on_data(send.data)

    def output(self, message: Any, data: bytes) -> None:
        """Written, told to ``on_output`` only: raw bytes as scripted (``message`` ``None``) and the
        server's requests to the client do not reach the control tap."""
        if self.on_output is not None:
            self.on_output(message, data)

    def event(self, name: str, fields: dict[str, Any]) -> None:
        if self.on_event is not None:
            self.on_event(name, fields)


__all__ = ["Observers", "OnData", "OnEvent", "OnOutput"]
