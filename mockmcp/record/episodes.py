"""``record --mode new_episodes``: the cassette answers what it has, the real server the rest.

Each client request is routed once, by what it is: a call the cassette recorded
(``cassette.recorded_keys``: the same method and exact arguments, params or uri) goes
to the existing engine, served by the ordinary ``Shell`` over in-memory streams; so
does the retry of an ``input_required`` round the engine started (its
``requestState`` was written by the engine). Everything else (discovery, lists, new
calls, rounds the real server started) goes to the real server and is recorded.
Notifications and the client's answers go to both. The engine's lines and the
server's lines meet in one channel with one writer of our stdout.
"""

from __future__ import annotations

import os
from typing import Any, Callable

import trio

from mockmcp.record import cassette
from mockmcp.wire import errors
from mockmcp.wire import jsonrpc
from mockmcp.record import relay
from mockmcp.shells import signals
from mockmcp.core.connection import Connection
from mockmcp.core.engine import Engine
from mockmcp.shells.log import StderrLog
from mockmcp.shells.stdio import Shell


async def serve_new_episodes(cmd: list[str], rec: cassette.Recorder, engine: Engine, *, startup_wait: float,
                             grace: float, log: StderrLog, finish: Callable[[], int]) -> int:
    """Serve our stdio from ``engine`` (the existing cassette's) and the real server ``cmd``, as the
    module says; ``finish`` (write the merged cassette) when either side ends or a signal comes."""
    proc = await relay.start_server(cmd, startup_wait)
    assert proc.stdin is not None and proc.stdout is not None
    server_stdin, server_stdout = proc.stdin, proc.stdout
    keys = cassette.recorded_keys(engine.scenario)
    engine_states: set[str] = set()
    engine_lines = relay.LineSplitter()  # a dribbled answer arrives in pieces: its state is in the whole line

    def engine_wrote(data: bytes) -> None:
        """Learn the ``requestState`` of each round the engine starts. The engine also replays what
        the server once wrote (garbage lines, non-object results), so a line is read by the bounded
        decoder and one that is not a message is skipped."""
        for line in engine_lines.feed(data):
            if b'"requestState"' not in line:
                continue
            msg = _message(line)
            result = msg.get("result") if msg is not None else None
            state = result.get("requestState") if type(result) is dict else None
            if type(state) is str:
                engine_states.add(state)

    def replayed(msg: dict[str, Any]) -> bool:
        params = msg.get("params")
        params = params if type(params) is dict else {}
        state = params.get("requestState")
        if type(state) is str:
            return state in engine_states
        method = msg["method"]
        if method in cassette.NOT_RECORDED:
            return False
        return cassette.request_key(method, params) in keys

    stdin = trio.lowlevel.FdStream(os.dup(0))
    stdout = trio.lowlevel.FdStream(os.dup(1))
    out_send, out_recv = trio.open_memory_channel[bytes](relay.CHANNEL_SIZE)
    srv_send, srv_recv = trio.open_memory_channel[bytes](relay.CHANNEL_SIZE)
    eng_send, eng_recv = trio.open_memory_channel[bytes](relay.CHANNEL_SIZE)
    # The handshake (legacy era) is the real server's: it answers initialize, and the engine
    # serves recorded calls as the same, initialized, session.
    engine.session.legacy_initialized = True
    shell = Shell(Connection(engine), relay.ChannelReceiveStream(eng_recv),
                  relay.ChannelSendStream(out_send.clone(), engine_wrote), grace=grace, log=log)
    server_out = out_send.clone()
    out_send.close()

    async with trio.open_nursery() as nursery:

        async def client_side() -> None:
            splitter = relay.LineSplitter()
            async with srv_send, eng_send:
                while True:
                    try:
                        data = await stdin.receive_some(relay.READ_SIZE)
                    except (trio.BrokenResourceError, trio.ClosedResourceError):
                        data = b""
                    for line in splitter.feed(bytes(data)) if data else splitter.close():
                        msg = _message(line)
                        is_request = msg is not None and type(msg.get("method")) is str and "id" in msg
                        if msg is not None and is_request and replayed(msg):
                            await eng_send.send(line)
                            continue
                        rec.client_line(line, trio.current_time())
                        await srv_send.send(line)
                        if not is_request and msg is not None:  # notifications and answers: the engine too
                            await eng_send.send(line)
                    if not data:
                        return

        async def engine_side() -> None:
            await shell.serve()

        async def server_side() -> None:
            await relay.pump(server_stdout, server_out, rec.server_line)

        async def to_server() -> None:
            await relay.drain(srv_recv, server_stdin)
            await relay.settle(proc, lambda: rec.in_flight + shell.busy, grace)
            nursery.cancel_scope.cancel()

        async def to_client() -> None:
            await relay.drain(out_recv, stdout)
            nursery.cancel_scope.cancel()

        for task in (client_side, engine_side, server_side, to_server, to_client):
            nursery.start_soon(task)
        nursery.start_soon(signals.watch, nursery.cancel_scope)
    status = finish()
    with trio.CancelScope(shield=True):
        await relay.stop(proc, 0.0)
    return status


def _message(line: bytes) -> dict[str, Any] | None:
    """``line`` as a JSON object, or ``None`` for a line that is none (not JSON, or past the
    decoder's nesting, number and UTF-8 limits: such a line is passed on, never a crash)."""
    try:
        msg = jsonrpc.parse(line)
    except errors.ClientError:
        return None
    return msg if type(msg) is dict else None


__all__ = ["serve_new_episodes"]
