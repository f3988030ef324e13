"""``HttpShell``: the HTTP shell's parts, made and wired for one scenario's connection.

Each part owns one thing (see the package's docstring) and is handed the parts it
calls when it is made; this class only makes them, in order, and offers what the
process around it uses: ``serve`` the listeners it is handed, the graceful stop
(``lifecycle``), and the control channel's surface (``controlled``).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Callable

import trio

from mockmcp.core import httprules
from mockmcp.core.connection import ShellConnection
from mockmcp.shells.http.checks import RequestChecks
from mockmcp.shells.http.connections import IDLE_TIMEOUT, MAX_CONNECTIONS, REQUEST_TIMEOUT, ConnectionLoop
from mockmcp.shells.http.controlled import HttpControlled
from mockmcp.shells.http.exchange import Exchange
from mockmcp.shells.http.ids import RequestIds
from mockmcp.shells.http.lifecycle import ExitCounter, ExitProcess, Lifecycle, ReadingGate
from mockmcp.shells.http.resume import Resumes
from mockmcp.shells.http.routing import ListenRoutes
from mockmcp.shells.http.seams import Answers, HeadCheck
from mockmcp.shells.http.sse import StreamWriter
from mockmcp.shells.http.taps import OnEvent, OnFinding, OnOutput, OnRequest, Taps
from mockmcp.shells.http.transport import HttpTransport
from mockmcp.shells.log import StderrLog
from mockmcp.shells.waits import Asks, TaskWake

if TYPE_CHECKING:
    from mockmcp.core.auth.site import AuthSite


class HttpShell:
    """Serves one scenario's ``Connection`` on the listening sockets it is handed, at ``/mcp``."""

    def __init__(
        self,
        connection: ShellConnection,
        *,
        log: StderrLog | None = None,
        tool_headers: dict[str, list[httprules.ParamHeader]] | None = None,
        allowed_origins: frozenset[str] = frozenset(),
        allowed_hosts: frozenset[str] | None = None,
        keepalive: float = 15.0,
        exit_process: ExitProcess | None = None,
        on_output: OnOutput | None = None,
        on_event: OnEvent | None = None,
        on_request: OnRequest | None = None,
        on_finding: OnFinding | None = None,
        on_data: Callable[[bytes], None] | None = None,
        invalid_tools: dict[str, str] | None = None,
        max_connections: int = MAX_CONNECTIONS,
        request_timeout: float = REQUEST_TIMEOUT,
        idle_timeout: float = IDLE_TIMEOUT,
        grace: float = 1.0,
        exit_after: tuple[int, int] | None = None,
        auth: AuthSite | None = None,
    ) -> None:
        self.conn = connection
        self.log = log = log or StderrLog("warning")
        engine = connection.engine
        # Ids are the sender's, and over HTTP the server cannot tell senders apart (every SDK starts at
        # 0 or 1): requests of two clients may hold one id at once. So each id maps to the plans and
        # listen streams holding it, and the engine hears an id is finished when its last holder ends:
        # the engine must be built for that (``new_engine(..., shared_ids=True)``).
        if not engine.shared_ids:
            raise ValueError("the HTTP shell serves an engine built with shared_ids=True")
        self.taps = taps = Taps(on_output, on_event, on_request, on_finding, on_data)
        self.lifecycle = lifecycle = Lifecycle(log, grace)
        self.counter = counter = ExitCounter(log, exit_process or hard_exit, exit_after)
        self.gate = gate = ReadingGate(log, taps)
        self.asks = asks = Asks(log)  # legacy-era requests to the client, until their answer is POSTed (waits.py)
        self.task_wake = task_wake = TaskWake()  # wakes the listen streams that watch tasks (waits.py)
        self.routes = routes = ListenRoutes(engine, log, taps)
        self.ids = ids = RequestIds(connection.finished, taps)
        self.resumes = resumes = Resumes(taps, keepalive)  # streams closed for the client to resume with GET (resume.py)
        self.checks = checks = RequestChecks(engine, taps, tool_headers=tool_headers, invalid_tools=invalid_tools,
                                             allowed_origins=allowed_origins, allowed_hosts=allowed_hosts,
                                             resumes=resumes)
        transport = HttpTransport(log, task_wake, asks, routes, ids, lifecycle, taps)
        writer = StreamWriter(taps, counter, resumes, keepalive)
        exchange = Exchange(connection, checks, transport, writer, routes, ids, lifecycle, counter, taps, asks,
                            task_wake, log, resumes)
        front: Answers = exchange
        heads: HeadCheck = checks
        self.auth = auth
        self.second_loop: ConnectionLoop | None = None  # the second origin's (an authorization server's own)
        if engine.scenario.auth is not None:  # (only then: a plain run imports no authorization code)
            from mockmcp.shells.http.auth import AuthFront, new_site

            self.auth = site = auth or new_site(engine.scenario.auth, engine.services.steps.time_scale)
            front = heads = AuthFront(site, checks, exchange, taps, log, allowed_hosts=allowed_hosts)
            if site.two_origins:
                second = AuthFront(site, checks, exchange, taps, log, allowed_hosts=allowed_hosts, listener="second")
                self.second_loop = ConnectionLoop(second, second, gate, lifecycle, log, max_connections=max_connections,
                                                  request_timeout=request_timeout, idle_timeout=idle_timeout)
        self.loop = ConnectionLoop(front, heads, gate, lifecycle, log, watch=connection.watch,
                                   wake=self.wake_task_streams, max_connections=max_connections,
                                   request_timeout=request_timeout, idle_timeout=idle_timeout)
        self.controlled = HttpControlled(log, taps, gate, routes, lifecycle, counter)

    async def serve(self, listeners: list[trio.SocketListener],
                    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Accept connections on ``listeners`` until cancelled."""
        await self.loop.serve(listeners, task_status)

    async def serve_second(self, listeners: list[trio.SocketListener],
                           task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Accept connections on the second origin's ``listeners`` (its authorization server) until cancelled."""
        assert self.second_loop is not None, "serve_second without a second origin"
        await self.second_loop.serve(listeners, task_status)

    async def end_listen_streams(self) -> None:
        """A graceful stop (stdin's EOF, the control channel's shutdown), once scripted replies had
        their grace: the server ends every open listen stream with its completion result."""
        await self.routes.end_all(self.lifecycle.grace)

    def wake_task_streams(self) -> None:
        """If tasks changed (a request, another process of the session, a new named state), wake the
        streams watching them (the session's log watcher calls it too)."""
        self.task_wake.after_input(self.conn.engine)


def hard_exit(status: int) -> None:
    try:
        sys.stderr.flush()
    finally:
        os._exit(status)
