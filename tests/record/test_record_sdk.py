"""``mockmcp record`` against a real server: the official Python SDK's ``MCPServer`` (tests/servers/sdk_server.py).

A session driven by the official Python client is recorded through ``mockmcp record``
(both eras: the client's default probe-then-modern mode, and its legacy handshake
mode); the cassette must pass ``mockmcp check``, and replaying it (``mockmcp run
CASSETTE``) to the Python and TypeScript clients must give the results the real server
gave them. An unrecorded call fails with a near miss naming the recorded call, and
``--strict`` makes the replay exit non-zero. ``--as 2026-07-28`` turns the legacy
recording (whose elicitation was a server-to-client request) into a modern scenario
whose elicitation is an ``input_required`` round, and a modern client gets the same
results from it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support.messages import line, request
from interop.matrix import run_batch, run_client
from mockmcp.scenario import loader
from support import zygote
from support.process import mockmcp_prefix

pytestmark = [pytest.mark.interop, pytest.mark.usefixtures("zygote")]

SERVER = zygote.command("sdk_server.py")  # through this worker's fork server (support.zygote)
OPS: list[dict[str, Any]] = [
    {"op": "listTools"},
    {"op": "callTool", "name": "echo", "arguments": {"text": "hi"}},
    {"op": "callTool", "name": "add", "arguments": {"a": 2, "b": 3}},
    {"op": "callTool", "name": "count", "arguments": {"n": 3}},
    {"op": "callTool", "name": "greet", "arguments": {}},
    {"op": "callTool", "name": "fail", "arguments": {"reason": "boom"}},
    {"op": "callTool", "name": "login", "arguments": {"user": "ada", "password": "hunter2-client-secret"}},
    {"op": "listPrompts"},
    {"op": "getPrompt", "name": "review", "arguments": {"code": "x = 1"}},
    {"op": "complete", "ref": {"type": "ref/prompt", "name": "review"}, "argument": {"name": "code", "value": "pr"}},
    {"op": "listResources"},
    {"op": "listResourceTemplates"},
    {"op": "readResource", "uri": "fixture://readme"},
    {"op": "readResource", "uri": "fixture://items/7"},
]


def record_cmd(cassette: Path, *extra: str) -> list[str]:
    return [*mockmcp_prefix(), "record", "-o", str(cassette), *extra, "--", *SERVER]


def replay_cmd(cassette: Path) -> list[str]:
    return [*mockmcp_prefix(), "run", str(cassette)]


SECRETS = ("hunter2-client-secret", "srv-secret-token-9f8e7d")  # sent by the client, returned by the server


def outcomes(result: dict[str, Any]) -> list[tuple[Any, ...]]:
    """What a client got per operation: status, result (or error code) and progress count.

    ``login``'s secrets are redacted in the cassette, so its replayed answer differs on
    purpose: it is compared with the secrets replaced by the placeholder."""
    assert "crash" not in result, result
    assert result["connect"]["status"] == "ok", result
    out = []
    for op in result["ops"]:
        value = op.get("result")
        if op.get("name") == "login":
            text = json.dumps(value)
            for secret in SECRETS:
                text = text.replace(secret, "[REDACTED]")
            value = json.loads(text)
        out.append((op["op"], op.get("name", op.get("uri")), op["status"], value, op.get("code"), op.get("progress")))
    return out


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Both eras recorded at once (one driver process, two sessions)."""
    work = tmp_path_factory.mktemp("record-sdk")
    modern, legacy, again, converted = (work / f"{n}.yaml" for n in ("modern", "legacy", "again", "as-modern"))
    results = run_batch("python-asyncio", [
        {"command": record_cmd(modern), "ops": OPS, "timeoutMs": 15000},
        {"command": record_cmd(legacy), "ops": OPS, "timeoutMs": 15000, "mode": "legacy"},
        {"command": record_cmd(again), "ops": OPS, "timeoutMs": 15000},
        {"command": record_cmd(converted, "--as", "2026-07-28"), "ops": OPS, "mode": "legacy", "timeoutMs": 15000},
    ], jobs=4)
    replays = run_batch("python-asyncio", [
        {"command": replay_cmd(modern), "ops": OPS},
        {"command": replay_cmd(legacy), "ops": OPS, "mode": "legacy"},
        {"command": replay_cmd(converted), "ops": OPS},
    ], jobs=3)
    return {"work": work, "modern": modern, "legacy": legacy, "again": again, "as-modern": converted,
            "modern_result": results[0], "legacy_result": results[1], "again_result": results[2],
            "as_modern_result": results[3], "replays": replays}


def test_recording_passes_everything_through(recorded: dict[str, Any]) -> None:
    ops = outcomes(recorded["modern_result"])
    assert all(status == "ok" for _, _, status, *_ in ops), ops
    by_name = {(op, name): (res, progress) for op, name, _, res, _, progress in ops}
    assert by_name[("callTool", "echo")][0]["content"][0]["text"] == "echo: hi"
    assert by_name[("callTool", "count")][1] == 3
    assert by_name[("callTool", "greet")][0]["content"][0]["text"] == "Hello, example!"
    assert recorded["modern_result"]["callbacks"]["elicitation"] == ["form"]
    assert outcomes(recorded["legacy_result"])[1][3]["content"][0]["text"] == "echo: hi"


def test_no_secret_of_either_side_reaches_a_cassette(recorded: dict[str, Any]) -> None:
    login = next(op for op in recorded["modern_result"]["ops"] if op.get("name") == "login")
    assert "srv-secret-token-9f8e7d" in json.dumps(login["result"])  # the client did get it
    for era in ("modern", "legacy", "as-modern"):
        text = recorded[era].read_text()
        assert "[REDACTED]" in text
        for secret in SECRETS:
            assert secret not in text, (era, secret)
    replayed = next(op for op in recorded["replays"][0]["ops"] if op.get("name") == "login")
    assert replayed["status"] == "ok" and replayed["result"]["structuredContent"]["token"] == "[REDACTED]"


def test_cassettes_are_scenarios(recorded: dict[str, Any]) -> None:
    for era in ("modern", "legacy"):
        proc = subprocess.run([*mockmcp_prefix(), "check", str(recorded[era])], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    scenario, _ = loader.load(str(recorded["modern"]), use_cache=False)
    assert scenario.server.name == "sdk-fixture" and scenario.server.version == "1.2.3"
    assert scenario.server.instructions == "A fixture server for recording tests."
    assert scenario.protocol.era == "modern" and scenario.protocol.versions == ["2026-07-28"]
    tools = {t.name: t for t in scenario.tools}
    assert list(tools) == ["echo", "add", "count", "greet", "fail", "login"]
    assert [r.when.arguments for r in tools["echo"].replies] == [{"text": "hi"}]
    assert [type(s).__name__ for s in tools["count"].replies[0].steps or []] == ["ProgressStep"] * 3 + ["ResultStep"]
    assert [r.when.round for r in tools["greet"].replies] == [1, 2]
    legacy, _ = loader.load(str(recorded["legacy"]), use_cache=False)
    assert legacy.protocol.era == "legacy"


def test_rerecording_the_same_session_gives_the_same_file(recorded: dict[str, Any]) -> None:
    assert outcomes(recorded["again_result"]) == outcomes(recorded["modern_result"])
    assert recorded["again"].read_text() == recorded["modern"].read_text()


def test_replay_gives_the_python_client_the_recorded_results(recorded: dict[str, Any]) -> None:
    results = recorded["replays"]
    assert outcomes(results[0]) == outcomes(recorded["modern_result"])
    assert results[0]["callbacks"]["elicitation"] == ["form"]
    assert outcomes(results[1]) == outcomes(recorded["legacy_result"])


@pytest.mark.usefixtures("typescript_client")
def test_replay_gives_the_typescript_client_what_the_real_server_gave_it(recorded: dict[str, Any]) -> None:
    # One after the other: the TS client's discover probe has a timeout of its own, and a loaded
    # machine (two sessions, each a Node client and a Python server) makes it fall back to legacy.
    real = run_client("typescript", {"command": SERVER, "ops": OPS, "timeoutMs": 15000, "connectTimeoutMs": 15000})
    replayed = run_client("typescript", {"command": replay_cmd(recorded["modern"]), "ops": OPS})
    assert real["connect"].get("era") == replayed["connect"].get("era") == "modern", (real["connect"], replayed["connect"])
    # Progress counts are left out: the TS client 2.4.0 drops notifications for progress token 0
    # (its first request id) at random, against the real server as against the replay.
    assert [o[:5] for o in outcomes(replayed)] == [o[:5] for o in outcomes(real)]
    assert replayed["connect"]["era"] == real["connect"]["era"]


def test_as_modern_turns_a_legacy_recording_into_a_modern_scenario(recorded: dict[str, Any]) -> None:
    converted = recorded["as-modern"]
    assert outcomes(recorded["as_modern_result"]) == outcomes(recorded["legacy_result"])
    scenario, _ = loader.load(str(converted), use_cache=False)
    assert scenario.protocol.era == "modern"
    greet = next(t for t in scenario.tools if t.name == "greet")
    assert [r.when.round for r in greet.replies] == [1, 2]
    replayed = recorded["replays"][2]
    assert replayed["connect"]["protocolVersion"] == "2026-07-28"
    assert replayed["callbacks"]["elicitation"] == ["form"]
    # The modern client sees what the legacy one saw, but for the modern envelope's own fields.
    assert [(o[0], o[1], o[2], _plain(o[3])) for o in outcomes(replayed)] == [
        (o[0], o[1], o[2], _plain(o[3])) for o in outcomes(recorded["legacy_result"])]


def _plain(result: Any) -> Any:
    if not isinstance(result, dict):
        return result
    return {k: v for k, v in result.items() if k not in ("resultType", "_meta", "ttlMs", "cacheScope")}


def _completion(rid: int, value: str) -> dict[str, Any]:
    return request(rid, "completion/complete", {"ref": {"type": "ref/prompt", "name": "review"},
                                                 "argument": {"name": "code", "value": value}})


def test_an_unrecorded_call_fails_with_a_near_miss_and_strict_exits_non_zero(recorded: dict[str, Any]) -> None:
    lines = [
        request(1, "tools/call", {"name": "echo", "arguments": {"text": "hi"}}),
        request(2, "tools/call", {"name": "echo", "arguments": {"text": "bye"}}),
        _completion(3, "pr"),
        # the real server would complete this too, but it was not recorded: no built-in answer
        _completion(4, "pa"),
        request(5, "prompts/list"),  # the protocol's plumbing keeps its built-in answer
    ]
    proc = subprocess.run(record_cmd(recorded["modern"], "--strict", "--report", str(recorded["work"] / "strict.json")),
                          input=b"".join(line(m) for m in lines), capture_output=True, timeout=60)
    answers = {m["id"]: m for m in map(json.loads, proc.stdout.splitlines())}
    assert answers[1]["result"]["content"][0]["text"] == "echo: hi"
    error = answers[2]["error"]
    assert "no rule" in error["message"].lower() or "no recorded" in error["message"].lower(), error
    assert "bye" in json.dumps(error["data"]) and "hi" in json.dumps(error["data"]), error
    assert answers[3]["result"]["completion"]["values"] == ["print", "property"]  # as the server completed it
    error = answers[4]["error"]
    assert error["code"] == -32603 and '"pa"' in error["data"]["nearMiss"]["reason"], error
    assert '"pr"' in error["data"]["nearMiss"]["reason"], error  # the recorded completion it is closest to
    assert [p["name"] for p in answers[5]["result"]["prompts"]] == ["review"], answers[5]
    assert proc.returncode != 0, proc.stderr
    report = json.loads((recorded["work"] / "strict.json").read_text())
    assert [(f["check"], f["id"]) for f in report["findings"]] == [("expect.unmatched", 2), ("expect.unmatched", 4)]


def test_a_legacy_elicitation_replays_as_a_request_that_waits_for_the_answer(recorded: dict[str, Any]) -> None:
    legacy, _ = loader.load(str(recorded["legacy"]), use_cache=False)
    greet = next(t for t in legacy.tools if t.name == "greet")
    (rule,) = greet.replies
    asked, final = rule.steps or []
    assert type(asked).__name__ == "RequestStep" and asked.request.method == "elicitation/create"
    assert asked.request.expect == {"result": {"action": "accept", "content": {"name": "example"}}}
    assert type(final).__name__ == "ResultStep"
    # the replay to the legacy client (replays[1]) answered the elicitation it was sent
    assert recorded["replays"][1]["callbacks"]["elicitation"] == ["form"]
