"""Whole HTTP answers written at once, and the small facts about the socket they need.

Everything here writes one complete response (a JSON body, a ``202``, a
refusal, a scripted answer h11 could not frame) or tells how a connection ends;
the streamed answers are ``sse``'s.
"""

from __future__ import annotations

import h11
import trio

from mockmcp.core import httprules
from mockmcp.wire import errors, jsonrpc

READ_SIZE = 65536

SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]
JSON_HEADERS = [(b"content-type", b"application/json")]


class ClientGone(Exception):
    """The client closed or reset the connection while we were answering."""


class Dropped(Exception):
    """A scripted reset: the connection is to be dropped (with a TCP RST) mid-answer."""


def reason(status: int) -> bytes:
    return httprules.REASONS.get(status, b"")


def json_head(status: int, length: int, head: httprules.Head | None = None) -> h11.Response:
    """The head of a JSON answer (a scripted ``http`` step's headers and content type, if any)."""
    headers = JSON_HEADERS if head is None else head.head_headers(b"application/json")
    return h11.Response(status_code=status, reason=reason(status),
                        headers=[*headers, (b"content-length", str(length).encode())])


async def write_json(h: h11.Connection, stream: trio.abc.Stream, status: int, data: bytes,
                     head: httprules.Head | None = None) -> None:
    await stream.send_all(h.send(json_head(status, len(data), head)) + h.send(h11.Data(data=data))
                          + h.send(h11.EndOfMessage()))


async def write_accepted(h: h11.Connection, stream: trio.abc.Stream) -> None:
    head = h11.Response(status_code=202, reason=b"Accepted", headers=[(b"content-length", b"0")])
    await stream.send_all(h.send(head) + h.send(h11.EndOfMessage()))


async def write_status(h: h11.Connection, stream: trio.abc.Stream, head: httprules.Head) -> None:
    """``http: {status: ...}``: that status, its headers and body, instead of the plan's answer."""
    assert head.status is not None
    headers = [*head.head_headers(b"text/plain"), (b"content-length", str(len(head.body)).encode())]
    response = h11.Response(status_code=head.status, reason=reason(head.status), headers=headers)
    await stream.send_all(h.send(response) + h.send(h11.Data(data=head.body)) + h.send(h11.EndOfMessage()))


async def write_reject(h: h11.Connection, stream: trio.abc.Stream, reject: httprules.Reject, head: bool = False) -> None:
    """A refusal: its status and headers, and its body unless the request was a ``HEAD`` (whose
    answer has the headers a GET's would, and no body: h11 refuses to write one)."""
    headers = [*reject.headers, (b"content-length", str(len(reject.body)).encode()), (b"connection", b"close")]
    await stream.send_all(h.send(h11.Response(status_code=reject.status, headers=headers, reason=reason(reject.status))))
    await stream.send_all((b"" if head else h.send(h11.Data(data=reject.body))) + h.send(h11.EndOfMessage()))


async def send_raw(stream: trio.abc.Stream, status: int, body: bytes) -> None:
    """An answer written without h11 (for requests h11 could not parse, or over the connection cap)."""
    head = (f"HTTP/1.1 {status} ".encode() + reason(status) + b"\r\ncontent-type: text/plain\r\n"
            + f"content-length: {len(body)}\r\nconnection: close\r\n\r\n".encode())
    try:
        await stream.send_all(head + body)
    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
        pass


def too_large() -> httprules.Reject:
    return httprules.Reject(413, "Content Too Large", headers=((b"content-type", b"text/plain"),),
                            body=f"the body exceeds the {httprules.MAX_BODY_BYTES}-byte limit\n".encode())


def has_partial(h: h11.Connection) -> bool:
    """Bytes of a next request are already buffered (pipelined behind the last answer)."""
    return bool(h.trailing_data[0])


def is_json(data: bytes) -> bool:
    try:
        jsonrpc.parse(data)
    except errors.ClientError:
        return False
    return True


def reset_on_close(stream: trio.abc.Stream) -> None:
    """Make the coming close a TCP RST (SO_LINGER 0), as a crashed server's connection would end."""
    import socket
    import struct

    sock = getattr(stream, "socket", None)  # (an in-memory stream, in tests, has none)
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
