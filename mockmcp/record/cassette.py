"""Cassettes: what a real server was seen doing, turned into an ordinary scenario.

``Recorder`` is fed every line that passed between a client and a real server
(``client_line`` / ``server_line``, with the shell's clock) and pairs them up:
each client request with the server's progress, log messages, server-to-client
requests (the legacy era's elicitation and sampling), garbage lines and final
answer. ``build`` then writes the scenario as plain data (dicts and lists in the
scenario format's key order): the server's identity, versions, capabilities and
instructions from ``server/discover`` or ``initialize``; the tools, prompts,
resources and templates as listed; and one rule per distinct request, matching
its exact arguments (or params) and answering with the observed steps in order.
``merge`` adds a new recording to an existing cassette without changing what was
there (``new_episodes``). ``yamlemit.dump`` writes the result; the shell owns the
file. Sans-I/O: the clock and the bytes are handed in.

Redaction happens here, on the observed values, before anything is built: a
``Redactor`` replaces secrets in arguments, results and ``_meta``; a redacted
argument is matched by ``{$present: true}`` so replay still answers it.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterator

from mockmcp.wire import errors
from mockmcp.wire import jsonrpc
from mockmcp.scenario.model import base as model
from mockmcp.wire import protocol as p
from mockmcp.scenario.definitions import compile_uri_template
from mockmcp.record.redact import PLACEHOLDER, Redactor

# The keys each model class accepts (anything else a server lists is dropped: the loader is strict).
_TOOL_KEYS = ("name", "title", "description", "inputSchema", "outputSchema", "annotations", "icons", "_meta")
_PROMPT_KEYS = ("name", "title", "description", "arguments", "icons", "_meta")
_ARGUMENT_KEYS = ("name", "title", "description", "required")
_RESOURCE_KEYS = ("uri", "name", "title", "description", "mimeType", "size", "annotations", "icons", "_meta")
_TEMPLATE_KEYS = ("uriTemplate", "name", "title", "description", "mimeType", "annotations", "icons", "_meta")
_ICON_KEYS = ("src", "mimeType", "sizes", "theme")
_SERVER_KEYS = ("name", "title", "version", "description", "websiteUrl", "icons")
_LISTS = {
    p.TOOLS_LIST: ("tools", "tools", "name", _TOOL_KEYS),
    p.PROMPTS_LIST: ("prompts", "prompts", "name", _PROMPT_KEYS),
    p.RESOURCES_LIST: ("resources", "resources", "uri", _RESOURCE_KEYS),
    p.RESOURCE_TEMPLATES_LIST: ("resourceTemplates", "resourceTemplates", "uriTemplate", _TEMPLATE_KEYS),
}
_CACHE_BLOCK = {p.TOOLS_LIST: "tools", p.PROMPTS_LIST: "prompts", p.RESOURCES_LIST: "resources",
                p.RESOURCE_TEMPLATES_LIST: "resourceTemplates", p.RESOURCES_READ: "read"}
# Requests that give no rule: the protocol's plumbing (the identity and lists are recorded as the
# scenario's server, capabilities and definitions; the connection's state is the mock's own).
NOT_RECORDED = frozenset({p.DISCOVER, p.INITIALIZE, "ping", p.SUBSCRIPTIONS_LISTEN, *_LISTS,
                          p.LEGACY_SET_LEVEL, p.LEGACY_SUBSCRIBE, p.LEGACY_UNSUBSCRIBE})
_LOG_LEVELS = frozenset(p.LOG_LEVELS)
_ASKABLE = frozenset({p.SAMPLE, p.ELICIT, p.LIST_ROOTS})  # what a legacy `request` step may send
_MODERN_RESULT_KEYS = ("resultType", "ttlMs", "cacheScope")
MAX_RAW = 64 * 1024  # a garbage line is kept up to this many characters
# What one exchange keeps of what the server sends while it is in flight (progress, logs, requests
# to the client, garbage lines): the first MAX_EVENTS of them, within MAX_EVENT_BYTES of their lines.
# The rest is passed on but not recorded (counted in ``Exchange.dropped``), so a server that floods
# a call costs the recorder a bounded amount of memory whatever it sends (docs/record.md).
MAX_EVENTS = 1000
MAX_EVENT_BYTES = 4 * 1024 * 1024


def _id_key(rid: Any) -> str:
    return json.dumps(rid)


def _decode(line: bytes) -> Any:
    """A line as JSON, through the limits every decoded message keeps (``jsonrpc.parse``: nesting,
    numbers, UTF-8), so a recorded value can be redacted, built and emitted without surprise."""
    try:
        return jsonrpc.parse(line)
    except errors.ClientError:
        return _GARBAGE


_GARBAGE = object()


class Exchange:
    """One client request and what the server did about it, in order."""

    __slots__ = ("id", "method", "params", "t0", "events", "final", "round", "cancelled", "kept_bytes", "dropped")

    def __init__(self, rid: Any, method: str, params: dict[str, Any], t0: float, round: int) -> None:
        self.id = rid
        self.method = method
        self.params = params
        self.t0 = t0
        self.events: list[tuple[float, str, Any]] = []  # (time, progress|log|raw|request|answer, value)
        self.final: tuple[float, str, Any] | None = None  # (time, result|error, value)
        self.round = round
        self.cancelled = False
        self.kept_bytes = 0  # the size of the lines behind ``events`` (bounded by MAX_EVENT_BYTES)
        self.dropped = 0  # what the server sent during it past the bounds (passed on, not recorded)

    @property
    def recorded(self) -> bool:
        """Does the cassette give this exchange a rule (so keep what the server sends during it)?"""
        return self.method not in NOT_RECORDED and not self.method.startswith("notifications/")


class Recorder:
    """Pairs the lines of one session into exchanges (fed by the shell, in arrival order).

    Given the ``Redactor`` the cassette will be built with, it learns the secrets as the lines
    arrive (what ``build`` would otherwise walk every value for when the client has left, while
    the client waits: the Python client sends SIGTERM after 2 s)."""

    def __init__(self, redactor: Redactor | None = None) -> None:
        self.redactor = redactor
        self.exchanges: list[Exchange] = []
        self._open: dict[str, Exchange] = {}
        self._tokens: dict[str, Exchange] = {}
        self._server_requests: dict[str, Exchange] = {}
        self._state_rounds: dict[str, int] = {}
        self.stray = 0  # garbage lines with no request in flight (counted: no cassette holds them)
        # Did the server send "{{" (or any \u escape, which may spell it)? Steps render templates,
        # so only then must the built steps write it as a literal.
        self.braces = False
        # Did either side send a \u escape (the only way JSON text spells a lone surrogate)?
        self.escapes = False

    # ------------------------------------------------------------ what the client sent

    def client_line(self, line: bytes, t: float) -> None:
        if not self.escapes and b"\\u" in line:
            self.escapes = True
        msg = _decode(line)
        if type(msg) is not dict:
            return  # the client's own garbage: the server answers it, nothing to replay
        method = msg.get("method")
        rid = msg.get("id")
        if type(method) is str:
            params = msg.get("params")
            params = params if type(params) is dict else {}
            if rid is None:
                if method == p.CANCELLED:
                    ex = self._open.get(_id_key(params.get("requestId")))
                    if ex is not None:
                        ex.cancelled = True
                return
            state = params.get("requestState")
            round = 1
            if type(state) is str and state in self._state_rounds:
                round = self._state_rounds[state] + 1
            elif params.get("inputResponses"):
                round = 2
            ex = Exchange(rid, method, params, t, round)
            self.exchanges.append(ex)
            if self.redactor is not None and method not in NOT_RECORDED:
                self.redactor.learn(params)  # definitions aside (a schema's "password" property is no secret)
            self._open[_id_key(rid)] = ex
            meta = params.get("_meta")
            if type(meta) is dict and meta.get(p.META_PROGRESS_TOKEN) is not None:
                self._tokens[_id_key(meta[p.META_PROGRESS_TOKEN])] = ex
            return
        if rid is not None and ("result" in msg or "error" in msg):
            ex = self._server_requests.pop(_id_key(rid), None)
            if ex is not None:
                ex.events.append((t, "answer", msg))
                self._learn(ex, msg)

    # ------------------------------------------------------------ what the server sent

    def server_line(self, line: bytes, t: float) -> None:
        if not self.braces and (b"{{" in line or b"\\u" in line):
            self.braces = True
        if not self.escapes and b"\\u" in line:
            self.escapes = True
        msg = _decode(line)
        if type(msg) is not dict:
            ex = self._current()
            if ex is None:
                self.stray += 1
            elif self._keep(ex, len(line)):
                # byte for byte: a rawBytes step holds one byte per character
                ex.events.append((t, "raw", line.rstrip(b"\r\n")[:MAX_RAW].decode("latin-1")))
            return
        method = msg.get("method")
        rid = msg.get("id")
        if type(method) is not str:
            if rid is not None and ("result" in msg or "error" in msg):
                ex = self._open.pop(_id_key(rid), None)
                if ex is None:
                    return
                if "error" in msg:
                    ex.final = (t, "error", msg["error"])
                else:
                    result = msg["result"]
                    ex.final = (t, "result", result)
                    if type(result) is dict and type(result.get("requestState")) is str:
                        self._state_rounds[result["requestState"]] = ex.round
                self._learn(ex, ex.final[2])
            return
        params = msg.get("params")
        params = params if type(params) is dict else {}
        if rid is not None:  # a server-to-client request (legacy era): part of the request in flight
            ex = self._current(latest=True)
            if ex is not None and method != "ping" and self._keep(ex, len(line)):
                ex.events.append((t, "request", msg))
                self._learn(ex, msg)
                self._server_requests[_id_key(rid)] = ex
            return
        if method == p.PROGRESS:
            ex = self._tokens.get(_id_key(params.get("progressToken")))
            if ex is None or ex.final is not None:
                return
            spec = {k: params[k] for k in ("progress", "total") if params.get(k) is not None}
            if type(params.get("message")) is str:  # (a progress step's message is text)
                spec["message"] = params["message"]
            if type(spec.get("progress")) in (int, float) and type(spec.get("total", 0)) in (int, float) \
                    and self._keep(ex, len(line)):
                ex.events.append((t, "progress", spec))
                self._learn(ex, spec)
        elif method == p.MESSAGE:
            ex = self._current(latest=True)
            level = params.get("level")
            if ex is not None and type(level) is str and level in _LOG_LEVELS and "data" in params \
                    and self._keep(ex, len(line)):
                spec = {"level": params["level"], "data": params["data"]}
                if type(params.get("logger")) is str:
                    spec["logger"] = params["logger"]
                ex.events.append((t, "log", spec))
                self._learn(ex, spec)

    def _keep(self, ex: Exchange, size: int) -> bool:
        """Keep one more thing the server sent during ``ex``? Only what its rule will hold, within the bounds."""
        if not ex.recorded:
            return False
        if len(ex.events) >= MAX_EVENTS or ex.kept_bytes + size > MAX_EVENT_BYTES:
            ex.dropped += 1
            return False
        ex.kept_bytes += size
        return True

    def overflowed(self) -> list[Exchange]:
        """The exchanges that got more from the server than the bounds keep (their rules hold the first part)."""
        return [ex for ex in self.exchanges if ex.dropped]

    def _learn(self, ex: Exchange, value: Any) -> None:
        if self.redactor is not None and ex.method not in NOT_RECORDED:
            self.redactor.learn(value)

    @property
    def in_flight(self) -> int:
        """Requests not answered yet (subscription streams aside): what a disconnect would cut off."""
        return sum(1 for ex in self._open.values() if ex.method != p.SUBSCRIPTIONS_LISTEN and not ex.cancelled)

    def _current(self, latest: bool = False) -> Exchange | None:
        """The request in flight that an unattributed line belongs to (subscription streams aside)."""
        found = None
        for ex in self._open.values():
            if ex.method == p.SUBSCRIPTIONS_LISTEN:
                continue
            found = ex
            if not latest:
                break
        return found


# ---------------------------------------------------------------- building the scenario


class Options:
    """How to write the cassette."""

    __slots__ = ("redactor", "keep_timing", "as_modern", "source")

    def __init__(self, redactor: Redactor | None = None, *, keep_timing: bool = False, as_modern: bool = False,
                 source: str = "") -> None:
        self.redactor = redactor if redactor is not None else Redactor()
        self.keep_timing = keep_timing
        self.as_modern = as_modern
        self.source = source


def _pick(item: Any, keys: tuple[str, ...]) -> dict[str, Any] | None:
    if type(item) is not dict:
        return None
    out = {k: item[k] for k in keys if k in item and item[k] is not None}
    if type(out.get("icons")) is list:
        out["icons"] = [{k: i[k] for k in _ICON_KEYS if k in i} for i in out["icons"] if type(i) is dict and "src" in i]
    if type(out.get("arguments")) is list:
        out["arguments"] = [{k: a[k] for k in _ARGUMENT_KEYS if k in a} for a in out["arguments"]
                            if type(a) is dict and type(a.get("name")) is str]
    return out


def _without_meta(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if k not in ("_meta", "requestState")}


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _clean_result(result: Any, drop_cache: bool) -> Any:
    """A recorded result as a ``result`` step holds it: the envelope's own fields left to the mock."""
    if type(result) is not dict:
        return result
    drop = _MODERN_RESULT_KEYS if drop_cache else ("resultType",)
    out = {k: v for k, v in result.items() if k not in drop}
    meta = out.get("_meta")
    if type(meta) is dict:
        meta = {k: v for k, v in meta.items() if k != p.META_SERVER_INFO}
        if meta:
            out["_meta"] = meta
        else:
            del out["_meta"]
    return out


# What a `result`, `inputRequired` or `request` step takes (check.py refuses the rest, so a recorded
# value outside these shapes is written as the `raw` message it was): the same rules as check.py's
# result and input-request checks, which tests/record/test_record_edges.py holds them to.
_CONTENT_REQUIRED = {"text": ("text",), "image": ("data", "mimeType"), "audio": ("data", "mimeType"),
                     "resource_link": ("uri", "name"), "resource": ("resource",)}
_INPUT_PARAMS_REQUIRED = {p.ELICIT: ("message",), p.SAMPLE: ("messages", "maxTokens"), p.LIST_ROOTS: ()}


def _block_ok(block: Any) -> bool:
    if type(block) is not dict:
        return False
    kind = block.get("type")
    need = _CONTENT_REQUIRED.get(kind) if type(kind) is str else None
    return need is not None and all(k in block for k in need)


def _result_ok(method: str, result: dict[str, Any]) -> bool:
    """Would a `result` step of ``method`` take ``result`` (resultType and cache hints already dropped)?"""
    if method == p.TOOLS_CALL:
        content = result.get("content")
        return type(content) is list and all(_block_ok(b) for b in content) \
            and ("isError" not in result or type(result["isError"]) is bool)
    if method == p.PROMPTS_GET:
        messages = result.get("messages")
        return type(messages) is list and all(
            type(m) is dict and m.get("role") in ("user", "assistant") and _block_ok(m.get("content")) for m in messages)
    if method == p.RESOURCES_READ:
        contents = result.get("contents")
        return type(contents) is list and all(
            type(c) is dict and "uri" in c and ("text" in c or "blob" in c) for c in contents)
    return True


def _input_request_ok(req: Any) -> bool:
    """Would an `inputRequired` (or `request`) step take this request to the client?"""
    if type(req) is not dict or type(req.get("method")) is not str or req["method"] not in _INPUT_PARAMS_REQUIRED:
        return False
    params = req.get("params", {})
    if type(params) is not dict or not all(k in params for k in _INPUT_PARAMS_REQUIRED[req["method"]]):
        return False
    if req["method"] == p.ELICIT:
        mode = params.get("mode", "form")
        if mode == "url":
            return "url" in params
        if mode == "form":
            return type(params.get("requestedSchema")) is dict
    return True


_LITERAL_BRACES = "{{ '{{' }}"  # a template whose value is the text "{{"


def _literal(value: Any) -> Any:
    """Recorded values as steps must hold them: steps render ``{{ }}`` templates, so every "{{"
    the server sent is written as a template of the literal (a replay sends the text back)."""
    t = type(value)
    if t is str:
        return value.replace("{{", _LITERAL_BRACES) if "{{" in value else value
    if t is dict:
        return {_literal(k): _literal(v) for k, v in value.items()}
    if t is list:
        return [_literal(v) for v in value]
    return value


def _duration(seconds: float) -> str:
    return f"{max(0, round(seconds * 1000))}ms"


def _when_value(original: Any, redacted: Any) -> Any:
    """What a rule matches: the redacted value, except where redaction changed it (then: present)."""
    if original == redacted:
        return redacted
    if type(original) is dict and type(redacted) is dict and original.keys() == redacted.keys():
        return {k: _when_value(original[k], redacted[k]) for k in original}
    if type(original) is list and type(redacted) is list and len(original) == len(redacted):
        return [_when_value(a, b) for a, b in zip(original, redacted)]
    if type(original) is str:
        return {"$type": "string"}
    return {"$present": True}


class _Builder:
    def __init__(self, rec: Recorder, opts: Options) -> None:
        self.rec = rec
        self.opts = opts
        self.red = opts.redactor
        self.modern_seen = False
        self.legacy_seen = False
        if rec.redactor is self.red:
            return  # learned while the lines arrived
        for ex in rec.exchanges:  # every secret is known before anything is built
            if ex.method in NOT_RECORDED:
                continue  # definitions (a schema's "password" property is no secret)
            self.red.learn(ex.params)
            if ex.final is not None:
                self.red.learn(ex.final[2])
            for _, kind, value in ex.events:
                if kind != "raw":
                    self.red.learn(value)

    def build(self) -> dict[str, Any]:
        rec, opts = self.rec, self.opts
        discover = self._first_result(p.DISCOVER)
        initialize = self._first_result(p.INITIALIZE)
        self.modern_seen = discover is not None
        self.legacy_seen = initialize is not None
        out: dict[str, Any] = {"mockmcp": 1}
        source = f" from {opts.source}" if opts.source else ""
        out["description"] = f"Recorded{source} by mockmcp record"
        server: dict[str, Any] = {}
        info = None
        if discover is not None:
            meta = discover.get("_meta")
            info = meta.get(p.META_SERVER_INFO) if type(meta) is dict else None
        if info is None and initialize is not None:
            info = initialize.get("serverInfo")
        if info is None:  # no discovery seen: results carry the identity too
            info = self._result_server_info()
        if type(info) is dict:
            server.update((k, v) for k, v in (_pick(info, _SERVER_KEYS) or {}).items() if k != "icons" or v)
        source_result = discover if discover is not None else initialize
        if source_result is not None and type(source_result.get("instructions")) is str:
            server["instructions"] = source_result["instructions"]
        if server:
            out["server"] = self.red.value(server)
        protocol: dict[str, Any] = {}
        if discover is not None and type(discover.get("supportedVersions")) is list and not opts.as_modern:
            protocol["versions"] = [v for v in discover["supportedVersions"] if type(v) is str]
        elif opts.as_modern:
            protocol["versions"] = [p.LATEST_VERSION]
        era = "modern"
        if not opts.as_modern and initialize is not None:
            era = "dual" if discover is not None else "legacy"
        if era != "modern":
            protocol["era"] = era
        # A replay answers what was recorded; any other request fails loudly with the near miss
        # (only the protocol's plumbing keeps its built-in answer: protocol.BUILTIN_WHEN_UNMATCHED).
        protocol["unmatched"] = "fail"
        if protocol:
            out["protocol"] = protocol
        caps = (source_result or {}).get("capabilities")
        if type(caps) is dict:
            out["capabilities"] = self.red.value(caps)
        cache = self._cache(discover)
        if cache:
            out["cache"] = cache
        primitives = self._primitives()
        methods: dict[str, list[dict[str, Any]]] = {}
        seen: set[str] = set()
        for ex in rec.exchanges:
            if ex.method in NOT_RECORDED or ex.method.startswith("notifications/"):
                continue
            if ex.final is None and not ex.cancelled:
                continue  # cut off by the end of the session: nothing was seen to replay
            for rule in self._rules(ex):
                if rec.braces:
                    rule["steps"] = _literal(rule["steps"])
                # a request's own key order (clients keep theirs); repr is C all the way (1, 1.0 and
                # True stay apart, as in JSON text)
                key = repr((ex.method, ex.params.get("name"), ex.params.get("uri"), rule["when"]))
                if key in seen:
                    continue
                seen.add(key)
                self._place(ex, rule, primitives, methods)
        for section in ("tools", "prompts", "resources", "resourceTemplates"):
            # (a primitive listed but never called keeps no replies: protocol.unmatched: fail
            # makes a call of it an unrecorded request, with the near miss, like any other)
            items = list(primitives[section].values())
            if items:
                out[section] = items
        if methods:
            out["methods"] = [{"method": m, "replies": rules} for m, rules in methods.items()]
        return out

    # ------------------------------------------------------------ what was listed

    def _first_result(self, method: str) -> dict[str, Any] | None:
        for ex in self.rec.exchanges:
            if ex.method == method and ex.final is not None and ex.final[1] == "result" and type(ex.final[2]) is dict:
                return ex.final[2]
        return None

    def _result_server_info(self) -> Any:
        for ex in self.rec.exchanges:
            if ex.final is not None and type(ex.final[2]) is dict and type(ex.final[2].get("_meta")) is dict:
                info = ex.final[2]["_meta"].get(p.META_SERVER_INFO)
                if type(info) is dict:
                    return info
        return None

    def _cache(self, discover: dict[str, Any] | None) -> dict[str, Any]:
        if self.opts.as_modern and not self.modern_seen:
            return {}
        cache: dict[str, Any] = {}
        if discover is not None:
            if type(discover.get("ttlMs")) is int and discover["ttlMs"] >= 0:
                cache["ttlMs"] = discover["ttlMs"]
            if discover.get("cacheScope") in ("public", "private"):
                cache["cacheScope"] = discover["cacheScope"]
        for ex in self.rec.exchanges:
            block = _CACHE_BLOCK.get(ex.method)
            if block is None or block in cache or ex.final is None or type(ex.final[2]) is not dict:
                continue
            hints = {k: ex.final[2][k] for k in ("ttlMs", "cacheScope") if k in ex.final[2]}
            if type(hints.get("ttlMs")) is not int or hints.get("cacheScope") not in (None, "public", "private"):
                continue
            if hints and any(cache.get(k) != v for k, v in hints.items()):
                cache[block] = hints
        return cache

    def _primitives(self) -> dict[str, dict[str, dict[str, Any]]]:
        out: dict[str, dict[str, dict[str, Any]]] = {s: {} for s, *_ in _LISTS.values()}
        for ex in self.rec.exchanges:
            spec = _LISTS.get(ex.method)
            if spec is None or ex.final is None or ex.final[1] != "result" or type(ex.final[2]) is not dict:
                continue
            section, key, ident, keys = spec
            items = ex.final[2].get(key)
            for item in items if type(items) is list else ():
                picked = _pick(item, keys)
                if picked is None or type(picked.get(ident)) is not str:
                    continue
                if section in ("resources", "resourceTemplates") and type(picked.get("name")) is not str:
                    picked["name"] = picked[ident]
                if "_meta" in picked:
                    picked["_meta"] = self.red.value(picked["_meta"])
                if picked[ident] not in out[section]:
                    out[section][picked[ident]] = picked
        return out

    # ------------------------------------------------------------ what was asked

    def _rules(self, ex: Exchange) -> Iterator[dict[str, Any]]:
        """The rules one exchange gives: one, or one per round when legacy requests become MRTR rounds."""
        when = self._when(ex)
        asked = ex.final is not None and type(ex.final[2]) is dict and ex.final[2].get("resultType") == "input_required"
        if ex.round > 1 or asked:
            when["round"] = ex.round  # a first round that asked must not answer the retries
            responses = ex.params.get("inputResponses")
            if type(responses) is dict:
                red = self.red.value(responses)
                when["inputResponses"] = _when_value(responses, red)
        events = ex.events
        asks = [i for i, e in enumerate(events) if e[1] == "request"]
        if self.opts.as_modern and asks and ex.method in p.INPUT_REQUIRED_METHODS:
            # The legacy round trips become input_required rounds: round n asks for the n-th request.
            start = 0
            t_prev = ex.t0
            for n, i in enumerate(asks, start=1):
                steps, t_prev = self._steps(ex, events[start:i], t_prev)
                msg = events[i][2]
                steps.append({"inputRequired": {"inputRequests": {f"input-{n}": self.red.value(
                    {"method": msg["method"], "params": msg.get("params", {})})}}})
                rule_when = dict(when, round=n)
                if n > 1:
                    rule_when["inputResponses"] = self._answer(ex, asks[n - 2], n - 1)
                yield {"when": rule_when, "steps": steps}
                start = i + 1
            steps, _ = self._steps(ex, events[start:], t_prev)
            steps.extend(self._final(ex, t_prev))
            last = dict(when, round=len(asks) + 1, inputResponses=self._answer(ex, asks[-1], len(asks)))
            yield {"when": last, "steps": steps}
            return
        steps, t_prev = self._steps(ex, events, ex.t0)
        steps.extend(self._final(ex, t_prev))
        yield {"when": when, "steps": steps}

    def _answer(self, ex: Exchange, ask: int, n: int) -> dict[str, Any]:
        asked = ex.events[ask][2]
        for _, kind, msg in ex.events[ask:]:
            if kind == "answer" and msg.get("id") == asked.get("id") and type(msg.get("result")) is dict:
                red = self.red.value(msg["result"])
                return {f"input-{n}": _when_value(msg["result"], red)}
        return {f"input-{n}": {"$present": True}}

    def _when(self, ex: Exchange) -> dict[str, Any]:
        params = ex.params
        if ex.method in (p.TOOLS_CALL, p.PROMPTS_GET):
            args = params.get("arguments")
            args = args if type(args) is dict else {}
            return {"arguments": _when_value(args, self.red.value(args)), "exactArguments": True}
        if ex.method == p.RESOURCES_READ:
            uri = params.get("uri")
            return {"params": {"uri": _when_value(uri, self.red.value({"uri": uri})["uri"])}}
        rest = {k: v for k, v in _without_meta(params).items() if k != "inputResponses"}
        return {"params": _when_value(rest, self.red.value(rest))} if rest else {}

    def _steps(self, ex: Exchange, events: list[tuple[float, str, Any]], t_prev: float) -> tuple[list[dict[str, Any]], float]:
        steps: list[dict[str, Any]] = []
        red = self.red
        for t, kind, value in events:
            step: dict[str, Any] | None = None
            if kind == "progress":
                spec = {k: value[k] for k in ("progress", "total", "message") if value.get(k) is not None}
                if type(spec.get("progress")) in (int, float) and type(spec.get("total", 0)) in (int, float):
                    step = {"progress": red.value(spec)}
            elif kind == "log":
                if value.get("level") in _LOG_LEVELS and "data" in value:
                    spec = {"level": value["level"], "data": value["data"]}
                    if type(value.get("logger")) is str:
                        spec["logger"] = value["logger"]
                    step = {"log": red.value(spec)}
            elif kind == "raw":
                step = {"rawBytes": red.text(value) + "\n"}
            elif kind == "request":
                if self.opts.as_modern:
                    continue  # the modern era has no server-to-client requests (only rounds, above)
                step = self._request_step(ex, value)
            if step is None:
                continue
            if self.opts.keep_timing and t - t_prev >= 0.001:
                steps.append({"sleep": _duration(t - t_prev)})
            t_prev = max(t_prev, t)
            steps.append(step)
        return steps, t_prev

    def _request_step(self, ex: Exchange, msg: dict[str, Any]) -> dict[str, Any]:
        """A legacy server-to-client request as a ``request`` step: the replay sends it, waits for
        the client's answer before the later steps, and compares it with the recorded answer."""
        method, params = msg.get("method"), msg.get("params", {})
        if method not in _ASKABLE or type(params) is not dict or not _input_request_ok(msg):
            return {"raw": self.red.value(msg)}  # nothing the format can ask: sent as it was, not waited for
        spec: dict[str, Any] = {"method": method}
        if params:
            spec["params"] = self.red.value(params)
        for _, kind, answer in ex.events:
            if kind == "answer" and answer.get("id") == msg.get("id"):
                got = {"error": answer["error"]} if "error" in answer else {"result": answer.get("result")}
                spec["expect"] = _when_value(got, self.red.value(got))
                break
        return {"request": spec}

    def _final(self, ex: Exchange, t_prev: float) -> list[dict[str, Any]]:
        if ex.final is None:
            return [{"hang": True}]
        t, kind, value = ex.final
        steps: list[dict[str, Any]] = []
        if self.opts.keep_timing and t - t_prev >= 0.001:
            steps.append({"sleep": _duration(t - t_prev)})
        if kind == "error":
            if type(value) is not dict or type(value.get("code")) is not int:
                steps += [{"raw": self.red.value({"jsonrpc": "2.0", "id": ex.id, "error": value})}, {"hang": True}]
                return steps
            spec: dict[str, Any] = {"code": value["code"]}
            if type(value.get("message")) is str:
                spec["message"] = value["message"]
            if "data" in value:
                spec["data"] = value["data"]
            steps.append({"error": self.red.value(spec)})
            return steps
        if type(value) is not dict:
            steps += [self._raw_result(ex, value), {"hang": True}]
            return steps
        if value.get("resultType") == "input_required":
            requests = value.get("inputRequests")
            if ex.method not in p.INPUT_REQUIRED_METHODS or (type(requests) is dict and not all(
                    type(k) is str and _input_request_ok(r) for k, r in requests.items())):
                steps += [self._raw_result(ex, value), {"hang": True}]  # no inputRequired step can say it
                return steps
            spec = {"inputRequests": self.red.value(requests) if type(requests) is dict else {}}
            if not spec["inputRequests"]:
                spec["requestState"] = True
            steps.append({"inputRequired": spec})
            return steps
        cleaned = _clean_result(value, drop_cache=True)
        if _result_ok(ex.method, cleaned):
            steps.append({"result": self.red.value(cleaned)})
        else:
            steps += [self._raw_result(ex, value), {"hang": True}]
        return steps

    def _raw_result(self, ex: Exchange, value: Any) -> dict[str, Any]:
        """A result no step of the format takes, as the message the server sent (a ``raw`` step;
        a ``hang`` follows it, since a reply ends with a final step and the answer is out)."""
        return {"raw": self.red.value({"jsonrpc": "2.0", "id": ex.id, "result": value})}

    def _place(self, ex: Exchange, rule: dict[str, Any], prims: dict[str, dict[str, dict[str, Any]]],
               methods: dict[str, list[dict[str, Any]]]) -> None:
        """Put a rule where the engine looks for it: the tool, prompt, resource or template, else ``methods``."""
        name, uri = ex.params.get("name"), ex.params.get("uri")
        target: dict[str, Any] | None = None
        if ex.method == p.TOOLS_CALL and type(name) is str:
            target = prims["tools"].setdefault(name, {"name": name})
        elif ex.method == p.PROMPTS_GET and type(name) is str:
            target = prims["prompts"].setdefault(name, {"name": name})
        elif ex.method == p.RESOURCES_READ and type(uri) is str:
            target = prims["resources"].get(uri)
            if target is None:
                for tmpl in prims["resourceTemplates"].values():
                    try:
                        pattern: re.Pattern[str] | None = compile_uri_template(tmpl["uriTemplate"])
                    except (ValueError, re.error):
                        pattern = None
                    if pattern is not None and pattern.match(uri):
                        target = tmpl
                        break
        if target is not None:
            target.setdefault("replies", []).append(rule)
        else:
            methods.setdefault(ex.method, []).append(rule)


def build(rec: Recorder, opts: Options | None = None) -> dict[str, Any]:
    """The cassette of one recording, as scenario data."""
    return _Builder(rec, opts or Options()).build()


_SURROGATE = re.compile("[\ud800-\udfff]")


def without_surrogates(value: Any) -> tuple[Any, int]:
    """``value`` with every lone surrogate (JSON text may escape one, ``"\\ud800"``; no YAML file
    can hold one) replaced by U+FFFD, and how many strings changed."""
    count = 0

    def walk(v: Any) -> Any:
        nonlocal count
        t = type(v)
        if t is str:
            if _SURROGATE.search(v) is None:
                return v
            count += 1
            return _SURROGATE.sub("\ufffd", v)
        if t is dict:
            return {walk(k): walk(x) for k, x in v.items()}
        if t is list:
            return [walk(x) for x in v]
        return v

    out = walk(value)
    return out, count


# ---------------------------------------------------------------- new episodes


def _rule_keys(rules: Any) -> set[str]:
    return {_canonical(r.get("when", {})) for r in rules if type(r) is dict} if type(rules) is list else set()


def merge(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """``old`` with what ``new`` adds: primitives not listed before, rules for requests not recorded before.

    Nothing already in ``old`` changes (its identity, definitions and rules are kept as written)."""
    out = dict(old)
    for section, ident in (("tools", "name"), ("prompts", "name"), ("resources", "uri"), ("resourceTemplates", "uriTemplate")):
        items = [dict(i) if type(i) is dict else i for i in out.get(section) or []]
        index = {i.get(ident): i for i in items if type(i) is dict}
        for item in new.get(section) or []:
            have = index.get(item.get(ident))
            if have is None:
                items.append(item)
                index[item.get(ident)] = item
                continue
            known = _rule_keys(have.get("replies"))
            added = [r for r in item.get("replies") or [] if _canonical(r.get("when", {})) not in known]
            if added:
                have["replies"] = list(have.get("replies") or []) + added
        if items:
            out[section] = items
    overrides = [dict(m) if type(m) is dict else m for m in out.get("methods") or []]
    by_method = {m.get("method"): m for m in overrides if type(m) is dict}
    for m in new.get("methods") or []:
        have = by_method.get(m["method"])
        if have is None:
            overrides.append(m)
            by_method[m["method"]] = m
            continue
        known = _rule_keys(have.get("replies"))
        added = [r for r in m.get("replies") or [] if _canonical(r.get("when", {})) not in known]
        if added:
            have["replies"] = list(have.get("replies") or []) + added
    if overrides:
        out["methods"] = overrides
    return out


def request_key(method: str, params: dict[str, Any]) -> str:
    """What identifies a request when deciding whether a cassette has it (its first round)."""
    if method in (p.TOOLS_CALL, p.PROMPTS_GET):
        args = params.get("arguments")
        core: Any = {"name": params.get("name"), "arguments": args if type(args) is dict else {}}
    elif method == p.RESOURCES_READ:
        core = {"uri": params.get("uri")}
    else:
        core = {k: v for k, v in params.items() if k not in ("_meta", "requestState", "inputResponses")}
    return _canonical([method, core])


def recorded_keys(scenario: model.Scenario) -> set[str]:
    """The ``request_key`` of every request a cassette answers (rules on exact values only)."""
    keys: set[str] = set()

    def first_rounds(rules: list[model.Rule]) -> Iterator[model.Match]:
        for rule in rules:
            if rule.when.round in (None, 1) and rule.when.inputResponses is None:
                yield rule.when

    for tool in scenario.tools:
        for when in first_rounds(tool.replies):
            if when.arguments is not None and when.exactArguments:
                keys.add(request_key(p.TOOLS_CALL, {"name": tool.name, "arguments": when.arguments}))
    for prompt in scenario.prompts:
        for when in first_rounds(prompt.replies):
            if when.arguments is not None and when.exactArguments:
                keys.add(request_key(p.PROMPTS_GET, {"name": prompt.name, "arguments": when.arguments}))
    for reads in (*(r.replies for r in scenario.resources), *(t.replies for t in scenario.resourceTemplates)):
        for when in first_rounds(reads):
            if when.params is not None and type(when.params.get("uri")) is str:
                keys.add(request_key(p.RESOURCES_READ, {"uri": when.params["uri"]}))
    for override in scenario.methods:
        for when in first_rounds(override.replies):
            keys.add(request_key(override.method, when.params or {}))
    return keys


__all__ = ["Recorder", "Options", "build", "without_surrogates", "merge", "request_key", "recorded_keys", "NOT_RECORDED", "PLACEHOLDER", "MAX_RAW"]
