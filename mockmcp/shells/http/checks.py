"""What the HTTP transport checks of a request, and the client-check findings it reports.

The rules are ``core.httprules`` (plain functions); this part applies them to one
request: its head before the body is read (method, target, Origin, Host, length),
then, once the body is read, the findings about the request as a whole (a batch,
a request sent before a ``Retry-After`` passed) and, on each decoded message, the
headers that must mirror the body (``Mcp-Method``, ``Mcp-Name``, the tools'
``x-mcp-header`` parameters), checked before the engine sees the message.
"""

from __future__ import annotations

import math
from typing import Callable

import h11
import trio

from mockmcp.core import httprules
from mockmcp.core.engine import Engine
from mockmcp.scenario.model.base import Scenario
from mockmcp.wire import errors, jsonrpc
from mockmcp.shells.http.responses import too_large
from mockmcp.shells.http.resume import Resumes
from mockmcp.shells.http.taps import Taps

MessageCheck = Callable[[jsonrpc.Message], None]


class RequestChecks:
    def __init__(
        self,
        engine: Engine,
        taps: Taps,
        *,
        tool_headers: dict[str, list[httprules.ParamHeader]] | None = None,
        invalid_tools: dict[str, str] | None = None,
        allowed_origins: frozenset[str] = frozenset(),
        allowed_hosts: frozenset[str] | None = None,
        resumes: Resumes | None = None,
    ) -> None:
        self.engine = engine
        self.taps = taps
        # The tools' x-mcp-header tables follow the scenario (the control channel adds and removes tools)
        # unless handed in.
        self._tables_of: Scenario | None = None if tool_headers is None else engine.scenario
        self.tool_headers = tool_headers if tool_headers is not None else {}
        self.invalid_tools = invalid_tools if invalid_tools is not None else {}
        self._follow_tables = tool_headers is None and invalid_tools is None
        self.allowed_origins = allowed_origins
        self.allowed_hosts = allowed_hosts  # the Host names a loopback server answers to (None: any)
        self.resumes = resumes  # streams closed for the client to resume: a GET is let through meanwhile
        self._era = engine.protocol.era
        self.modern_only = self._era == "modern"
        self._retry_after = -math.inf  # trio time before which a request ignores a Retry-After we sent

    def head(self, request: h11.Request, headers: dict[bytes, bytes]) -> httprules.Reject | None:
        """The refusal of a request by its head (before its body is read), or ``None``."""
        resumable = self.resumes is not None and self.resumes.waiting()
        reject = httprules.check_head(request.method, request.target, headers, allowed_origins=self.allowed_origins,
                                      allowed_hosts=self.allowed_hosts, resumable=resumable)
        if reject is None:
            length = headers.get(b"content-length")
            if length is not None and length.isdigit() and int(length) > httprules.MAX_BODY_BYTES:
                reject = too_large()
        # (a handshake-era client may GET the standalone stream of 2025-11-25: 405 is right
        # for both eras, but only a modern-only scenario calls it a client mistake)
        if reject is not None and reject.check is not None and (reject.check != "http.method" or self.modern_only):
            self.taps.finding(reject.check, f"{request.method.decode('latin-1')} {request.target.decode('latin-1')}:"
                              f" {reject.reason}")
        return reject

    def request(self, headers: dict[bytes, bytes], body: bytes) -> None:
        """A request read whole: follow the scenario's tools, report what is wrong with it as a whole."""
        if self._follow_tables and self._tables_of is not self.engine.scenario:
            scenario = self._tables_of = self.engine.scenario
            self.tool_headers = httprules.tool_header_table(scenario.tools)
            self.invalid_tools = httprules.invalid_tool_headers(scenario.tools)
        taps = self.taps
        if taps.on_finding is not None:
            if trio.current_time() < self._retry_after:
                taps.finding("http.retryAfter", "a request came before the Retry-After of the mock's last 429/503 had passed")
                self._retry_after = -math.inf
            if body.lstrip()[:1] == b"[":
                taps.finding("http.batch", "the POST body is a JSON array (a batch)")
        if taps.on_request is not None:
            taps.on_request({k.decode("latin-1"): v.decode("latin-1") for k, v in headers.items()})

    def message_check(self, headers: dict[bytes, bytes], seen: list[jsonrpc.Message]) -> MessageCheck:
        """The transport's check of each decoded message (``Connection.handle_line``'s ``check``),
        which also keeps the messages it saw in ``seen``."""
        taps = self.taps

        def check(msg: jsonrpc.Message) -> None:
            seen.append(msg)
            if isinstance(msg, jsonrpc.ClientResponse) and self.modern_only:
                raise errors.InvalidRequest("Invalid Request: a client must not send JSON-RPC responses (each POST carries one request or notification)")
            if taps.on_finding is not None and isinstance(msg, jsonrpc.Request) and msg.method == "tools/call":
                why = self.invalid_tools.get(msg.params.get("name"))  # type: ignore[arg-type]
                if why is not None:
                    taps.finding("http.tool.invalidHeaders", f"tools/call of {msg.params.get('name')!r}: {why}",
                                 msg.message, msg.id)
            if self._era != "legacy":
                httprules.check_removed(msg, headers)
            try:
                httprules.check_metadata(msg, headers, self.tool_headers)
            except httprules.HeaderMismatch as exc:
                taps.finding(exc.check, exc.message, getattr(msg, "message", None), exc.request_id)
                raise

        return check

    def answered_with(self, head: httprules.Head) -> None:
        """A scripted status was sent: a 429 or 503 with ``Retry-After`` asks the client to wait."""
        assert head.status is not None
        retry = next((v for k, v in head.headers if k.lower() == b"retry-after"), None)
        if retry is not None and retry.strip().isdigit() and head.status in (429, 503):
            self._retry_after = trio.current_time() + int(retry)
