"""``mockmcp record``: put a real server behind our stdio, and write what it did as a cassette.

The record modes are VCR.py's: ``once`` (record when the cassette is missing, else
replay it), ``new_episodes`` (replay what the cassette answers, pass the rest to the
server and add it), ``all`` (always record anew) and ``none`` (replay only). Replay
is ``mockmcp run CASSETTE`` itself: a cassette is an ordinary scenario.

Recording passes every line through unchanged, in both directions and both eras,
and shows each to the sans-I/O ``cassette.Recorder``; when the client disconnects
(or the server does, or a signal arrives) the cassette is built, redacted, emitted
and written to a temporary file beside the target, then renamed over it, so what
was there is never lost half-way.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from typing import Any

import trio

from mockmcp.record import cassette
from mockmcp.record import relay
from mockmcp.shells import signals
from mockmcp.record import yamlemit
from mockmcp.record.redact import Redactor

MODES = ("once", "new_episodes", "all", "none")


def record(args: argparse.Namespace) -> int:
    path: str = args.output
    exists = os.path.exists(path)
    mode = args.mode
    if mode == "none" and not exists:
        print(f"mockmcp record: --mode none needs an existing cassette, and {path} does not exist", file=sys.stderr)
        return 2
    if mode == "none" or (mode == "once" and exists):
        return replay(args, path)
    cmd = list(args.cmd)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    try:
        redactor = Redactor(args.redact_key or (), args.redact or (), defaults=not args.no_default_redaction)
    except re.error as exc:  # a bad --redact pattern is the user's mistake, said plainly
        print(f"mockmcp record: bad --redact pattern: {exc}", file=sys.stderr)
        return 2
    try:
        relay.check_command(cmd)
    except relay.CommandError as exc:
        print(f"mockmcp record: {exc}", file=sys.stderr)
        return 2
    old = None
    if mode == "new_episodes" and exists:
        old = _load_old(path)
        if old is None:
            return 2
    opts = cassette.Options(redactor, keep_timing=args.keep_timing, as_modern=args.as_version is not None,
                            source=os.path.basename(cmd[0]))
    rec = cassette.Recorder(redactor)  # it learns the secrets as the lines pass
    finish = _finisher(path, rec, opts, old[0] if old is not None else None)
    try:
        if old is not None:
            from mockmcp.record.episodes import serve_new_episodes

            status = trio.run(serve_new_episodes, cmd, rec, old[1], args, finish)
        else:
            status = trio.run(_record, cmd, rec, args.startup_wait, args.grace, finish)
    except relay.CommandError as exc:
        print(f"mockmcp record: {exc}", file=sys.stderr)
        return 2
    return status


def _finisher(path: str, rec: cassette.Recorder, opts: cassette.Options, old: dict[str, Any] | None) -> Any:
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


def replay(args: argparse.Namespace, path: str) -> int:
    from mockmcp.launch.run import run

    ns = argparse.Namespace(
        scenario=path, log_level=args.log_level, time_scale=1.0, seed=None, grace=args.grace, max_line_bytes=None,
        journal=args.journal, report=args.report, strict=args.strict, allow_absolute_paths=False, no_cache=False,
    )
    return run(ns)


def _load_old(path: str) -> tuple[dict[str, Any], Any] | None:
    """The existing cassette as data (to merge into) and as a scenario (to replay); problems printed."""
    from mockmcp.scenario.loader import load
    from mockmcp.scenario.plainload import parse_yaml
    from mockmcp.scenario.problems import LoadError

    try:
        scenario, _ = load(path, use_cache=False)
    except LoadError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        return None
    with open(path, encoding="utf-8") as fh:
        data, _ = parse_yaml(fh.read(), path)
    return data, scenario


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


async def _record(cmd: list[str], rec: cassette.Recorder, startup: float, grace: float, finish: Any) -> int:
    proc = await relay.start_server(cmd, startup)
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


__all__ = ["record", "replay", "write_atomic", "MODES"]
