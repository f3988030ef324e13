"""The HTTP floor: the least an h11-over-trio server can do, to measure ``--http`` against.

Listens on 127.0.0.1 (port 0), prints its URL first like ``mockmcp run --http 0``,
and answers every request on every connection with one fixed JSON body (no
header checks, no JSON parsing, no scenario), keeping connections alive; stops at
EOF on stdin. Its rate is the cost of Python, trio and h11 themselves.
"""

import os

import h11
import trio

BODY = b'{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[{"type":"text","text":"hello"}]}}\n'
HEADERS = [(b"content-type", b"application/json"), (b"content-length", str(len(BODY)).encode())]


async def serve(stream: trio.SocketStream) -> None:
    h = h11.Connection(h11.SERVER)
    try:
        while True:
            event = h.next_event()
            if event is h11.NEED_DATA:
                data = await stream.receive_some(65536)
                if not data:
                    return
                h.receive_data(data)
            elif isinstance(event, h11.EndOfMessage):
                await stream.send_all(h.send(h11.Response(status_code=200, headers=HEADERS))
                                      + h.send(h11.Data(data=BODY)) + h.send(h11.EndOfMessage()))
                h.start_next_cycle()
            elif isinstance(event, (h11.ConnectionClosed, h11.RemoteProtocolError)):
                return
    except (trio.BrokenResourceError, h11.RemoteProtocolError):
        return


async def main() -> None:
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    async with trio.open_nursery() as nursery:
        nursery.start_soon(trio.serve_listeners, serve, listeners)
        os.write(1, f"http://127.0.0.1:{port}/mcp\n".encode())
        stdin = trio.lowlevel.FdStream(os.dup(0))
        while await stdin.receive_some(4096):
            pass
        nursery.cancel_scope.cancel()


trio.run(main)
