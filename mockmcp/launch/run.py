"""``mockmcp run``: load a scenario and serve it on this process's stdio."""

from __future__ import annotations

import gc
import os
import signal
import sys
from functools import partial
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse
    from types import SimpleNamespace

    from mockmcp.core.connection import ShellConnection
    from mockmcp.record.proxy_connection import ProxyConnection


def run(args: argparse.Namespace | SimpleNamespace) -> int:
    # Start-up allocates and keeps: no cyclic GC until the scenario and engine exist,
    # then freeze them so later collections never rescan a large scenario.
    gc.disable()
    from mockmcp.scenario.loadcache import load_cached

    # A cache hit skips yaml and cattrs entirely (they are only imported on a miss).
    hit = None if args.no_cache else load_cached(args.scenario, allow_absolute=args.allow_absolute_paths)
    if hit is not None:
        scenario, warnings = hit
    else:
        from mockmcp.scenario.loader import load
        from mockmcp.scenario.problems import LoadError

        try:
            scenario, warnings = load(args.scenario, allow_absolute=args.allow_absolute_paths, use_cache=not args.no_cache)
        except LoadError as exc:
            for problem in exc.problems:
                print(problem, file=sys.stderr)
            return 2
    import trio

    from mockmcp.shells import signals
    from mockmcp.core.connection import Connection
    from mockmcp.wire.framing import DEFAULT_MAX_LINE
    from mockmcp.shells.pipes import PipeReceiveStream, PipeSendStream
    from mockmcp.shells.stdio import Shell, StderrLog

    log = StderrLog(args.log_level)
    for w in warnings:
        log("warning", str(w))
    if scenario.protocol.ignoreSigterm:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    engine = new_engine(scenario, seed=args.seed, time_scale=args.time_scale)
    plain = Connection(engine, max_line=args.max_line_bytes or DEFAULT_MAX_LINE)
    conn: ShellConnection = plain
    session = getattr(args, "session", None)
    if session:
        from mockmcp.sessiondir.store import SessionConnection, SessionError, SessionStore, scenario_ref

        try:
            store = SessionStore(session, scenario_ref(args.scenario))
            store.check(engine)
        except SessionError as exc:
            print(f"mockmcp: {exc}", file=sys.stderr)
            return 2
        conn = SessionConnection(plain, store)
        args.journal = store.journal  # the session's journal: `mockmcp report DIR` judges it
    gc.freeze()
    # Young collections every 10,000 allocations, not 700: a busy mock allocates many
    # short-lived objects per message and thousands of tasks (streams, timers) live long;
    # at the default, collecting cost 10,000 timed streams a quarter of their time.
    gc.set_threshold(10_000, 10, 10)
    gc.enable()
    observers = attach_observers(args, engine, conn, log)
    control = _control(args, engine, conn)
    if getattr(args, "http", None) is not None:
        from mockmcp.shells.http import run_http  # (h11 is imported only here: stdio spawns stay as they were)

        status = run_http(args, scenario, conn, log, observers, control)
        finish = observers.get("finish")
        return finish(status) if finish is not None else status

    async def main() -> int:
        stdin = PipeReceiveStream(os.dup(0))
        stdout = PipeSendStream(os.dup(1))
        shell = Shell(
            conn,
            stdin,
            stdout,
            grace=args.grace,
            ignore_eof=scenario.protocol.ignoreEof,
            log=log,
            on_output=observers.get("output"),
            on_event=observers.get("event"),
            exit_after=(ea.messages, ea.status) if (ea := scenario.protocol.exitAfter) is not None else None,
            close_stdout=_close_stdout,
        )
        status = 0
        listening = None
        if control is not None:
            from mockmcp.shells.control import listen

            listening = listen(args.control, control, shell, conn, log)
            if listening is None:
                return 2
        async with trio.open_nursery() as nursery:
            # Started, not start_soon: stdin is read without a yield first (pipes.py), so a client
            # could get an answer, and send a signal, before a task merely scheduled had run.
            await nursery.start(partial(signals.watch, nursery.cancel_scope, log=log,
                                        ignore_sigterm=scenario.protocol.ignoreSigterm))
            if listening is not None:
                await nursery.start(listening[0].serve, listening[1])
            status = await shell.serve()
            nursery.cancel_scope.cancel()
        return status

    status = trio.run(main)
    finish = observers.get("finish")
    if finish is not None:
        status = finish(status)
    return status


def new_engine(
    scenario: Any,
    *,
    seed: int | None = None,
    time_scale: float = 1.0,
    state_key: bytes | None = None,
    compile_replies: bool = True,
    clock: Any = None,
) -> Any:
    """An engine with what the shell owns handed in: a random HMAC key for ``requestState``
    (unless given), a random generator seeded with ``seed`` (random delays, probabilities)
    and the wall clock tasks are timed by (unless given: tests hand in trio's)."""
    import random
    import time

    from mockmcp.core.engine import Engine

    return Engine(
        scenario,
        state_key=state_key if state_key is not None else os.urandom(32),
        rng=random.Random(seed),
        time_scale=time_scale,
        compile_replies=compile_replies,
        clock=clock if clock is not None else time.time,
    )


def _close_stdout() -> None:
    """Scripted ``closeStdout``: the shell closed its copy; make fd 1 let go of the pipe too."""
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.close(null)


def _control(args: argparse.Namespace | SimpleNamespace, engine: Any, conn: ShellConnection) -> Any:
    """With ``--control PATH``: the control core, hooked to what the connection reads and the shell writes."""
    if not getattr(args, "control", None):
        return None
    from mockmcp.scenario import fragments
    from mockmcp.core.control import Control

    control = Control(engine, fragments)
    conn.observers.append(control.inbound)  # (what the shell writes: ControlServer hooks Shell.on_data)
    return control


def attach_observers(
    args: argparse.Namespace | SimpleNamespace, engine: Any, conn: ShellConnection | ProxyConnection, log: Any
) -> dict[str, Any]:
    """Hook the journal and the verifier in only when asked for (they cost start-up time): a mock's
    connection or the proxy's. The observers by name (``output``, ``event``, ``finish``, ...)."""
    if not (args.journal or args.report or args.strict):
        return {}
    from mockmcp.verify.verifier import attach

    return attach(engine, conn, log, journal=args.journal, report=args.report, strict=args.strict,
                  session=getattr(args, "session", None))
