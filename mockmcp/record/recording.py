"""``mockmcp record``: put a real server behind our stdio, and write what it did as a cassette.

The record modes are VCR.py's: ``once`` (record when the cassette is missing, else
replay it), ``new_episodes`` (replay what the cassette answers, pass the rest to the
server and add it), ``all`` (always record anew) and ``none`` (replay only); the
composition root (``launch.record``) decides which. Replay is ``mockmcp run CASSETTE``
itself: a cassette is an ordinary scenario.

Recording passes every line through unchanged, in both directions and both eras,
and shows each to the sans-I/O ``cassette.Recorder``; when the client disconnects
(or the server does, or a signal arrives) the cassette is built, redacted, emitted
and written to a temporary file beside the target, then renamed over it, so what
was there is never lost half-way.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Callable

import trio

from mockmcp.record import cassette
from mockmcp.record import relay
from mockmcp.shells import signals
from mockmcp.record import yamlemit

MODES = ("once", "new_episodes", "all", "none")


def finisher(path: str, rec: cassette.Recorder, opts: cassette.Options, old: dict[str, Any] | None) -> Callable[[], int]:
    """What ends a recording: the cassette built from ``rec``, merged into ``old`` (``new_episodes``),
    written over ``path``."""

    def finish() -> int:
        """Write the cassette; the exit status (1: it could not be written, the old one is kept)."""
        if not any(ex.method not in _PROBE_ONLY for ex in rec.exchanges):
            # A version probe (the TS client spawns one process for server/discover alone, then
            # the session's): writing it would make the session's process replay a probe.
            print(f"mockmcp record: the session only probed the server; {path} not written", file=sys.stderr)
            return 0
        data = cassette.build(rec, opts)
        replaced = 0
        if rec.escapes:
            data, replaced = cassette.without_surrogates(data)
        if old is not None:
            data = cassette.merge(old, data)
        try:
            write_atomic(path, yamlemit.dump(data, header=HEADER))
        except OSError as exc:  # a full disk, a folder we may not write: said plainly, nothing lost
            kept = "the old cassette is unchanged" if os.path.exists(path) else "nothing was written"
            print(f"mockmcp record: cannot write {path}: {exc.strerror or exc} ({kept})", file=sys.stderr)
            return 1
        if opts.redactor.redacted:
            print(f"mockmcp record: redacted {opts.redactor.redacted} value(s) in {path}", file=sys.stderr)
        if replaced:
            print(f"mockmcp record: {replaced} string(s) held a lone surrogate (\\ud800-\\udfff), which no YAML "
                  f"file can hold: written with U+FFFD in its place in {path}", file=sys.stderr)
        cut = rec.overflowed()
        if cut:
            first = cut[0]
            print(f"mockmcp record: {len(cut)} call(s) got more from the server than a cassette keeps per call "
                  f"({cassette.MAX_EVENTS:,} messages, {cassette.MAX_EVENT_BYTES // (1024 * 1024)} MiB); "
                  f"{sum(ex.dropped for ex in cut):,} message(s) passed on but not recorded "
                  f"(first: {first.method} id {json.dumps(first.id)[:80]})", file=sys.stderr)
        return 0

    return finish


_PROBE_ONLY = frozenset({"server/discover", "initialize", "ping"})
HEADER = "A cassette written by `mockmcp record`: an ordinary scenario (mockmcp check / mockmcp run)."


def write_atomic(path: str, text: str) -> None:
    """Write ``text`` to a temporary file in the same folder, flush it to disk, rename it over ``path``."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(folder, f".{os.path.basename(path)}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


async def serve_recording(cmd: list[str], rec: cassette.Recorder, *, startup_wait: float, grace: float,
                          finish: Callable[[], int]) -> int:
    """Start the real server ``cmd``, pass every line both ways while ``rec`` sees it, and ``finish``
    (write the cassette) when either side ends or a signal comes; ``relay.CommandError`` if the
    server cannot start."""
    proc = await relay.start_server(cmd, startup_wait)
    assert proc.stdin is not None and proc.stdout is not None
    stdin = trio.lowlevel.FdStream(os.dup(0))
    stdout = trio.lowlevel.FdStream(os.dup(1))
    to_server_send, to_server_recv = trio.open_memory_channel[bytes](relay.CHANNEL_SIZE)
    to_client_send, to_client_recv = trio.open_memory_channel[bytes](relay.CHANNEL_SIZE)
    async with trio.open_nursery() as nursery:

        async def client_side() -> None:
            await relay.pump(stdin, to_server_send, rec.client_line)

        async def server_side() -> None:
            await relay.pump(proc.stdout, to_client_send, rec.server_line)  # type: ignore[arg-type]

        async def to_client() -> None:
            await relay.drain(to_client_recv, stdout)
            nursery.cancel_scope.cancel()  # the server closed its stdout: the session is over

        async def to_server() -> None:
            await relay.drain(to_server_recv, proc.stdin)  # type: ignore[arg-type]
            # The client disconnected: give the server time to answer what is in flight.
            await relay.settle(proc, lambda: rec.in_flight, grace)
            nursery.cancel_scope.cancel()

        for task in (client_side, server_side, to_client, to_server):
            nursery.start_soon(task)
        nursery.start_soon(signals.watch, nursery.cancel_scope)
    # The cassette first: a client that gave up on us (SIGTERM, then SIGKILL) must not cost it.
    status: int = finish()
    with trio.CancelScope(shield=True):
        await relay.stop(proc, 0.0)
    return status


__all__ = ["HEADER", "MODES", "finisher", "serve_recording", "write_atomic"]
