"""``mockmcp proxy [--faults FAULTS.yaml] -- CMD``: the proxy process, built from the one bootstrap.

The faults file (or, without one, a pass-through scenario for either era), the log, the
engine, the proxy's connection and the observers are built here; ``record.proxy`` serves
them in front of the real server, and the report is written once it is done.
"""

from __future__ import annotations

import sys
from functools import partial
from typing import TYPE_CHECKING

from mockmcp.launch.boot import attach_observers, finished, load_scenario, new_engine, open_log, server_command, verifying

if TYPE_CHECKING:
    import argparse


def proxy(args: argparse.Namespace) -> int:
    cmd = server_command(args.cmd, "proxy")
    if cmd is None:
        return 2
    if args.faults:
        loaded = load_scenario(args.faults, use_cache=False)
        if loaded is None:
            return 2
        scenario, warnings = loaded
    else:
        from mockmcp.scenario.model.base import Protocol, Scenario

        # No faults file: a pass-through for either era (the client checks accept both).
        scenario, warnings = Scenario(mockmcp=1, protocol=Protocol(era="dual")), []
    import trio

    from mockmcp.record import relay
    from mockmcp.record.proxy import serve_proxy
    from mockmcp.record.proxy_connection import ProxyConnection

    log = open_log(args.log_level, warnings)
    engine = new_engine(scenario, seed=args.seed, time_scale=args.time_scale, track_unknown=verifying(args))
    conn = ProxyConnection(engine)
    observers = attach_observers(args, engine, conn, log)
    if observers is None:
        return 2
    serve = partial(serve_proxy, cmd, conn, startup_wait=args.startup_wait, grace=args.grace, log=log,
                    on_output=observers.get("output"), on_event=observers.get("event"))
    try:
        status = trio.run(serve)
    except relay.CommandError as exc:
        print(f"mockmcp proxy: {exc}", file=sys.stderr)
        return 2
    return finished(observers, status)


__all__ = ["proxy"]
