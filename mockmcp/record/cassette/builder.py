"""A recording built into a cassette: an ordinary scenario, as plain data.

``build`` writes the scenario in the format's key order: the server's identity,
versions, capabilities and instructions from ``server/discover`` or
``initialize``; the tools, prompts, resources and templates as listed; and one
rule per distinct request (``rules.RuleWriter``). Redaction happens on the
observed values, before anything is built: every secret is learned first (or
was, by the recorder, as the lines passed). ``yamlemit.dump`` writes the
result; the shell owns the file.
"""

from __future__ import annotations

import re
from typing import Any

from mockmcp.record.cassette.recorder import NOT_RECORDED, Exchange, Recorder
from mockmcp.record.cassette.rules import RuleWriter
from mockmcp.record.cassette.shapes import PROMPT_KEYS, RESOURCE_KEYS, SERVER_KEYS, TEMPLATE_KEYS, TOOL_KEYS, json_view, pick
from mockmcp.record.redact import Redactor
from mockmcp.scenario.uritemplates import UriTemplate, compile_uri_template
from mockmcp.wire import protocol as p

_LISTS = {
    p.TOOLS_LIST: ("tools", "tools", "name", TOOL_KEYS),
    p.PROMPTS_LIST: ("prompts", "prompts", "name", PROMPT_KEYS),
    p.RESOURCES_LIST: ("resources", "resources", "uri", RESOURCE_KEYS),
    p.RESOURCE_TEMPLATES_LIST: ("resourceTemplates", "resourceTemplates", "uriTemplate", TEMPLATE_KEYS),
}
_CACHE_BLOCK = {p.TOOLS_LIST: "tools", p.PROMPTS_LIST: "prompts", p.RESOURCES_LIST: "resources",
                p.RESOURCE_TEMPLATES_LIST: "resourceTemplates", p.RESOURCES_READ: "read"}


class Options:
    """How to write the cassette."""

    __slots__ = ("redactor", "keep_timing", "as_modern", "source")

    def __init__(self, redactor: Redactor | None = None, *, keep_timing: bool = False, as_modern: bool = False,
                 source: str = "") -> None:
        self.redactor = redactor if redactor is not None else Redactor()
        self.keep_timing = keep_timing
        self.as_modern = as_modern
        self.source = source


class CassetteBuilder:
    """The scenario of one recording: identity, versions, capabilities, cache hints, definitions,
    and each exchange's rules (``RuleWriter``) placed where the engine looks for them."""

    def __init__(self, rec: Recorder, opts: Options) -> None:
        self.rec = rec
        self.opts = opts
        self.red = opts.redactor
        self.rules = RuleWriter(opts.redactor, keep_timing=opts.keep_timing, as_modern=opts.as_modern)
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
            server.update((k, v) for k, v in (pick(info, SERVER_KEYS) or {}).items() if k != "icons" or v)
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
            for rule in self.rules.rules(ex, braces=rec.braces):
                # a request's own key order (clients keep theirs); repr is C all the way (1 and True
                # stay apart, as in JSON text; 1 and 1.0 are one call, as the matcher sees them)
                key = repr((ex.method, ex.params.get("name"), ex.params.get("uri"), json_view(rule["when"])))
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
                picked = pick(item, keys)
                if picked is None or type(picked.get(ident)) is not str:
                    continue
                if section in ("resources", "resourceTemplates") and type(picked.get("name")) is not str:
                    picked["name"] = picked[ident]
                if "_meta" in picked:
                    picked["_meta"] = self.red.value(picked["_meta"])
                if picked[ident] not in out[section]:
                    out[section][picked[ident]] = picked
        return out

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
                        pattern: UriTemplate | None = compile_uri_template(tmpl["uriTemplate"])
                    except ValueError:
                        pattern = None
                    if pattern is not None and pattern.match(uri) is not None:
                        target = tmpl
                        break
        if target is not None:
            target.setdefault("replies", []).append(rule)
        else:
            methods.setdefault(ex.method, []).append(rule)


def build(rec: Recorder, opts: Options | None = None) -> dict[str, Any]:
    """The cassette of one recording, as scenario data."""
    return CassetteBuilder(rec, opts or Options()).build()


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


__all__ = ["CassetteBuilder", "Options", "build", "without_surrogates"]
