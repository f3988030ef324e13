"""``mockmcp run SCENARIO --http [HOST:]PORT``: the process around the HTTP shell.

The shell (``shells.http``) only serves the listeners it is handed; this module
makes them (one socket: one port, one URL), prints the endpoint URL as the first
stdout line, serves the control channel beside it (``--control``) and, for a scenario whose
authorization server has an origin of its own (``auth.server.origin: second``, a
``migration``), a second listener on another port of the same host (its URL is in the
resource's metadata, the control channel's ``getState`` and an info line on stderr), and ends the
process as stdio's does: at stdin's EOF a graceful stop (unless ``ignoreEof``),
at a signal at once. Imported only with ``--http``: h11 stays out of stdio spawns.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Callable

import trio

from mockmcp.core import httprules
from mockmcp.shells.http.connections import MAX_CONNECTIONS
from mockmcp.shells.http.responses import READ_SIZE
from mockmcp.shells.http.shell import HttpShell

if TYPE_CHECKING:
    import argparse
    import socket
    from types import SimpleNamespace

    from mockmcp.core.connection import ShellConnection
    from mockmcp.core.auth.site import AuthSite
    from mockmcp.core.control import Control
    from mockmcp.shells.control import Sync
    from mockmcp.scenario.model.base import Scenario
    from mockmcp.shells.control import ControlServer
    from mockmcp.shells.log import StderrLog
    from mockmcp.shells.signals import ShutdownUnderWay
    from mockmcp.verify.verifier import Hooks


# Descriptors a server holds besides its client connections: listeners, stdio, the control
# socket and its clients, the journal, a session's files, trio's wake-up pipe.
FILES_BESIDE_CONNECTIONS = 256


def allow_open_files(wanted: int) -> None:
    """Raise this process's soft limit on open files to ``wanted``, within its hard limit.

    The shell serves ``MAX_CONNECTIONS`` at once and answers ``503`` past it, but a desktop
    login starts processes with a soft limit of 1,024: past that, ``accept`` fails, and a
    client's connection waits unanswered in the backlog instead. The soft limit is the
    process's to raise (servers written in Go do so at start); the hard one is the
    administrator's, and past it the 503 rule cannot hold."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):
            pass  # a platform that refuses: the accept loop's retry still holds


def url_for(host: str, port: int) -> str:
    return f"{origin_for(host, port)}/mcp"


def origin_for(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


async def serve_process(shell: HttpShell, host: str, port: int, ignore_eof: bool = False,
                        ignore_sigterm: bool = False, print_url: Callable[[str], object] | None = None,
                        control: tuple[ControlServer, socket.socket] | None = None,
                        under_way: ShutdownUnderWay | None = None) -> int:
    """Listen, print the endpoint URL as the first stdout line, serve until stdin's EOF or a signal.

    ``control``: a bound control server and its socket (``--control``), served beside. At EOF (or
    the control channel's graceful shutdown) no more connections are accepted and scripted replies
    get ``grace`` seconds, as on stdio, then the open listen streams get their completion results
    (the server ends them); a signal stops at once."""
    from mockmcp.shells.signals import shutdown_signals

    allow_open_files(MAX_CONNECTIONS + FILES_BESIDE_CONNECTIONS)
    # The signal receiver is open before the URL is printed: a suite that stops the mock as
    # soon as it has read the URL must find SIGTERM handled, not the default action.
    with shutdown_signals(ignore_sigterm) as received:
        try:
            listeners = (await trio.open_tcp_listeners(port, host=host))[:1]  # one socket: one port, one URL
        except OSError as exc:  # the port taken, an address not this machine's: the user's to fix
            shell.log("error", f"--http: cannot listen on {origin_for(host, port).removeprefix('http://')}: "
                               f"{exc.strerror or exc}")
            if control is not None:
                control[1].close()
                control[0].unlink()  # (bound, never served: its socket file goes with it)
            return 2
        bound = listeners[0].socket.getsockname()
        url = url_for(host, bound[1])
        announced = False
        async with trio.open_nursery() as nursery:
            await nursery.start(shell.serve, listeners)
            if shell.auth is not None:
                await _serve_second(shell, shell.auth, host, bound[1], nursery)
            if control is not None:
                await nursery.start(control[0].serve, control[1])
            try:
                (print_url or _print_url)(url)
                announced = True
            except OSError as exc:  # a spawner that left, a stdout on a full disk: no client can find us
                shell.log("error", f"--http: cannot write the URL {url} to stdout ({exc.strerror or exc}), "
                                   "so no client can learn it; stopping")
                nursery.cancel_scope.cancel()
            if announced:
                shell.log("info", f"serving Streamable HTTP at {url}")
                nursery.start_soon(received.cancel_on_first, nursery.cancel_scope, shell.log, under_way)
                nursery.start_soon(_until_eof, shell, ignore_eof)
                await shell.lifecycle.stopping.wait()
                await shell.lifecycle.drain()
                await shell.end_listen_streams()
                nursery.cancel_scope.cancel()
        if under_way is not None:
            under_way.ended = True  # (while the receiver's handlers are still in)
    return 0 if announced else 2


async def _serve_second(shell: HttpShell, auth: AuthSite, host: str, port: int, nursery: trio.Nursery) -> None:
    """Tell the authorization core where it is served and, if it needs one, serve the second origin."""
    if shell.second_loop is None:
        auth.origins.bound(origin_for(host, port), port)
        return
    second = (await trio.open_tcp_listeners(0, host=host))[:1]
    port2 = second[0].socket.getsockname()[1]
    auth.origins.bound(origin_for(host, port), port, origin_for(host, port2), port2)
    await nursery.start(shell.serve_second, second)
    shell.log("info", f"the authorization server's own origin (second origin): {origin_for(host, port2)}")


async def _until_eof(shell: HttpShell, ignore_eof: bool) -> None:
    stdin = trio.lowlevel.FdStream(os.dup(0))
    try:
        while True:
            try:
                data = await stdin.receive_some(READ_SIZE)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                data = b""
            if not data:
                break  # what arrives on stdin is ignored: the protocol is on the socket
    finally:
        await trio.aclose_forcefully(stdin)
    if ignore_eof:
        shell.log("info", "stdin closed; ignoring EOF as scripted (waiting for a signal or a control shutdown)")
        return
    shell.log("debug", "stdin closed; shutting down")
    shell.lifecycle.stopping.set()


def _print_url(url: str) -> None:
    os.write(1, (url + "\n").encode())


def run_http(args: argparse.Namespace | SimpleNamespace, scenario: Scenario, conn: ShellConnection, log: StderrLog,
             observers: Hooks, control: Control | None = None, sync: Sync | None = None,
             auth: AuthSite | None = None, under_way: ShutdownUnderWay | None = None) -> int:
    """``mockmcp run SCENARIO --http [HOST:]PORT``: the HTTP shell in this process's trio run.

    ``sync``: the session directory's lock around each control operation (``--session``);
    ``auth``: the authorization core the control channel steers too (made by ``boot.new_auth``)."""
    host, port = args.http
    ea = scenario.protocol.exitAfter
    shell = HttpShell(
        conn,
        log=log,
        allowed_origins=frozenset(args.allow_origin or ()),
        # (bound elsewhere, with --http-any-host, the server has no one name of its own to insist on)
        allowed_hosts=httprules.loopback_hosts(host, args.allow_host or ()) if httprules.loopback(host) else None,
        request_timeout=args.http_request_timeout,
        keepalive=args.sse_keepalive,
        on_output=observers.get("output"),
        on_data=control.outbound if control is not None else None,  # the control journal's tap
        on_event=observers.get("event"),
        on_request=observers.get("httpRequest"),
        on_finding=observers.get("httpFinding"),
        grace=args.grace,
        exit_after=(ea.messages, ea.status) if ea is not None else None,
        auth=auth,
    )
    listening = None
    if control is not None:
        from mockmcp.shells.control import listen

        listening = listen(args.control, control, shell.controlled, log, sync)
        if listening is None:
            return 2
    return trio.run(serve_process, shell, host, port, scenario.protocol.ignoreEof, scenario.protocol.ignoreSigterm,
                    None, listening, under_way)
