"""The Streamable HTTP transport's rules, without sockets: what a POST may be, and what it gets.

The HTTP shell (``shells.http``) owns the sockets and h11; every decision the
transport's rules make lives here, as plain functions over what h11 hands the
shell (a method, a target, headers as lower-cased ``(name, value)`` byte pairs)
so each rule is unit-tested without a server:

- ``check_head``: before the body is read: on loopback, a ``Host`` naming
  the server (``403``: DNS rebinding), the endpoint path, POST only
  (``405``), ``Origin`` (``403``: DNS rebinding in browsers), ``Accept``
  listing both media types (``406``) and a JSON ``Content-Type`` (``415``).
- ``check_removed``: an ``initialize`` of the stateless revision is a method
  the server does not implement (``-32601``, so ``404``).
- ``check_metadata``: after the body is decoded: the ``MCP-Protocol-Version``,
  ``Mcp-Method`` and ``Mcp-Name`` request headers against the body (with the
  base64 sentinel form decoded; on the Tasks extension's ``tasks/*`` methods
  ``Mcp-Name`` carries ``params.taskId``), and the ``Mcp-Param-*`` headers of the tool's
  ``x-mcp-header`` parameters; a mismatch or an omission raises
  ``HeaderMismatch`` (``-32020``), so the one boundary answers it.
- ``status_for``: the HTTP status of a JSON-RPC error answered as a JSON body
  (``400`` for the protocol's errors, ``404`` for ``-32601``).

Header checks apply to requests of the stateless era (a modern version in the
header or in the body's ``_meta``); ``initialize`` and other handshake-era
traffic is left to the legacy era's own rules.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any, Iterable, Mapping

from mockmcp.wire import errors
from mockmcp.wire import jsonrpc
from mockmcp.wire import protocol as p
from mockmcp.core.actions import Dribble, HttpFault, Send, Sleep, Stderr, StopReading

ENDPOINT = b"/mcp"
MAX_HEADER_BYTES = 16 * 1024  # the request line and headers together
MAX_BODY_BYTES = 4 * 1024 * 1024  # one JSON-RPC message (the same as the stdio line limit)

Headers = Iterable[tuple[bytes, bytes]]

MODERN_VERSIONS = frozenset({p.LATEST_VERSION})
NAME_PARAM = {p.TOOLS_CALL: "name", p.PROMPTS_GET: "name", p.RESOURCES_READ: "uri"}
PARAM_PREFIX = "mcp-param-"
_SENTINEL = re.compile(r"=\?base64\?(.*)\?=", re.S)
_SAFE_VALUE = re.compile(r"[\x20-\x7e\t]*")
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
MAX_SAFE_INTEGER = 2**53 - 1
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "[::1]"})


class HeaderMismatch(errors.ClientError):
    """A request header disagrees with the body, is missing, or is malformed (HTTP only).

    ``check`` names the client check it is (``http.header.missing``, ...; see checks.py).
    """

    code = p.HEADER_MISMATCH

    def __init__(self, message: str, *, check: str, request_id: Any) -> None:
        super().__init__(message, request_id=request_id)
        self.check = check


class Reject:
    """An HTTP answer the rules give without the engine: a status, headers and a body."""

    __slots__ = ("status", "reason", "headers", "body", "check")

    def __init__(self, status: int, reason: str, *, headers: tuple[tuple[bytes, bytes], ...] = (), body: bytes = b"",
                 check: str | None = None) -> None:
        self.status = status
        self.reason = reason
        self.headers = headers
        self.body = body
        self.check = check  # the client check the refusal is (checks.py), if it is one

    def __repr__(self) -> str:
        return f"Reject({self.status}, {self.reason!r})"


def _json_error(status: int, code: int, message: str, headers: tuple[tuple[bytes, bytes], ...] = (),
                check: str | None = None) -> Reject:
    """A rejection whose body is a JSON-RPC error response without ``id`` (the spec's MAY)."""
    body = jsonrpc.encode(errors.error_response(errors.ABSENT, code, message))
    return Reject(status, message, headers=((b"content-type", b"application/json"), *headers), body=body, check=check)


def header_map(headers: Headers) -> dict[bytes, bytes]:
    """Lower-cased name -> value; a repeated field's values joined with ``, `` (RFC 9110 5.3)."""
    out: dict[bytes, bytes] = {}
    for name, value in headers:
        name = name.lower()
        out[name] = out[name] + b", " + value if name in out else value
    return out


# ---------------------------------------------------------------- before the body


def check_head(method: bytes, target: bytes, headers: Mapping[bytes, bytes], *, allowed_origins: frozenset[str] = frozenset(),
               allowed_hosts: frozenset[str] | None = None, resumable: bool = False) -> Reject | None:
    """The rules a request's head must pass before its body is read (``None``: read it).

    ``allowed_hosts``: the names a ``Host`` header may give (``None``: any; see ``host_allowed``).
    ``resumable``: a stream the mock closed waits for the client's ``GET`` (``http: {retry: ...}``),
    so a ``GET`` listing ``text/event-stream`` in its ``Accept`` is read too."""
    if len(target) + sum(len(k) + len(v) + 4 for k, v in headers.items()) > MAX_HEADER_BYTES:
        return Reject(431, "Request Header Fields Too Large", headers=((b"content-type", b"text/plain"),),
                      body=f"the request head exceeds the {MAX_HEADER_BYTES}-byte limit\n".encode())
    if b"transfer-encoding" in headers and b"content-length" in headers:
        # Two framings: a proxy that trusts the other one sees another request in the body (smuggling),
        # so the body is not read and the connection closes after this answer (RFC 9112, 6.1).
        return Reject(400, "Bad Request", headers=((b"content-type", b"text/plain"),),
                      body=b"malformed HTTP request: both Transfer-Encoding and Content-Length (send one)\n")
    host = headers.get(b"host")
    if host is not None and allowed_hosts is not None and not host_allowed(host.decode("latin-1"), allowed_hosts):
        return _json_error(403, p.INVALID_REQUEST,
                           f"Forbidden: Host {host.decode('latin-1')!r} does not name this server (it listens on loopback"
                           " and answers only to its own address or localhost: DNS rebinding protection; --allow-host"
                           " NAME accepts another name)")
    path = target.split(b"?", 1)[0]
    if path != ENDPOINT:
        return Reject(404, "Not Found", headers=((b"content-type", b"text/plain"),),
                      body=b"mockmcp: the MCP endpoint is " + ENDPOINT + b"\n")
    origin = headers.get(b"origin")
    if origin is not None and not origin_allowed(origin.decode("latin-1"), allowed_origins):
        return _json_error(403, p.INVALID_REQUEST, f"Forbidden: origin {origin.decode('latin-1')!r} is not allowed")
    if method == b"GET" and resumable:
        if not admits(headers.get(b"accept", b"").decode("latin-1"), "text/event-stream"):
            return _json_error(406, p.INVALID_REQUEST, "Not Acceptable: a GET's Accept header must list text/event-stream",
                               check="http.accept")
        return None
    if method != b"POST":
        # GET (the removed standalone stream) and DELETE (the removed sessions) included.
        return _json_error(405, p.INVALID_REQUEST, "Method Not Allowed: the MCP endpoint accepts only POST",
                           headers=((b"allow", b"POST"),), check="http.method")
    if not accepts_both(headers.get(b"accept", b"").decode("latin-1")):
        return _json_error(406, p.INVALID_REQUEST,
                           "Not Acceptable: the Accept header must list both application/json and text/event-stream",
                           check="http.accept")
    ctype = headers.get(b"content-type", b"").decode("latin-1").split(";", 1)[0].strip().lower()
    if ctype != "application/json":
        return _json_error(415, p.INVALID_REQUEST, "Unsupported Media Type: the body must be application/json")
    return None


def origin_allowed(origin: str, allowed: frozenset[str]) -> bool:
    """A loopback origin (any scheme and port) or one listed with ``--allow-origin``."""
    if origin in allowed or "*" in allowed:
        return True
    m = re.fullmatch(r"(?i)https?://(\[[0-9a-f:]+\]|[^/:]+)(?::\d{1,5})?/?", origin)
    return m is not None and m.group(1).lower() in LOOPBACK_HOSTS


def host_allowed(host: str, allowed: frozenset[str]) -> bool:
    """Does a ``Host`` header name this server: a name in ``allowed`` (a loopback server's own address,
    loopback names, ``--allow-host`` ones; ``*``: any), with any port or none?

    The name, not the port, is what DNS rebinding changes (a page of ``evil.example`` whose name now
    resolves to 127.0.0.1 still sends ``Host: evil.example``); a port may differ behind a forwarded
    port (``ssh -L``, a container's port mapping)."""
    if "*" in allowed or host.strip().lower() in allowed:  # (an --allow-host NAME:PORT is compared whole)
        return True
    m = re.fullmatch(r"(\[[0-9A-Fa-f:.]+\]|[^\[\]:/@\s]+)(?::\d{0,5})?", host.strip())
    return m is not None and m.group(1).lower() in allowed


def loopback(host: str) -> bool:
    """Whether a listening address is this machine only (the Host and Origin rules apply there)."""
    return host in ("localhost", "::1") or host.startswith("127.")


def loopback_hosts(bound: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """The ``Host`` names a server bound to the loopback address ``bound`` answers to (lower-cased,
    IPv6 in brackets): ``localhost``, the loopback literals, ``bound`` and the ``extra`` ones."""
    names = {*LOOPBACK_HOSTS, bound.lower()}
    if ":" in bound:
        names.add(f"[{bound.lower()}]")
    names.update(name.lower() for name in extra)
    return frozenset(names)


def accepts_both(accept: str) -> bool:
    """Does ``Accept`` admit both ``application/json`` and ``text/event-stream`` (q > 0)?"""
    return admits(accept, "application/json") and admits(accept, "text/event-stream")


def admits(accept: str, kind: str) -> bool:
    """Does ``Accept`` admit the media type ``kind`` (q > 0; ``major/*`` and ``*/*`` count)?"""
    ranges = set()
    for part in accept.split(","):
        fields = part.split(";")
        media = fields[0].strip().lower()
        q = 1.0
        for param in fields[1:]:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        if media and q > 0:
            ranges.add(media)
    major = kind.split("/", 1)[0]
    return kind in ranges or f"{major}/*" in ranges or "*/*" in ranges


# ---------------------------------------------------------------- after the body


def decode_value(raw: bytes) -> str:
    """A header value as text: the base64 sentinel decoded, a plain value checked for safe characters.

    Raises ``ValueError`` for characters a plain value may not carry and for a
    sentinel whose content is not base64 of UTF-8.
    """
    text = raw.decode("latin-1")
    m = _SENTINEL.fullmatch(text)
    if m is not None:
        try:
            return base64.b64decode(m.group(1), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise ValueError("its base64 sentinel does not hold base64 of UTF-8 text") from None
    if not _SAFE_VALUE.fullmatch(text):
        raise ValueError("it has characters outside visible ASCII, space and tab (use the =?base64?...?= form)")
    return text


def is_modern(msg: jsonrpc.Request, headers: Mapping[bytes, bytes]) -> bool:
    """Does this request claim the stateless era (header or body), so its headers are checked?"""
    if msg.method == p.INITIALIZE:
        return False
    return claims_modern(msg, headers)


def check_removed(msg: jsonrpc.Message, headers: Mapping[bytes, bytes]) -> None:
    """Raise ``MethodNotFound`` for an ``initialize`` that claims the stateless revision.

    Revision 2026-07-28 has no handshake: over HTTP a method the server does not implement is
    ``404`` with ``-32601``, and an ``initialize`` whose header or ``_meta`` names 2026-07-28 is a
    request of that revision. A handshake-era ``initialize`` (neither) is the legacy era's (a
    ``dual`` scenario's handshake, a modern-only one's ``-32022`` naming the versions it speaks)."""
    if type(msg) is jsonrpc.Request and msg.method == p.INITIALIZE and claims_modern(msg, headers):
        raise errors.MethodNotFound(
            f"Method not found: {p.INITIALIZE} (revision {p.LATEST_VERSION} has no initialize handshake; send server/discover)",
            request_id=msg.id,
        )


def claims_modern(msg: jsonrpc.Request, headers: Mapping[bytes, bytes]) -> bool:
    """Does the request name a stateless-era version, in its ``MCP-Protocol-Version`` header or ``_meta``?"""
    header = headers.get(b"mcp-protocol-version")
    if header is not None and header.decode("latin-1") in MODERN_VERSIONS:
        return True
    meta = msg.params.get("_meta")
    return type(meta) is dict and meta.get(p.META_PROTOCOL_VERSION) in MODERN_VERSIONS


def check_metadata(msg: jsonrpc.Message, headers: Mapping[bytes, bytes], tool_headers: Mapping[str, list[ParamHeader]]) -> None:
    """Raise ``HeaderMismatch`` unless the request metadata headers mirror the body.

    ``tool_headers``: each valid tool's ``x-mcp-header`` parameters (see
    ``param_headers``). Notifications and responses are not checked here.
    """
    if not isinstance(msg, jsonrpc.Request) or not is_modern(msg, headers):
        return
    rid = msg.id

    def fail(text: str, check: str | None = None) -> None:
        if check is None:
            check = "http.header.missing" if "is missing" in text else "http.header.mismatch"
        raise HeaderMismatch(f"Header mismatch: {text}", check=check, request_id=rid)

    version = headers.get(b"mcp-protocol-version")
    meta = msg.params.get("_meta")
    body_version = meta.get(p.META_PROTOCOL_VERSION) if type(meta) is dict else None
    if version is None:
        fail("the MCP-Protocol-Version header is missing")
    elif body_version is not None and version.decode("latin-1") != body_version:
        fail(f"MCP-Protocol-Version header value {version.decode('latin-1')!r} does not match body value {body_version!r}")
    method = headers.get(b"mcp-method")
    if method is None:
        fail("the Mcp-Method header is missing")
    elif method.decode("latin-1") != msg.method:
        fail(f"Mcp-Method header value {method.decode('latin-1')!r} does not match body value {msg.method!r}")
    key = NAME_PARAM.get(msg.method)
    if key is not None:
        _check_name(msg, key, headers.get(b"mcp-name"), fail)
    elif msg.method in p.TASK_METHODS and b"mcp-name" in headers:
        # The Tasks extension routes its methods by task: Mcp-Name carries params.taskId. One that
        # disagrees with the body is -32020 like any other; a missing one is tolerated (clients
        # written before the extension named the header send none; the body's taskId is acted on).
        _check_name(msg, "taskId", headers[b"mcp-name"], fail)
    if msg.method == p.TOOLS_CALL:
        name = msg.params.get("name")
        params = tool_headers.get(name) if type(name) is str else None
        if params:
            arguments = msg.params.get("arguments")
            _check_params(params, arguments if type(arguments) is dict else {}, headers, fail)


def _check_name(msg: jsonrpc.Request, key: str, raw: bytes | None, fail: Any) -> None:
    body = msg.params.get(key)
    if raw is None:
        fail(f"the Mcp-Name header is missing (it must carry params.{key})")
        return
    try:
        value = decode_value(raw)
    except ValueError as exc:
        fail(f"Mcp-Name header value is malformed: {exc}")
        return
    if value != body:
        fail(f"Mcp-Name header value {value!r} does not match body value {body!r}")


class ParamHeader:
    """One ``x-mcp-header`` parameter of a tool: the header's name, the property path, its type."""

    __slots__ = ("token", "path", "type")

    def __init__(self, token: str, path: tuple[str, ...], type: str) -> None:
        self.token = token
        self.path = path
        self.type = type

    def __repr__(self) -> str:
        return f"ParamHeader({self.token!r}, {self.path!r}, {self.type!r})"


def param_headers(schema: Any) -> list[ParamHeader] | str:
    """A tool's ``x-mcp-header`` parameters, or why its annotations are invalid (a text).

    Only properties reachable through a chain of ``properties`` keys may carry
    the annotation, on a primitive type (string, integer, boolean), with a
    token-syntax name unique among the tool's annotations regardless of case.
    """
    found: list[ParamHeader] = []
    problems: list[str] = []
    _walk(schema, (), True, found, problems)
    if problems:
        return problems[0]
    seen: set[str] = set()
    for ph in found:
        if ph.token.lower() in seen:
            return f"x-mcp-header {ph.token!r} is used twice (names are compared regardless of case)"
        seen.add(ph.token.lower())
    return found


def _walk(node: Any, path: tuple[str, ...], reachable: bool, found: list[ParamHeader], problems: list[str]) -> None:
    if isinstance(node, list):
        for item in node:
            _walk(item, path, False, found, problems)
        return
    if not isinstance(node, dict):
        return
    if "x-mcp-header" in node and path:
        token = node["x-mcp-header"]
        kind = node.get("type")
        where = ".".join(path)
        if not reachable:
            problems.append(f"x-mcp-header on {where!r} is not reachable through properties alone")
        elif type(token) is not str or not _TOKEN.fullmatch(token):
            problems.append(f"x-mcp-header on {where!r} is not a header field-name token")
        elif kind not in ("string", "integer", "boolean"):
            problems.append(f"x-mcp-header on {where!r} needs type string, integer or boolean (got {kind!r})")
        else:
            found.append(ParamHeader(token, path, kind))
    for key, value in node.items():
        if key == "properties" and isinstance(value, dict):
            for prop, sub in value.items():
                _walk(sub, (*path, str(prop)), reachable, found, problems)
        elif isinstance(value, (dict, list)) and key != "x-mcp-header":
            _walk(value, path + ("<" + key + ">",), False, found, problems)


_MISSING = object()


def _value_at(arguments: dict[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = arguments
    for key in path:
        if type(node) is not dict or key not in node:
            return _MISSING
        node = node[key]
    return _MISSING if node is None else node


def _check_params(params: list[ParamHeader], arguments: dict[str, Any], headers: Mapping[bytes, bytes], fail: Any) -> None:
    for ph in params:
        header = f"Mcp-Param-{ph.token}"
        raw = headers.get((PARAM_PREFIX + ph.token.lower()).encode("latin-1"))
        value = _value_at(arguments, ph.path)
        if value is _MISSING:
            if raw is not None:
                fail(f"{header} header is present but the body has no value at {'.'.join(ph.path)!r}", "http.param.mismatch")
            continue
        if raw is None:
            fail(f"the {header} header is missing (the body has {'.'.join(ph.path)!r})", "http.param.missing")
            continue
        try:
            text = decode_value(raw)
        except ValueError as exc:
            fail(f"{header} header value is malformed: {exc}", "http.param.mismatch")
            continue
        if not _same(text, value):
            fail(f"{header} header value {text!r} does not match body value {json.dumps(value, ensure_ascii=False)}",
                 "http.param.mismatch")


def _same(text: str, value: Any) -> bool:
    """A header's text against the body's value: booleans lower-case, integers numerically."""
    if type(value) is bool:
        return text == ("true" if value else "false")
    if type(value) in (int, float):
        try:
            number = float(text) if re.fullmatch(r"-?\d+(\.\d+)?([eE][+-]?\d+)?", text.strip()) else None
        except ValueError:
            number = None
        return number is not None and number == value
    return type(value) is str and text == value


def invalid_tool_headers(tools: Iterable[Any]) -> dict[str, str]:
    """Each tool whose ``x-mcp-header`` annotations are invalid -> why (a client must not call it)."""
    out: dict[str, str] = {}
    for tool in tools:
        found = param_headers(dict(tool.inputSchema) if tool.inputSchema is not None else {})
        if isinstance(found, str):
            out[tool.name] = found
    return out


def tool_header_table(tools: Iterable[Any]) -> dict[str, list[ParamHeader]]:
    """Each tool with valid ``x-mcp-header`` parameters -> them (invalid ones are not checked:
    a conforming client excludes such a tool, which is the client check's business)."""
    table: dict[str, list[ParamHeader]] = {}
    for tool in tools:
        found = param_headers(dict(tool.inputSchema) if tool.inputSchema is not None else {})
        if isinstance(found, list) and found:
            table[tool.name] = found
    return table


# ---------------------------------------------------------------- statuses


# The errors a POST is refused with at the HTTP level too (the spec names 400 for the
# version, header and capability errors and 404 for an unknown method; a malformed
# message is a bad request). Other errors (scripted ones, a rule that did not match)
# are answers to a well-formed request: 200.
_ERROR_STATUS = {
    p.PARSE_ERROR: 400,
    p.INVALID_REQUEST: 400,
    p.INVALID_PARAMS: 400,
    p.METHOD_NOT_FOUND: 404,
    p.HEADER_MISMATCH: 400,
    p.MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    p.UNSUPPORTED_PROTOCOL_VERSION: 400,
}


def status_for(message: Any) -> int:
    """The HTTP status of a response answered as one JSON body."""
    if type(message) is dict:
        error = message.get("error")
        if type(error) is dict:
            return _ERROR_STATUS.get(error.get("code"), 200)  # type: ignore[arg-type]
    return 200


REASONS = {  # every status RFC 9110 15 defines, and RFC 6585's and RFC 7725's: whatever a scenario scripts
    100: b"Continue", 101: b"Switching Protocols", 200: b"OK", 201: b"Created", 202: b"Accepted",
    203: b"Non-Authoritative Information", 204: b"No Content", 205: b"Reset Content", 206: b"Partial Content",
    300: b"Multiple Choices", 301: b"Moved Permanently", 302: b"Found", 303: b"See Other", 304: b"Not Modified",
    305: b"Use Proxy", 307: b"Temporary Redirect", 308: b"Permanent Redirect", 400: b"Bad Request",
    401: b"Unauthorized", 402: b"Payment Required", 403: b"Forbidden", 404: b"Not Found", 405: b"Method Not Allowed",
    406: b"Not Acceptable", 407: b"Proxy Authentication Required", 408: b"Request Timeout", 409: b"Conflict",
    410: b"Gone", 411: b"Length Required", 412: b"Precondition Failed", 413: b"Content Too Large",
    414: b"URI Too Long", 415: b"Unsupported Media Type", 416: b"Range Not Satisfiable", 417: b"Expectation Failed",
    421: b"Misdirected Request", 422: b"Unprocessable Content", 426: b"Upgrade Required",
    428: b"Precondition Required", 429: b"Too Many Requests", 431: b"Request Header Fields Too Large",
    451: b"Unavailable For Legal Reasons", 500: b"Internal Server Error", 501: b"Not Implemented",
    502: b"Bad Gateway", 503: b"Service Unavailable", 504: b"Gateway Timeout", 505: b"HTTP Version Not Supported",
    511: b"Network Authentication Required",
}
"""Reason phrases by status; a status with none here (only a scenario can script one) is sent
with an empty phrase, which HTTP/1.1 allows (RFC 9112 4)."""


def sse_event(data: bytes) -> bytes:
    """One SSE ``message`` event carrying ``data`` (each of its lines a ``data:`` field)."""
    if b"\n" not in data and b"\r" not in data:
        return b"event: message\ndata: " + data + b"\n\n"
    lines = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
    return b"event: message\n" + b"".join(b"data: " + line + b"\n" for line in lines) + b"\n"


KEEPALIVE = b": keep-alive\n\n"


def priming_event(event_id: str, retry_ms: int) -> bytes:
    """The 2025-11-25 priming event: an event id, an empty ``data`` field, and the ``retry`` (ms) a
    client waits before it reconnects with ``GET`` and that id as ``Last-Event-ID``."""
    return f"id: {event_id}\nretry: {retry_ms}\ndata: \n\n".encode("ascii")


def with_event_id(event: bytes, event_id: str) -> bytes:
    """An SSE event with an ``id`` field first (a resumed stream's events carry their ids)."""
    return b"id: " + event_id.encode("ascii") + b"\n" + event


# ---------------------------------------------------------------- JSON body or SSE stream


def choose_body(plan: Any, mode: str = "auto") -> str:
    """``"json"`` or ``"sse"`` for a request's plan (``mode``: auto, json or sse).

    A JSON body carries exactly one message, so a plan that sends anything
    else (progress, logs, a subscription's notifications), parks, or is lazy
    needs a stream whatever the mode. ``auto`` also streams plans with time in
    them (a client sees the headers at once); ``json`` waits for their answer.
    """
    if mode == "sse":
        return "sse"
    actions = plan.actions
    if plan.rest is not None:
        return "sse"
    sends = 0
    timed = False
    for action in actions:
        kind = type(action)
        if kind is Send:
            sends += 1
        elif kind is Sleep:
            timed = True
        elif kind is HttpFault:
            if action.write is not None or action.end_stream or action.retry is not None:
                return "sse"
        else:
            return "sse"
    if sends != 1:
        return "sse"
    if timed and mode == "auto":
        return "sse"
    return "json"


class Head:
    """The response head a plan's leading ``http`` faults ask for (see ``head_faults``)."""

    __slots__ = ("status", "body", "headers", "content_type", "delay", "respond_as")

    def __init__(self) -> None:
        self.status: int | None = None
        self.body = b""
        self.headers: list[tuple[bytes, bytes]] = []
        self.content_type: str | None = None
        self.delay = 0.0
        self.respond_as: str | None = None

    def head_headers(self, default_type: bytes) -> list[tuple[bytes, bytes]]:
        """The response's headers: its content type (replaced, or none) and the scripted ones."""
        ctype = default_type if self.content_type is None else self.content_type.encode("latin-1")
        names = {n.lower() for n, _ in self.headers}
        out = [] if not ctype or b"content-type" in names else [(b"content-type", ctype)]
        return out + self.headers


# Actions that neither write nor end anything: leading ``http`` steps may stand among them.
_QUIET = (HttpFault, Sleep, Dribble, Stderr, StopReading)


def head_faults(plan: Any) -> Head | None:
    """The head options of the ``http`` faults before a plan's first message (``None``: none)."""
    head: Head | None = None
    for action in plan.actions:
        if not isinstance(action, _QUIET):
            break
        if type(action) is not HttpFault:
            continue
        head = head or Head()
        if action.status is not None:
            head.status, head.body = action.status, action.body
        head.headers.extend((k.encode("latin-1"), v.encode("latin-1")) for k, v in action.headers)
        if action.content_type is not None:
            head.content_type = action.content_type
        head.delay += action.delay
        if action.respond_as is not None:
            head.respond_as = action.respond_as
    return head
