"""The sans-I/O cassette pieces: the YAML emitter, the recorder's pairing, redaction, merging.

The emitter is a second way of producing YAML next to the loaders' way of reading it,
so it is fuzzed: any JSON-like value it writes must read back equal through the plain
loader (PyYAML, core schema) and, when the fast path takes the file, through it too.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings, strategies as st

from mockmcp.record import cassette
from mockmcp.scenario import quickload
from mockmcp.record import yamlemit
from mockmcp.scenario.loader import load
from mockmcp.scenario.plainload import parse_yaml
from mockmcp.record.redact import PLACEHOLDER, Redactor
from support.process import mockmcp_prefix

# Text without lone surrogates (JSON text decoded from UTF-8 never has them).
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-10**20, 10**20),
    st.floats(allow_nan=False, allow_infinity=False), TEXT,
    st.sampled_from(["true", "null", "yes", "No", "~", "1.5", "0x1f", "- a", "a: b", "#c", "'q'", "", " x", "x ",
                     "@a", "%x", "\u2028", "\x85", "\ufeff", "a\nb", "1e3", ".inf", "=", "<<"]),
)
KEYS = st.one_of(TEXT, st.sampled_from(["n", "y", "true", "on", "-", "? x", "a:b", "_meta", "$regex", ""]))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(KEYS, inner, max_size=4)), max_leaves=25)


# Strings a YAML writer gets wrong: indicators, quotes, colons, comments, surrounding spaces,
# line breaks, unicode, words and numbers YAML 1.1 or 1.2 reads as something else, the empty
# string, and long ones (quoted past 200 characters).
AWKWARD = st.one_of(
    st.sampled_from(["yes", "no", "Yes", "NO", "on", "Off", "y", "n", "null", "Null", "NULL", "~", "true", "False",
                     "1", "-1", "+1", "0", "007", "1.0", "1e5", "1_000", "0o17", "0x1F", "0b1", ".5", "1:30",
                     "2001-12-14", "2001-12-14T21:59:43Z", ".inf", "-.Inf", ".nan", "NaN", "inf", "", " ", "  lead",
                     "trail ", "a: b", "a:b", "key:", "- item", "-", "? q", "#c", "a #c", "'q'", '"dq"', "it's",
                     'say "hi"', "back\\slash", "\t", "a\nb", "\n", "line\r\n", "{a: 1}", "[1]", "&anchor", "*ref",
                     "!tag", "%dir", "@at", "`tick", "|", ">", "<<", "=", ",", "é", "日本語", "emoji 🎉", "\u2028",
                     "\x85", "\ufeff", "\x00", "\x7f", "a" * 250, "word " * 60]),
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=40),
    st.text(" :#-'\"\n\tab{}[],&*!|>%@`?", max_size=12),
)
AWKWARD_VALUES = st.recursive(
    st.one_of(AWKWARD, SCALARS),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.one_of(AWKWARD, KEYS), inner, max_size=4)),
    max_leaves=30)


def _key_orders(value: Any) -> Any:
    """The keys of every mapping in ``value``, in order (dict equality ignores order)."""
    if type(value) is dict:
        return [(k, _key_orders(v)) for k, v in value.items()]
    if type(value) is list:
        return [_key_orders(v) for v in value]
    return None


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(KEYS, VALUES, min_size=1, max_size=5))
def test_emitted_yaml_reads_back_equal_through_both_loaders(value: dict[str, Any]) -> None:
    """150 random documents a run (not derandomized: each run tries new ones)."""
    text = yamlemit.dump(value, header="a header\n\nwith lines")
    data, _ = parse_yaml(text, "c.yaml")
    assert data == value
    fast = quickload.parse(text)
    if fast is not None:  # the fast path may decline; when it takes the file it must agree
        assert fast == value


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.one_of(AWKWARD, KEYS), AWKWARD_VALUES, min_size=1, max_size=6))
def test_emitted_yaml_is_what_yaml_safe_load_reads_in_order_and_stable(value: dict[str, Any]) -> None:
    """The emitter is the only writer of cassettes (no yaml.dump): PyYAML's own reader (YAML 1.1)
    reads back exactly the data, keys in the same order, and re-emitting what was read gives the
    same bytes (a re-recording diffs as nothing). 150 random documents a run (each run tries new
    ones): PyYAML's pure-Python reader is what each costs."""
    import yaml

    text = yamlemit.dump(value, header=cassette_header())
    loaded = yaml.safe_load(text)
    assert loaded == value
    assert _key_orders(loaded) == _key_orders(value)
    assert yamlemit.dump(loaded, header=cassette_header()) == text
    assert parse_yaml(text, "c.yaml")[0] == value  # and the plain loader (YAML 1.2 core) agrees
    # readable: block style, a line per key and per item (flow only inside lists of lists)
    assert len(text.splitlines()) >= _block_entries(value) + len(cassette_header().splitlines())


def _block_entries(value: Any) -> int:
    """How many keys and items block style puts on lines of their own."""
    if type(value) is dict:
        return sum(1 + _block_entries(v) for v in value.values())
    if type(value) is list:
        return sum(_block_entries(v) if type(v) is dict and v else 1 for v in value)  # "- " starts a mapping's first line
    return 0


def cassette_header() -> str:
    from mockmcp.record.recording import HEADER

    return HEADER


def _session(*pairs: tuple[str, Any]) -> cassette.Recorder:
    rec = cassette.Recorder()
    for t, (side, msg) in enumerate(pairs):
        data = msg if isinstance(msg, bytes) else (json.dumps(msg) + "\n").encode()
        (rec.client_line if side == "c" else rec.server_line)(data, float(t))
    return rec


META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}


def _req(rid: Any, method: str, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": {**params, "_meta": dict(META, progressToken=rid)}}


def _res(rid: Any, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": {"resultType": "complete", **result}}


DISCOVER = _res(1, {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}, "ttlMs": 0, "cacheScope": "public",
                    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "real", "version": "9"}}})
TOOLS = _res(2, {"tools": [{"name": "t", "inputSchema": {"type": "object", "properties": {"password": {"type": "string"}}},
                            "execution": {"taskSupport": "never"}}], "ttlMs": 0, "cacheScope": "public"})


def _write_and_load(tmp_path: Any, data: dict[str, Any]) -> Any:
    path = tmp_path / "c.yaml"
    path.write_text(yamlemit.dump(data))
    scenario, warnings = load(str(path), use_cache=False)
    return scenario, path.read_text()


def test_garbage_cancel_and_silence_become_raw_hang_steps(tmp_path: Any) -> None:
    rec = _session(
        ("c", _req(1, "server/discover")), ("s", DISCOVER), ("c", _req(2, "tools/list")), ("s", TOOLS),
        ("c", _req(3, "tools/call", name="t", arguments={"a": 1})),
        ("s", b"this is not json\n"),
        ("s", {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 3, "progress": 1}}),
        ("s", _res(3, {"content": []})),
        ("c", _req(4, "tools/call", name="t", arguments={"a": 2})),
        ("c", {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 4}}),
        ("s", b"\xff\xfe broken utf-8\n"),
    )
    scenario, _ = _write_and_load(tmp_path, cassette.build(rec))
    assert scenario.server.name == "real" and scenario.cache.cacheScope == "public"
    (tool,) = scenario.tools
    first, second = tool.replies
    assert [type(s).__name__ for s in first.steps] == ["RawBytesStep", "ProgressStep", "ResultStep"]
    assert first.steps[0].rawBytes == "this is not json\n"
    assert [type(s).__name__ for s in second.steps] == ["RawBytesStep", "HangStep"]
    assert second.steps[0].rawBytes.encode("latin-1") == b"\xff\xfe broken utf-8\n"  # byte for byte


def test_keep_timing_writes_the_observed_delays(tmp_path: Any) -> None:
    rec = _session(("c", _req(1, "tools/call", name="t", arguments={})),
                   ("s", {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 1}}),
                   ("s", _res(1, {"content": []})))
    steps = cassette.build(rec, cassette.Options(keep_timing=True))["tools"][0]["replies"][0]["steps"]
    assert steps[0] == {"sleep": "1000ms"} and steps[2] == {"sleep": "1000ms"}
    assert "sleep" not in json.dumps(cassette.build(rec))


def test_secrets_from_either_side_never_reach_the_file(tmp_path: Any) -> None:
    rec = _session(
        ("c", _req(1, "server/discover")), ("s", DISCOVER), ("c", _req(2, "tools/list")), ("s", TOOLS),
        ("c", _req(3, "tools/call", name="t", arguments={"password": "client-pass-123", "user": "ada"},
                   _meta={"authorization": "Bearer client-bearer-456"})),
        ("s", _res(3, {"content": [{"type": "text", "text": "session srv-token-789 for ada; key sk-live-abcdef"}],
                       "structuredContent": {"sessionToken": "srv-token-789"}})),
        ("c", _req(4, "tools/call", name="t", arguments={"note": "my X-Key is zz-custom-000"})),
        ("s", _res(4, {"content": [], "_meta": {"x-session": "custom-key-value"}})),
    )
    redactor = Redactor(keys=["x-session"], patterns=[r"sk-live-[a-z]+", r"zz-custom-\d+"])
    data = cassette.build(rec, cassette.Options(redactor))
    scenario, text = _write_and_load(tmp_path, data)
    for secret in ("client-pass-123", "srv-token-789", "sk-live-abcdef", "zz-custom-000", "custom-key-value"):
        assert secret not in text
    assert PLACEHOLDER in text
    # the schema's "password" property is a definition, not a secret; progressToken is protocol
    assert scenario.tools[0].inputSchema["properties"] == {"password": {"type": "string"}}
    rule = scenario.tools[0].replies[0]
    assert rule.when.arguments == {"password": {"$type": "string"}, "user": "ada"}


def test_legacy_server_requests_become_rounds_with_as_modern(tmp_path: Any) -> None:
    elicit = {"jsonrpc": "2.0", "id": 0, "method": "elicitation/create",
              "params": {"message": "name?", "requestedSchema": {"type": "object"}}}
    rec = _session(
        ("c", {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}}),
        ("s", {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                                                    "serverInfo": {"name": "old", "version": "1"}}}),
        ("c", {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "t", "arguments": {}}}),
        ("s", elicit),
        ("c", {"jsonrpc": "2.0", "id": 0, "result": {"action": "accept", "content": {"name": "Ada"}}}),
        ("s", {"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "hi Ada"}]}}),
    )
    legacy, _ = _write_and_load(tmp_path, cassette.build(rec))
    assert legacy.protocol.era == "legacy"
    asked, _ = legacy.tools[0].replies[0].steps
    assert [type(s).__name__ for s in legacy.tools[0].replies[0].steps] == ["RequestStep", "ResultStep"]
    assert asked.request.method == "elicitation/create" and asked.request.params == elicit["params"]
    assert asked.request.expect == {"result": {"action": "accept", "content": {"name": "Ada"}}}
    modern, _ = _write_and_load(tmp_path, cassette.build(rec, cassette.Options(as_modern=True)))
    assert modern.protocol.era == "modern" and modern.protocol.versions == ["2026-07-28"]
    ask, answer = modern.tools[0].replies
    assert ask.when.round == 1 and ask.steps[0].inputRequired.inputRequests["input-1"]["method"] == "elicitation/create"
    assert answer.when.round == 2 and answer.when.inputResponses == {"input-1": {"action": "accept", "content": {"name": "Ada"}}}


def test_merge_keeps_what_was_recorded_and_adds_new_requests() -> None:
    def one(args: dict[str, Any], text: str) -> dict[str, Any]:
        rec = _session(("c", _req(1, "tools/call", name="t", arguments=args)),
                       ("s", _res(1, {"content": [{"type": "text", "text": text}]})),
                       ("c", _req(2, "ping/other", x=1)), ("s", _res(2, {})))
        return cassette.build(rec)

    old = one({"a": 1}, "old answer")
    merged = cassette.merge(old, one({"a": 1}, "new answer"))
    assert merged == old  # a request already recorded keeps its recorded answer
    merged = cassette.merge(old, one({"a": 2}, "second"))
    rules = merged["tools"][0]["replies"]
    assert [r["when"]["arguments"] for r in rules] == [{"a": 1}, {"a": 2}]
    assert len(merged["methods"][0]["replies"]) == 1


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text("abcxy-", min_size=1, max_size=8), max_size=80),
       st.lists(st.text("abcxy-", min_size=4, max_size=7), min_size=1, max_size=90))
def test_learned_secrets_are_replaced_like_a_longest_first_alternation(texts: list[str], secrets: list[str]) -> None:
    """The prefix index (cost: the text's length) against the obvious regular expression."""
    import re

    red = Redactor(defaults=False)
    for secret in secrets:
        red.learn({"k": secret})  # not a secret key: nothing learned
    assert red.value("".join(secrets)) == "".join(secrets)
    red = Redactor(keys=["k"], defaults=False)
    for secret in secrets:
        red.learn({"k": secret})
    reference = re.compile("|".join(re.escape(s) for s in sorted(set(secrets), key=len, reverse=True)))
    for text in texts + ["".join(secrets), "-".join(secrets[::-1])]:
        assert red.text(text) == reference.sub(PLACEHOLDER, text), text


def test_a_listed_tool_never_called_fails_loudly_in_replay(tmp_path: Any) -> None:
    import subprocess

    rec = _session(("c", _req(1, "server/discover")), ("s", DISCOVER), ("c", _req(2, "tools/list")), ("s", TOOLS))
    path = tmp_path / "c.yaml"
    path.write_text(yamlemit.dump(cassette.build(rec)))
    call = _req(3, "tools/call", name="t", arguments={})
    proc = subprocess.run([*mockmcp_prefix(), "run", str(path), "--strict"],
                          input=(json.dumps(call) + "\n").encode(), capture_output=True, timeout=30)
    (answer,) = map(json.loads, proc.stdout.splitlines())
    assert answer["error"]["code"] == -32603 and answer["error"]["data"]["nearMiss"]["rule"] == "(none)"
    assert proc.returncode == 1  # --strict: an unrecorded request


ARGS = st.dictionaries(st.sampled_from(["a", "b", "q"]), st.one_of(st.integers(0, 3), st.sampled_from(["x", "y"])),
                       max_size=2)
CALLS = st.tuples(st.sampled_from(["tools/call", "prompts/get", "resources/read", "completion/complete"]),
                  st.sampled_from(["one", "two"]), ARGS)


def _params(method: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    if method == "resources/read":
        return {"uri": f"test://{name}/{sorted(args.items())}"}
    if method == "completion/complete":
        return {"ref": {"type": "ref/prompt", "name": name}, "argument": {"name": "a", "value": str(args)}}
    if method == "prompts/get":
        return {"name": name, "arguments": {k: str(v) for k, v in args.items()}}
    return {"name": name, "arguments": args}


@settings(max_examples=60, deadline=None)
@given(st.lists(CALLS, min_size=1, max_size=6), st.lists(CALLS, max_size=6))
def test_new_episodes_routing_agrees_with_what_the_engine_answers(recorded: list[Any], asked: list[Any]) -> None:
    """``recorded_keys`` (which requests new_episodes hands the cassette) is a second answer to "does the
    cassette have this request?": it must agree with the engine's own selection, request by request."""
    from support.engines import plan_for

    from mockmcp.launch.boot import new_engine

    pairs: list[tuple[str, Any]] = [("c", _req(0, "server/discover")), ("s", DISCOVER)]
    for i, (method, name, args) in enumerate(recorded, 1):
        pairs += [("c", _req(i, method, **_params(method, name, args))),
                  ("s", _res(i, {"content": [], "messages": [], "contents": [], "completion": {"values": []}}))]
    data = cassette.build(_session(*pairs))
    data["capabilities"] = {"tools": {}, "prompts": {}, "resources": {}, "completions": {}}
    from mockmcp.scenario.loader import load_text

    scenario, _ = load_text(yamlemit.dump(data), "c.yaml")
    keys = cassette.recorded_keys(scenario)
    engine = new_engine(scenario)
    for n, (method, name, args) in enumerate(recorded + asked, 100):
        params = _params(method, name, args)
        plan = plan_for(engine, _req(n, method, **params))
        sent = [a.message for a in plan.actions if hasattr(a, "message")]
        # answered by a recorded rule (plan.rule names it), not by a built-in handler or an error
        answered = plan.rule is not None and any("result" in m for m in sent)
        assert (cassette.request_key(method, params) in keys) == answered, (method, params, sent, plan.rule)


SECRETISH = st.sampled_from(["password", "api_key", "token", "q", "note", "progressToken", "x-session"])
WORDS = st.sampled_from(["pw-12345", "tok-99999", "plain", "hello pw-12345 there", "sk-abcdef", "ada"])
ARGS_OR_RESULTS = st.recursive(WORDS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                               st.dictionaries(SECRETISH, inner, max_size=3)),
                               max_leaves=8)
EXCHANGE = st.tuples(st.sampled_from(["tools/call", "prompts/get", "tools/list", "completion/complete"]),
                     st.dictionaries(SECRETISH, ARGS_OR_RESULTS, max_size=3),
                     st.dictionaries(SECRETISH, ARGS_OR_RESULTS, max_size=3),
                     st.booleans(), st.one_of(st.none(), st.dictionaries(SECRETISH, ARGS_OR_RESULTS, max_size=3)),
                     st.booleans())


@settings(max_examples=80, deadline=None)
@given(st.lists(EXCHANGE, min_size=1, max_size=6))
def test_secrets_learned_as_lines_arrive_give_the_cassette_learned_at_the_end(exchanges: list[Any]) -> None:
    """The recorder learns secrets while the session runs (record.py hands it the redactor); a
    recorder without one leaves the learning to build. Both must write the same cassette."""
    pairs: list[tuple[str, Any]] = [("c", _req(1, "server/discover")), ("s", DISCOVER)]
    for n, (method, args, result, progress, log, error) in enumerate(exchanges, start=10):
        pairs.append(("c", _req(n, method, name="t", arguments=args)))
        if progress:
            pairs.append(("s", {"jsonrpc": "2.0", "method": "notifications/progress",
                                "params": {"progressToken": n, "progress": 1, "message": json.dumps(result)}}))
        if log is not None:  # its own secrets, found nowhere else
            pairs.append(("s", {"jsonrpc": "2.0", "method": "notifications/message",
                                "params": {"level": "info", "data": log}}))
        if error:
            pairs.append(("s", {"jsonrpc": "2.0", "id": n, "error": {"code": -32000, "message": "no", "data": result}}))
        else:
            pairs.append(("s", _res(n, {"content": [], "structuredContent": result})))

    def built(observing: bool) -> tuple[str, int]:
        redactor = Redactor(keys=["x-session"], patterns=[r"sk-[a-z]+"])
        rec = cassette.Recorder(redactor if observing else None)
        for t, (side, msg) in enumerate(pairs):
            (rec.client_line if side == "c" else rec.server_line)((json.dumps(msg) + "\n").encode(), float(t))
        return yamlemit.dump(cassette.build(rec, cassette.Options(redactor))), redactor.redacted

    assert built(True) == built(False)
