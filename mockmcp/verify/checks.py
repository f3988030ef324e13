"""What revision 2026-07-28 requires of *clients*, checked message by message.

Plain sans-I/O code: ``ClientChecker`` is fed every inbound line (parsed or
not) and every message the server writes, and returns ``Finding``s. It keeps
only what the rules need: the requests in flight (ids, progress tokens) and
the ``input_required`` rounds the server issued and the client has not retried
yet. Each check has a stable id, a level (error: a MUST was broken; warning: a
SHOULD; note: allowed but probably a mistake) and the spec section it comes
from; docs/verification.md lists them all.
"""

from __future__ import annotations

import json
from typing import Any

from mockmcp.wire import errors
from mockmcp.wire import jsonrpc
from mockmcp.wire import protocol as p

_SPEC = "https://modelcontextprotocol.io/specification/2026-07-28/"
_LEGACY_SPEC = "https://modelcontextprotocol.io/specification/2025-11-25/"
_TASKS_SPEC = "https://github.com/modelcontextprotocol/ext-tasks/blob/main/specification/draft/tasks.md"
_AUTH = "basic/authorization"

# id -> (level, spec section, one-line summary). The single list the docs and tests follow.
CHECKS: dict[str, tuple[str, str, str]] = {
    "jsonrpc.parse": ("error", "basic/transports/stdio#sending-messages", "a line that is not UTF-8 JSON"),
    "jsonrpc.invalid": ("error", "basic#messages", "a message that is not valid JSON-RPC 2.0"),
    "jsonrpc.response": ("error", "basic/patterns/mrtr", "the client sent a JSON-RPC response to no request of the server's (servers send none in this revision; a legacy session's answers are fine)"),
    "id.null": ("error", "basic#requests", "a request id that is null"),
    "id.type": ("error", "basic#requests", "a request id that is neither a string nor an integer"),
    "id.reused": ("error", "basic#requests", "a request id already used by a request still in flight"),
    "meta.missing": ("error", "basic#meta", "a request without params._meta"),
    "meta.protocolVersion.missing": ("error", "basic#meta", "_meta lacks io.modelcontextprotocol/protocolVersion"),
    "meta.protocolVersion.type": ("error", "basic#meta", "io.modelcontextprotocol/protocolVersion is not a string"),
    "meta.clientCapabilities.missing": ("error", "basic#meta", "_meta lacks io.modelcontextprotocol/clientCapabilities"),
    "meta.clientCapabilities.type": ("error", "basic#meta", "io.modelcontextprotocol/clientCapabilities is not an object"),
    "meta.clientInfo.missing": ("warning", "basic#meta", "_meta lacks io.modelcontextprotocol/clientInfo (a SHOULD)"),
    "meta.clientInfo.type": ("error", "basic#meta", "io.modelcontextprotocol/clientInfo is not an Implementation (name and version strings)"),
    "meta.logLevel.type": ("error", "server/utilities/logging#per-request-log-level", "io.modelcontextprotocol/logLevel is not a logging level"),
    "meta.progressToken.type": ("error", "basic/patterns/progress#progress-flow", "progressToken is neither a string nor an integer"),
    "progressToken.reused": ("error", "basic/patterns/progress#progress-flow", "a progressToken already used by a request still in flight"),
    "mrtr.retry.sameId": ("error", "basic/patterns/mrtr#client-requirements-basic-workflow", "a retry after input_required reused the id of the original request"),
    "mrtr.requestState.altered": ("error", "basic/patterns/mrtr#client-requirements-basic-workflow", "a retry did not echo requestState byte for byte"),
    "mrtr.requestState.dropped": ("error", "basic/patterns/mrtr#client-requirements-basic-workflow", "a retry omitted the requestState the server gave"),
    "mrtr.requestState.unexpected": ("error", "basic/patterns/mrtr#client-requirements-basic-workflow", "a retry sent requestState although the server gave none"),
    "mrtr.inputResponses.missing": ("error", "basic/patterns/mrtr#client-requirements-basic-workflow", "a retry did not answer every input request"),
    "mrtr.leak": ("error", "basic/patterns/mrtr#client-requirements-basic-workflow", "inputResponses or requestState on a request that is not the retry of the request that asked"),
    "cancel.unknown": ("note", "basic/patterns/cancellation#behavior-requirements", "notifications/cancelled names no request in flight"),
    "removed.initialize": ("error", "basic/transports/stdio#backward-compatibility", "initialize sent to a modern-only server, unless a server/discover probe failed first (then the fallback is right)"),
    "removed.initialized": ("error", "changelog#major-changes", "notifications/initialized (the handshake is gone)"),
    "removed.ping": ("error", "changelog#major-changes", "ping (removed in this revision)"),
    "removed.logging.setLevel": ("error", "changelog#major-changes", "logging/setLevel (use _meta io.modelcontextprotocol/logLevel)"),
    "removed.resources.subscribe": ("error", "basic/patterns/subscriptions", "resources/subscribe or resources/unsubscribe (use subscriptions/listen)"),
    "meta.reserved": ("warning", "basic#meta", "a _meta key under a prefix reserved for MCP (second label modelcontextprotocol or mcp) that the revision does not define"),
    "meta.traceparent.format": ("error", "basic#meta", "a traceparent that is not in W3C Trace Context format"),
    "meta.tracestate.format": ("error", "basic#meta", "a tracestate that is not in W3C Trace Context format"),
    "meta.baggage.format": ("error", "basic#meta", "a baggage that is not in W3C Baggage format"),
    "meta.clientCapabilities.shape": ("error", "schema#clientcapabilities", "a client sub-capability of the wrong shape (roots, sampling, elicitation and their members are objects)"),
    "initialize.protocolVersion": ("error", _LEGACY_SPEC + "basic/lifecycle#initialization", "a legacy initialize without a protocolVersion string"),
    "initialize.clientInfo": ("error", _LEGACY_SPEC + "basic/lifecycle#initialization", "a legacy initialize without clientInfo (name and version strings)"),
    "initialize.capabilities": ("error", _LEGACY_SPEC + "basic/lifecycle#initialization", "a legacy initialize without a capabilities object"),
    "tools.arguments.invalid": ("error", "server/tools#error-handling", "tools/call arguments that break the tool's inputSchema (answered with a tool error)"),
    "expect.unmatched": ("error", "docs/verification.md#unmatched-requests", "a request no scenario rule matched (with the closest rule)"),
    "expect.answer": ("error", "docs/verification.md#unmatched-requests", "a client's answer to a server request that differs from the request step's expect (a cassette's recorded answer)"),
    # The Tasks extension (io.modelcontextprotocol/tasks), checked by task_checks.py.
    "tasks.capability.missing": ("error", _TASKS_SPEC + "#protocol-errors", "tasks/get, tasks/update or tasks/cancel without the extension in the request's client capabilities (the server MUST refuse it)"),
    "tasks.poll.tooFast": ("warning", _TASKS_SPEC + "#task-polling", "tasks/get sooner than the task's pollIntervalMs after the last look (clients SHOULD respect it)"),
    "tasks.poll.afterTerminal": ("note", _TASKS_SPEC + "#task-polling", "tasks/get for a task already completed, failed or cancelled (poll until a terminal status, then stop)"),
    "tasks.update.notOutstanding": ("error", _TASKS_SPEC + "#task-update-requests", "tasks/update answering keys that are not outstanding: never asked, or answered already (each key MUST be outstanding)"),
    "tasks.result.unsupported": ("error", _TASKS_SPEC + "#capability-negotiation", "following a task the server returned to a request the extension does not augment (the client MUST treat it as an invalid response)"),
    "tasks.cancel.notification": ("error", _TASKS_SPEC + "#task-cancellation", "notifications/cancelled for a request the server answered with a task (it MUST NOT be used for task cancellation: tasks/cancel is)"),
    "tasks.method.removed": ("error", _TASKS_SPEC + "#task-polling", "tasks/result or tasks/list: methods of the 2025-11-25 tasks the extension removed (a server answers -32601)"),
    "tasks.request.taskParam": ("note", _TASKS_SPEC + "#capability-negotiation", "a request with the 2025-11-25 'task' parameter: the server alone decides whether to answer with a task"),
    # Authorization over HTTP (a scenario's auth), checked by auth_checks.py from the journal's auth events.
    "auth.pkce.missing": ("error", _AUTH + "/security-considerations#authorization-code-protection", "an authorization request without code_challenge (PKCE is required)"),
    "auth.pkce.method": ("error", _AUTH + "/security-considerations#authorization-code-protection", "a code_challenge_method other than S256 (absent means plain)"),
    "auth.state.missing": ("warning", _AUTH + "/security-considerations#open-redirection", "an authorization request without state (a SHOULD)"),
    "auth.resource.missing": ("error", _AUTH + "#resource-parameter-implementation", "an authorization or token request without resource (RFC 8707)"),
    "auth.resource.mismatch": ("error", _AUTH + "#canonical-server-uri", "a resource parameter that is not the MCP server's canonical URL"),
    "auth.resource.unvalidated": ("error", "https://www.rfc-editor.org/rfc/rfc9728.html#section-3.3", "authorizing or registering after protected resource metadata whose resource is not the MCP URL (it MUST NOT be used)"),
    "auth.token.query": ("error", _AUTH + "#token-requirements", "an access token in the query string"),
    "auth.token.foreign": ("error", _AUTH + "#token-handling", "a bearer token this server's authorization server did not issue"),
    "auth.token.dropped": ("error", _AUTH + "#token-requirements", "an MCP request without Authorization once the client had a token"),
    "auth.scope.dropped": ("warning", _AUTH + "#step-up-authorization-flow", "a step-up authorization that drops scopes granted before (ask the union)"),
    "auth.scope.retryLimit": ("warning", _AUTH + "#step-up-authorization-flow", "more than 3 answers 403 insufficient_scope to one operation, or authorizing again after the third"),
    "auth.scope.invented": ("warning", _AUTH + "#scope-selection-strategy", "a scope no challenge, scopes_supported, earlier request or grant offered"),
    "auth.scope.order": ("warning", _AUTH + "#scope-selection-strategy", "scopes that are not the selection strategy's: the challenge's first, else all of scopes_supported; a step-up asks the challenged ones"),
    "auth.iss.unchecked": ("error", _AUTH + "#authorization-response-validation", "a code redeemed after an authorization response whose iss was wrong (as a string) or missing though advertised"),
    "auth.issuer.mismatch": ("error", _AUTH + "/authorization-server-discovery#authorization-server-metadata-discovery", "using an authorization server whose metadata named another issuer"),
    "auth.registration.stale": ("error", _AUTH + "/client-registration#authorization-server-binding", "a client id registered at one authorization server used at another"),
    "auth.registration.applicationType": ("error", _AUTH + "/client-registration#application-type-and-redirect-uri-constraints", "a dynamic registration without application_type"),
    "auth.registration.cimdUnused": ("warning", _AUTH + "/client-registration#client-id-metadata-documents", "dynamic registration while the server offers metadata documents and the client has one (auth.expect.registration: document)"),
    "auth.registration.unexpected": ("warning", _AUTH + "/client-registration#pre-registration", "registration, or another client id, while the client has pre-registered credentials (auth.expect.registration: preRegistered)"),
    "auth.registration.ignored": ("warning", "https://www.rfc-editor.org/rfc/rfc7591.html#section-3.2.1", "a token request authenticated otherwise than the registration response's token_endpoint_auth_method (the server may replace the one asked)"),
    "auth.offlineAccess.unsupported": ("error", _AUTH + "#refresh-tokens", "offline_access asked of an authorization server whose scopes_supported does not list it"),
    # Streamable HTTP (mockmcp run --http): found by the HTTP shell's rules, reported here.
    "http.header.missing": ("error", "basic/transports/streamable-http#server-validation", "a request without MCP-Protocol-Version, Mcp-Method, or Mcp-Name where its method needs one"),
    "http.header.mismatch": ("error", "basic/transports/streamable-http#server-validation", "a request header that does not match the body (or a malformed value or base64 sentinel)"),
    "http.param.missing": ("error", "basic/transports/streamable-http#client-behavior", "a tools/call without the Mcp-Param-{Name} header of an x-mcp-header parameter it sets"),
    "http.param.mismatch": ("error", "basic/transports/streamable-http#client-behavior", "an Mcp-Param-{Name} header that does not match its argument (or a header for an absent one)"),
    "http.tool.invalidHeaders": ("warning", "basic/transports/streamable-http#schema-extension", "a tools/call of a tool whose x-mcp-header annotations are invalid (a client must exclude it from tools/list, so only an application calling it by name sends this)"),
    "http.accept": ("error", "basic/transports/streamable-http#sending-messages", "a POST whose Accept does not list both application/json and text/event-stream"),
    "http.method": ("error", "basic/transports/streamable-http#sending-messages", "an HTTP method other than POST (GET streams and DELETE sessions were removed)"),
    "http.batch": ("error", "basic/transports/streamable-http#sending-messages", "a POST body that is a JSON array (one request or notification per POST)"),
    "http.retryAfter": ("warning", "https://www.rfc-editor.org/rfc/rfc9110#name-retry-after", "a request sooner than the Retry-After of a 429 or 503 the mock answered"),
    # The 2025-11-25 polling (http: {retry: ...}): the mock closed a POST's SSE stream before its answer.
    "http.resume.missing": ("warning", _LEGACY_SPEC + "basic/transports#sending-messages-to-the-server", "no GET to resume an SSE stream the mock closed before its answer, after a priming event with an id and retry (the client SHOULD poll by reconnecting)"),
    "http.resume.early": ("error", _LEGACY_SPEC + "basic/transports#sending-messages-to-the-server", "a GET resuming a closed SSE stream sooner than the stream's retry field (the client MUST wait that many milliseconds)"),
    "http.resume.lastEventId": ("warning", _LEGACY_SPEC + "basic/transports#resumability-and-redelivery", "a GET resuming a closed SSE stream without Last-Event-ID, or with another id than the last one the stream carried"),
}

_REMOVED = {
    "notifications/initialized": "removed.initialized",
    "ping": "removed.ping",
    "logging/setLevel": "removed.logging.setLevel",
    "resources/subscribe": "removed.resources.subscribe",
    "resources/unsubscribe": "removed.resources.subscribe",
}


def spec_url(section: str) -> str:
    """The spec address of a check's section (our own docs for mock-specific checks)."""
    return section if section.startswith(("docs/", "https://")) else _SPEC + section


class Finding:
    """One broken rule: which check, how bad, where in the spec, and the offending message."""

    __slots__ = ("check", "level", "section", "text", "message", "request_id", "extra")

    def __init__(self, check: str, text: str, message: Any = None, request_id: Any = None, extra: dict[str, Any] | None = None) -> None:
        level, section, _ = CHECKS[check]
        self.check = check
        self.level = level
        self.section = section
        self.text = text
        self.message = message
        self.request_id = request_id
        self.extra = extra

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"check": self.check, "level": self.level, "spec": spec_url(self.section), "text": self.text}
        if self.request_id is not None:
            out["id"] = self.request_id
        if self.message is not None:
            out["message"] = self.message
        if self.extra:
            out.update(self.extra)
        return out

    def __repr__(self) -> str:
        return f"Finding({self.check!r}, {self.text!r})"


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class _Round:
    """An input_required result the server sent, waiting for its retry."""

    __slots__ = ("id", "method", "target", "args", "state", "asked")

    def __init__(self, id: Any, method: str, target: Any, args: str, state: str | None, asked: list[str]) -> None:
        self.id, self.method, self.target, self.args, self.state, self.asked = id, method, target, args, state, asked


class _InFlight:
    __slots__ = ("method", "target", "args", "token")

    def __init__(self, method: str, target: Any, args: str, token: Any) -> None:
        self.method, self.target, self.args, self.token = method, target, args, token


def _target(method: str, params: dict[str, Any]) -> Any:
    return params.get("uri") if method == p.RESOURCES_READ else params.get("name")


_MISSING = object()


class ClientChecker:
    """Checks each client message against the revision's client requirements.

    ``modern_only``: the server speaks only the stateless revision, so the
    handshake-era methods are findings (a dual or legacy scenario accepts them).
    """

    def __init__(self, *, modern_only: bool = True) -> None:
        self.modern_only = modern_only
        self.in_flight: dict[Any, _InFlight] = {}
        self.rounds: list[_Round] = []
        self.legacy_session = False
        self.duplicates: dict[Any, int] = {}  # ids reused while in flight: their responses are not the original's
        self.server_requests: dict[Any, str] = {}  # requests the server sent (legacy era; a real server's under mockmcp proxy), until answered
        self.server_cancelled: dict[Any, str] = {}  # ... and those it gave up on (a late answer is fine)
        # What the last server/discover said: "modern" (a DiscoverResult or -32022), "legacy" (any other
        # error: falling back to initialize is then right), or None (no answer yet, or no probe).
        self.probe: str | None = None

    # ------------------------------------------------------------ inbound

    def invalid_line(self, line: bytes, error_text: str) -> list[Finding]:
        """A line the decoder rejected: say which rule it broke."""
        try:
            # The decoder's own parse: its limits keep what the journal re-encodes shallow.
            obj = jsonrpc.parse(line)
        except errors.ClientError:
            return [Finding("jsonrpc.parse", error_text, line.decode("latin-1"))]
        if type(obj) is dict and "method" in obj and "id" in obj:
            rid = obj["id"]
            if rid is None:
                return [Finding("id.null", f"{obj.get('method')!r} request with id null", obj)]
            if type(rid) not in (str, int):
                return [Finding("id.type", f"{obj.get('method')!r} request with id of type {type(rid).__name__}", obj)]
        return [Finding("jsonrpc.invalid", error_text, obj)]

    def oversized(self, length: int) -> list[Finding]:
        return [Finding("jsonrpc.invalid", f"a line of {length} bytes exceeds the line limit")]

    def response(self, message: dict[str, Any]) -> list[Finding]:
        rid = message.get("id")
        if type(rid) in (str, int) and self.server_requests.pop(rid, None) is not None:
            return []  # the answer to a request the server sent (a legacy-era session): what it should do
        if type(rid) in (str, int) and self.server_cancelled.pop(rid, None) is not None:
            return []  # an answer that crossed the server's notifications/cancelled (a race the spec allows)
        return [Finding("jsonrpc.response", f"the client sent a response (id {rid!r}) to no request of the server's", message, rid)]

    def notification(self, method: str, params: dict[str, Any], message: dict[str, Any]) -> list[Finding]:
        out: list[Finding] = []
        removed = _REMOVED.get(method)
        if removed and self.modern_only:
            out.append(Finding(removed, f"{method} is not part of revision {p.LATEST_VERSION}", message))
        if method == p.CANCELLED:
            rid = params.get("requestId", _MISSING)
            if rid is _MISSING or rid not in self.in_flight:
                shown = "no requestId" if rid is _MISSING else f"request {rid!r}, which is not in flight"
                out.append(Finding("cancel.unknown", f"notifications/cancelled names {shown} (the server ignores it)", message))
            else:
                self.ended(rid)  # the server sends nothing more for it
        return out

    def request(self, rid: Any, method: str, params: dict[str, Any], message: dict[str, Any]) -> list[Finding]:
        out: list[Finding] = []
        if rid in self.in_flight:
            out.append(Finding("id.reused", f"{method} reuses id {rid!r} of a {self.in_flight[rid].method} request still in flight", message, rid))
            self.duplicates[rid] = self.duplicates.get(rid, 0) + 1
        if method == p.INITIALIZE:
            probing = any(r.method == p.DISCOVER for r in self.in_flight.values())
            if self.modern_only and self.probe != "legacy" and not probing:
                why = (
                    "the server/discover probe identified a modern server: do not fall back to initialize"
                    if self.probe == "modern"
                    else "initialize sent to a server that speaks only the stateless revision, without a server/discover probe first"
                )
                out.append(Finding("removed.initialize", why, message, rid))
            else:
                self.legacy_session = True
                out += _initialize_params(rid, params, message)
            return out
        removed = _REMOVED.get(method)
        if removed and self.modern_only:
            out.append(Finding(removed, f"{method} is not part of revision {p.LATEST_VERSION}", message, rid))
        meta = params.get("_meta")
        token: Any = None
        if not self.legacy_session and not removed:  # a removed method is the finding; its _meta is moot
            out += self._meta(rid, method, meta, message)
        if type(meta) is dict:
            token = meta.get(p.META_PROGRESS_TOKEN)
            if token is not None and type(token) in (str, int):
                for other_id, other in self.in_flight.items():
                    if other.token == token and type(other.token) is type(token) and other_id != rid:
                        out.append(Finding("progressToken.reused", f"progressToken {token!r} is already used by request {other_id!r} still in flight", message, rid))
                        break
        target = _target(method, params)
        args = _canon(params.get("arguments") or {})
        if method in p.INPUT_REQUIRED_METHODS or (
            method not in p.TASK_METHODS and ("inputResponses" in params or "requestState" in params)
        ):  # tasks/update carries inputResponses of its own (task_checks.py judges them)
            out += self._mrtr(rid, method, target, args, params, message)
        if rid not in self.in_flight:
            self.in_flight[rid] = _InFlight(method, target, args, token)
        return out

    def _meta(self, rid: Any, method: str, meta: Any, message: dict[str, Any]) -> list[Finding]:
        if type(meta) is not dict:
            return [Finding("meta.missing", f"{method} request without params._meta", message, rid)]
        out = []
        for key, check, want, kinds in (
            (p.META_PROTOCOL_VERSION, "meta.protocolVersion", "a string", (str,)),
            (p.META_CLIENT_CAPABILITIES, "meta.clientCapabilities", "an object", (dict,)),
        ):
            value = meta.get(key, _MISSING)
            if value is _MISSING:
                out.append(Finding(check + ".missing", f"{method} request without _meta[{key!r}]", message, rid))
            elif type(value) not in kinds:
                out.append(Finding(check + ".type", f"_meta[{key!r}] must be {want}, got {_canon(value)}", message, rid))
        info = meta.get(p.META_CLIENT_INFO, _MISSING)
        if info is _MISSING:
            out.append(Finding("meta.clientInfo.missing", f"{method} request without _meta[{p.META_CLIENT_INFO!r}]", message, rid))
        elif type(info) is not dict or type(info.get("name")) is not str or type(info.get("version")) is not str:
            out.append(Finding("meta.clientInfo.type", f"_meta[{p.META_CLIENT_INFO!r}] needs string name and version, got {_canon(info)}", message, rid))
        level = meta.get(p.META_LOG_LEVEL, _MISSING)
        if level is not _MISSING and level not in p.LOG_LEVELS:
            out.append(Finding("meta.logLevel.type", f"_meta[{p.META_LOG_LEVEL!r}] must be one of {', '.join(p.LOG_LEVELS)}, got {_canon(level)}", message, rid))
        token = meta.get(p.META_PROGRESS_TOKEN, _MISSING)
        if token is not _MISSING and type(token) not in (str, int):
            out.append(Finding("meta.progressToken.type", f"progressToken must be a string or an integer, got {_canon(token)}", message, rid))
        caps = meta.get(p.META_CLIENT_CAPABILITIES)
        if type(caps) is dict:
            out += _capability_shapes(rid, caps, f"_meta[{p.META_CLIENT_CAPABILITIES!r}]", message)
        out += _meta_keys(rid, meta, message)
        return out

    def _mrtr(self, rid: Any, method: str, target: Any, args: str, params: dict[str, Any], message: dict[str, Any]) -> list[Finding]:
        has_state = "requestState" in params
        has_answers = "inputResponses" in params
        if not (has_state or has_answers):
            return []  # a fresh call (a client may choose not to retry)
        state = params.get("requestState")
        answers = params.get("inputResponses")
        found = None
        if has_state:
            found = next((r for r in reversed(self.rounds) if r.state is not None and r.state == state), None)
        if found is None:
            found = next((r for r in reversed(self.rounds) if (r.method, r.target, r.args) == (method, target, args)), None)
        if found is None:
            what = " and ".join(k for k, has in (("inputResponses", has_answers), ("requestState", has_state)) if has)
            if self.rounds:
                pending = ", ".join(f"{r.method} {r.target!r} (id {r.id!r})" for r in self.rounds)
                text = f"{method} {target!r} carries {what}, but the input_required results waiting for a retry are for {pending}"
            else:
                text = f"{method} {target!r} carries {what}, but no input_required result is waiting for a retry"
            return [Finding("mrtr.leak", text, message, rid)]
        self.rounds.remove(found)
        out = []
        if rid == found.id:
            out.append(Finding("mrtr.retry.sameId", f"the retry of {method} {target!r} reuses id {rid!r}; a retry is a new request with a new id", message, rid))
        if found.state is None:
            if has_state:
                out.append(Finding("mrtr.requestState.unexpected", f"the retry of {method} {target!r} sends requestState, but the input_required result (id {found.id!r}) had none", message, rid))
        elif not has_state:
            out.append(Finding("mrtr.requestState.dropped", f"the retry of {method} {target!r} omits the requestState of the input_required result (id {found.id!r})", message, rid))
        elif state != found.state:
            out.append(Finding("mrtr.requestState.altered", f"the retry of {method} {target!r} does not echo requestState byte for byte ({_difference(state, found.state)})", message, rid))
        given = answers if type(answers) is dict else {}
        missing = [k for k in found.asked if k not in given]
        if missing:
            out.append(Finding("mrtr.inputResponses.missing", f"the retry of {method} {target!r} does not answer {', '.join(map(repr, missing))}", message, rid))
        return out

    # ------------------------------------------------------------ outbound

    def server_message(self, message: Any) -> None:
        """Follow what the server wrote: responses end requests, input_required opens a round."""
        if type(message) is not dict:
            return
        if message.get("method") == p.CANCELLED and type(message.get("params")) is dict:
            rid = message["params"].get("requestId")
            method = self.server_requests.pop(rid, None) if type(rid) in (str, int) else None
            if method is not None:  # the server gave up waiting for its own request
                self.server_cancelled[rid] = method
                while len(self.server_cancelled) > 256:
                    del self.server_cancelled[next(iter(self.server_cancelled))]
            elif type(rid) in (str, int):  # (a proxied server may write any value here)
                self.ended(rid)  # the server ended a subscription stream
            return
        if "method" in message and "id" in message:
            if len(self.server_requests) < 1024:
                self.server_requests[message["id"]] = message["method"]
            return
        if "method" in message or "id" not in message:
            return
        rid = message["id"]
        if self._one_of_duplicates(rid):  # one of two responses with this id: the other is still in flight
            return
        req = self.in_flight.pop(rid, None)
        result = message.get("result")
        if req is not None and req.method == p.DISCOVER:
            error = message.get("error")
            code = error.get("code") if type(error) is dict else None
            self.probe = "modern" if type(result) is dict or code == p.UNSUPPORTED_PROTOCOL_VERSION else "legacy"
        if req is None or type(result) is not dict or result.get("resultType") != "input_required":
            return
        state = result.get("requestState")
        asked = result.get("inputRequests")
        self.rounds.append(
            _Round(rid, req.method, req.target, req.args, state if type(state) is str else None, list(asked) if type(asked) is dict else [])
        )
        del self.rounds[:-256]  # a client that never retries must not grow this forever

    def ended(self, rid: Any) -> None:
        """A request ended without a response (cancelled, its stream ended, answered by an HTTP
        fault); while another request holds the same id, that one stays in flight."""
        if not self._one_of_duplicates(rid):
            self.in_flight.pop(rid, None)

    def _one_of_duplicates(self, rid: Any) -> bool:
        """Count off one of the requests sharing ``rid`` beyond the first, if any is left."""
        dup = self.duplicates.get(rid)
        if not dup:
            return False
        if dup == 1:
            del self.duplicates[rid]
        else:
            self.duplicates[rid] = dup - 1
        return True


# The _meta keys the revision defines under its reserved prefix (a client may send the first four;
# the last two are the server's, but defined all the same).
_DEFINED_META = frozenset({
    p.META_PROTOCOL_VERSION, p.META_CLIENT_INFO, p.META_CLIENT_CAPABILITIES, p.META_LOG_LEVEL,
    p.META_SERVER_INFO, p.META_SUBSCRIPTION_ID,
})
_RESERVED_LABELS = ("modelcontextprotocol", "mcp")


def _reserved(key: str) -> bool:
    """Is ``key``'s prefix reserved for MCP (``io.modelcontextprotocol/``, ``dev.mcp/``, ``com.mcp.tools/``)?"""
    prefix, slash, _ = key.partition("/")
    if not slash:
        return False
    labels = prefix.split(".")
    return len(labels) >= 2 and labels[1] in _RESERVED_LABELS


def _meta_keys(rid: Any, meta: dict[str, Any], message: dict[str, Any]) -> list[Finding]:
    """Reserved-prefix keys the revision does not define, and the W3C trace context formats."""
    from mockmcp.wire.tracecontext import CHECKS as TRACE_CHECKS

    out: list[Finding] = []
    for key, value in meta.items():
        if key in TRACE_CHECKS:
            problem = TRACE_CHECKS[key](value)
            if problem is not None:
                out.append(Finding(f"meta.{key}.format", problem, message, rid))
        elif key not in _DEFINED_META and _reserved(key):
            out.append(Finding("meta.reserved", f"_meta key {key!r} uses a prefix reserved for MCP, and the revision defines no such key (an official extension may; others use their own prefix)", message, rid))
    return out


# ClientCapabilities members that are objects, and their members that are objects too
# (2026-07-28 and 2025-11-25 agree; roots.listChanged is the one boolean).
_CAPABILITY_OBJECTS = {
    "roots": ("listChanged",),
    "sampling": ("context", "tools"),
    "elicitation": ("form", "url"),
    "experimental": (),
    "extensions": (),
}


def _capability_shapes(rid: Any, caps: dict[str, Any], where: str, message: dict[str, Any]) -> list[Finding]:
    out: list[Finding] = []
    for name, members in _CAPABILITY_OBJECTS.items():
        if name not in caps:
            continue
        value = caps[name]
        if type(value) is not dict:
            out.append(Finding("meta.clientCapabilities.shape", f"{where}.{name} must be an object, got {_canon(value)[:60]}", message, rid))
            continue
        for member in members:
            if member not in value:
                continue
            want_bool = name == "roots"
            sub = value[member]
            if (type(sub) is not bool) if want_bool else (type(sub) is not dict):
                shape = "a boolean" if want_bool else "an object"
                out.append(Finding("meta.clientCapabilities.shape", f"{where}.{name}.{member} must be {shape}, got {_canon(sub)[:60]}", message, rid))
        if name in ("experimental", "extensions"):
            for key, sub in value.items():
                if type(sub) is not dict:
                    out.append(Finding("meta.clientCapabilities.shape", f"{where}.{name}[{key!r}] must be an object, got {_canon(sub)[:60]}", message, rid))
    return out


def _initialize_params(rid: Any, params: dict[str, Any], message: dict[str, Any]) -> list[Finding]:
    """A legacy (2025-11-25) initialize: protocolVersion, capabilities and clientInfo are required."""
    out: list[Finding] = []
    version = params.get("protocolVersion", _MISSING)
    if type(version) is not str:
        got = "none" if version is _MISSING else _canon(version)[:60]
        out.append(Finding("initialize.protocolVersion", f"initialize params need a protocolVersion string, got {got}", message, rid))
    info = params.get("clientInfo", _MISSING)
    if type(info) is not dict or type(info.get("name")) is not str or type(info.get("version")) is not str:
        got = "none" if info is _MISSING else _canon(info)[:60]
        out.append(Finding("initialize.clientInfo", f"initialize params need clientInfo with string name and version, got {got}", message, rid))
    caps = params.get("capabilities", _MISSING)
    if type(caps) is not dict:
        got = "none" if caps is _MISSING else _canon(caps)[:60]
        out.append(Finding("initialize.capabilities", f"initialize params need a capabilities object, got {got}", message, rid))
    else:
        out += _capability_shapes(rid, caps, "initialize capabilities", message)
    return out


def _difference(sent: Any, given: str) -> str:
    """Where an echoed requestState first differs from the one the server gave."""
    if type(sent) is not str:
        return f"sent {_canon(sent)[:40]}, a {type(sent).__name__}, for a string of {len(given)} characters"
    i = next((k for k, (a, b) in enumerate(zip(sent, given)) if a != b), min(len(sent), len(given)))
    lo = max(0, i - 8)
    return (
        f"first difference at character {i}: sent ...{sent[lo:i + 8]!r}, given ...{given[lo:i + 8]!r}; "
        f"{len(sent)} characters sent, {len(given)} given"
    )
