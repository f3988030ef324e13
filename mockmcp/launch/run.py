"""``mockmcp run``: load a scenario and serve it on this process's stdio, or over HTTP.

Built from the one bootstrap (``launch.boot``): the scenario, the log, the engine, the
connection (in a session directory's lock with ``--session``), the observers, the control
core; then the shell that serves them and the one shutdown-signal watcher.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
from functools import partial
from typing import TYPE_CHECKING, Callable

from mockmcp.launch.boot import (attach_observers, finished, load_scenario, new_auth, new_control, new_engine, open_log,
                                 verifying)

if TYPE_CHECKING:
    import argparse
    from types import SimpleNamespace

    from mockmcp.core.connection import ShellConnection


def run(args: argparse.Namespace | SimpleNamespace) -> int:
    # Start-up allocates and keeps: no cyclic GC until the scenario and engine exist,
    # then freeze them so later collections never rescan a large scenario.
    gc.disable()
    loaded = load_scenario(args.scenario, allow_absolute=args.allow_absolute_paths, use_cache=not args.no_cache)
    if loaded is None:
        return 2
    scenario, warnings = loaded
    import trio

    from mockmcp.shells import signals
    from mockmcp.core.connection import Connection
    from mockmcp.wire.framing import DEFAULT_MAX_LINE
    from mockmcp.shells.pipes import PipeReceiveStream, PipeSendStream
    from mockmcp.shells.stdio import Shell

    log = open_log(args.log_level, warnings)
    if scenario.auth is not None and getattr(args, "http", None) is None:
        log("warning", "the scenario's auth section applies over HTTP only (--http): this stdio run serves without"
            " authorization (the specification says stdio does not use it)")
    if scenario.protocol.ignoreSigterm:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    store = None
    session = getattr(args, "session", None)
    if session:
        from mockmcp.sessiondir.layout import SessionError, scenario_ref
        from mockmcp.sessiondir.store import SessionStore
        from mockmcp.verify.report import SavedVerdict

        try:
            store = SessionStore(session, scenario_ref(args.scenario), SavedVerdict(), warn=partial(log, "error"))
        except SessionError as exc:
            print(f"mockmcp: {exc}", file=sys.stderr)
            return 2
    engine = new_engine(
        scenario, seed=args.seed, time_scale=args.time_scale,
        shared_ids=getattr(args, "http", None) is not None,  # several HTTP clients may each use any id
        track_unknown=verifying(args),
        task_lookup=store.archived if store is not None else None,  # (a task the log does not know may be archived)
        task_archived_ids=store.archived_ids if store is not None else None,
    )
    plain = Connection(engine, max_line=args.max_line_bytes or DEFAULT_MAX_LINE)
    conn: ShellConnection = plain
    journal = None
    sync = None
    if store is not None:
        from mockmcp.sessiondir.connection import SessionConnection
        from mockmcp.sessiondir.layout import SessionError

        try:
            store.check(engine)
        except SessionError as exc:
            print(f"mockmcp: {exc}", file=sys.stderr)
            return 2
        conn = session_conn = SessionConnection(plain, store)
        sync = session_conn.synced  # control operations in the session's lock too
        journal = store.journal  # the session's journal: `mockmcp report DIR` judges it
    gc.freeze()
    # Young collections every 10,000 allocations, not 700: a busy mock allocates many
    # short-lived objects per message and thousands of tasks (streams, timers) live long;
    # at the default, collecting cost 10,000 timed streams a quarter of their time.
    gc.set_threshold(10_000, 10, 10)
    gc.enable()
    observers = attach_observers(args, engine, conn, log, journal=journal)
    if observers is None:
        return 2
    auth = new_auth(args, engine)  # (an HTTP run with auth only)
    control = new_control(args, engine, conn, auth)
    if getattr(args, "http", None) is not None:
        from mockmcp.launch.http import run_http  # (h11 is imported only here: stdio spawns stay as they were)

        with signals.shutdown_under_way(scenario.protocol.ignoreSigterm) as under_way:
            return finished(observers, _stopped_by_session(partial(
                run_http, args, scenario, conn, log, observers, control, sync=sync, auth=auth, under_way=under_way),
                session))

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
            on_data=control.outbound if control is not None else None,  # the control journal's tap
            on_event=observers.get("event"),
            exit_after=(ea.messages, ea.status) if (ea := scenario.protocol.exitAfter) is not None else None,
            close_stdout=_close_stdout,
        )
        status = 0
        listening = None
        if control is not None:
            from mockmcp.shells.control import listen

            listening = listen(args.control, control, shell, log, sync)
            if listening is None:
                return 2
        async with trio.open_nursery() as nursery:
            # Started, not start_soon: stdin is read without a yield first (pipes.py), so a client
            # could get an answer, and send a signal, before a task merely scheduled had run.
            await nursery.start(partial(signals.watch, nursery.cancel_scope, log=log,
                                        ignore_sigterm=scenario.protocol.ignoreSigterm, under_way=under_way))
            if listening is not None:
                await nursery.start(listening[0].serve, listening[1])
            status = await shell.serve()
            under_way.ended = True  # (before the watcher's handlers go with the cancel)
            nursery.cancel_scope.cancel()
        return status

    # Beneath trio's handlers, for the whole run: a shutdown that end of file started still writes
    # its report when the first SIGINT or SIGTERM arrives meanwhile (shells/signals.py).
    with signals.shutdown_under_way(scenario.protocol.ignoreSigterm) as under_way:
        return finished(observers, _stopped_by_session(partial(trio.run, main), session))


def _stopped_by_session(serve: Callable[[], int], session: str | None) -> int:
    """``serve``'s status; or, when the session directory could not be written while serving (a
    full disk: ``SessionError``, raised where it was found, cutting back what it wrote), one line
    on stderr and status 2, as at start-up. Then the report is written as after any end. Without
    a session there is nothing to catch, and a spawn does not import the session's modules."""
    if session is None:
        return serve()
    from mockmcp.sessiondir.layout import SessionError

    status = 2
    try:
        status = serve()
    except* SessionError as group:
        first: BaseException = group
        while isinstance(first, BaseExceptionGroup):
            first = first.exceptions[0]
        print(f"mockmcp: {first}", file=sys.stderr)
    return status


def _close_stdout() -> None:
    """Scripted ``closeStdout``: the shell closed its copy; make fd 1 let go of the pipe too."""
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.close(null)


__all__ = ["run"]
