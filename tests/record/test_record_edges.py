"""``mockmcp record`` against a hostile real server: bounded memory, a cassette that loads, no traceback.

The server is ``support.hostileserver``'s (it writes whatever each call
asks for, then the call's answer, then an end marker). Under the recorder:

- a flood of 4 KB notifications during one call costs the recorder a bounded amount of
  memory (it keeps only what the cassette will hold: the first ``MAX_EVENTS`` messages
  of a call within ``MAX_EVENT_BYTES``), and says what it left out;
- the stdio fuzzer's lines, written by the server during calls (bare, as a log's data, as a
  progress message, as the answer's result), are passed on, a probe after each is answered,
  and the cassette written at the end loads (``mockmcp check``), or the recorder exits with
  one clear line;
- a ``progressToken`` is a protocol key, not a secret, though its name contains "token":
  its value stays in the cassette wherever it appears.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from mockmcp.record import cassette as cassette_mod
from support.fuzz import mutated
from support.messages import META
from support.hostileserver import (ANSWERS, FIXED_LINES, Client, exchange, expected, hostile_call, matches, probe,
                                   server_script)
from support.process import direct_cmd, mockmcp_prefix, own_pid

J = b'{"jsonrpc":"2.0",'


def recorder(tmp_path: Path, out: Path, direct: bool = False, mode: str = "all", opts: tuple[str, ...] = ()) -> Client:
    """``direct``: a fresh interpreter even under the warm server, for a test that reads the
    recorder's own memory (``support.process.direct_cmd``)."""
    cmd = [*(direct_cmd() if direct else mockmcp_prefix()), "record", "--mode", mode, *opts, "-o", str(out), "--",
           sys.executable, str(server_script(tmp_path))]
    return Client(cmd, tmp_path / "stderr")


def check(path: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*mockmcp_prefix(), "check", str(path)], capture_output=True, timeout=60)


def peak_rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        for row in fh:
            if row.startswith("VmHWM:"):
                return int(row.split()[1]) / 1024
    raise AssertionError("no VmHWM")


def test_a_flooding_server_costs_the_recorder_bounded_memory(tmp_path: Path) -> None:
    """80 MB of 4 KB log notifications during one call, then as much with a level no log step
    takes (nothing of it goes in the cassette): the recorder's peak RSS stays < 100 MB (about 30
    at rest: keeping either call's volume would pass it), the cassette holds the first 1,000
    logs, and says so."""
    out = tmp_path / "flood.yaml"
    client = recorder(tmp_path, out, direct=True)  # (its own memory is read below)
    try:
        for n, kind in enumerate(("log", "badlog")):
            client.send({"jsonrpc": "2.0", "id": n, "method": "tools/call",
                         "params": {"name": "flood", "arguments": {"kind": kind, "mb": 80}}})
            lines = 0
            deadline = time.monotonic() + 120
            while True:  # counted, not kept: the test's own memory stays small too
                raw = client.lines.get(timeout=max(0.0, deadline - time.monotonic()))
                assert raw, client.stderr()[-3000:]
                lines += 1
                if raw.startswith(b'{"jsonrpc": "2.0", "id": %d' % n):
                    break
            assert lines == 80 * 256 + 1
        peak = peak_rss_mib(own_pid(client.proc.pid))
        status = client.close()
    finally:
        client.kill()
    err = client.stderr().decode()
    assert peak < 100, f"the recorder's peak RSS was {peak:.0f} MiB"
    assert status == 0 and "Traceback" not in err, err
    assert "1 call(s) got more from the server than a cassette keeps per call" in err, err
    data = yaml.safe_load(out.read_text())
    (tool,) = data["tools"]
    steps = [rule["steps"] for rule in tool["replies"]]
    assert [len(s) for s in steps] == [cassette_mod.MAX_EVENTS + 1, 1]  # the first 1,000 logs, then the result
    assert all("log" in step for step in steps[0][:-1]) and "result" in steps[0][-1]
    assert check(out).returncode == 0


def test_a_progress_token_in_a_result_is_kept_unredacted(tmp_path: Path) -> None:
    """``progressToken`` contains "token", but it is the protocol's own key: neither the call's
    token (in its ``_meta``) nor the same value in the server's result is redacted, while a real
    secret beside it is."""
    out = tmp_path / "token.yaml"
    token = "tok-progress-5150"
    answer = json.dumps({"content": [{"type": "text", "text": f"working on {token}"}],
                         "structuredContent": {"progressToken": token, "session_token": "tok-secret-77"}}).encode()
    progress = J + b'"method":"notifications/progress","params":' + json.dumps(
        {"progressToken": token, "progress": 1, "total": 2, "message": f"half of {token}"}).encode() + b"}"
    client = recorder(tmp_path, out)
    try:
        exchange(client, 0, hostile_call(0, [progress], answer=answer, meta={"progressToken": token}))
        status = client.close()
    finally:
        client.kill()
    err = client.stderr().decode()
    assert status == 0, err
    text = out.read_text()
    assert "tok-secret-77" not in text and "[REDACTED]" in text  # redaction is on
    (rule,) = yaml.safe_load(text)["tools"][0]["replies"]
    progress_step, result_step = rule["steps"]
    assert progress_step == {"progress": {"progress": 1, "total": 2, "message": f"half of {token}"}}
    result = result_step["result"]
    assert result["structuredContent"] == {"progressToken": token, "session_token": "[REDACTED]"}
    assert result["content"] == [{"type": "text", "text": f"working on {token}"}]
    assert check(out).returncode == 0


def test_a_secret_of_any_type_is_redacted_wherever_it_appears(tmp_path: Path) -> None:
    """Under secret keys: a number (a PIN), a list of keys, an object holding the token; a learned
    secret used as a mapping key; a key the --redact pattern matches; a non-ASCII secret inside a
    garbage line (a rawBytes step, one character per byte). None of them reaches the cassette,
    in any spelling, while the names and the values around them are kept."""
    out = tmp_path / "secrets.yaml"
    secrets = ["98765432", "live-AAAA1111", "zz-SECRET-VALUE-1", "KEYLEAK-12345", "sk-abcdef123", "pässwörd-1234"]
    structured = {"password": 98765432, "api_keys": ["live-AAAA1111"], "token": {"value": "zz-SECRET-VALUE-1", "exp": 5},
                  "session_token": "KEYLEAK-12345", "sessions": {"KEYLEAK-12345": {"user": "ada"}},
                  "keys": {"sk-abcdef123": "owner", "[REDACTED]": "taken"}, "login": {"secret": "pässwörd-1234"}}
    text = "your pin is 98765432, using key live-AAAA1111, token zz-SECRET-VALUE-1 for KEYLEAK-12345"
    answer = json.dumps({"content": [{"type": "text", "text": text}], "structuredContent": structured}).encode()
    garbage = "debug: login with pässwörd-1234 (not JSON)".encode()
    client = recorder(tmp_path, out, opts=("--redact", "sk-[a-z0-9]+"))
    try:
        exchange(client, 0, hostile_call(0, [garbage], answer=answer, meta=META))
        status = client.close()
    finally:
        client.kill()
    assert status == 0, client.stderr()
    written = out.read_text(encoding="utf-8")
    (rule,) = yaml.safe_load(written)["tools"][0]["replies"]
    raw, result = rule["steps"][0]["rawBytes"], rule["steps"][1]["result"]
    for secret in secrets:
        for spelling in (secret, secret.encode().decode("latin-1")):  # (rawBytes: a character per byte)
            assert spelling not in written and spelling not in raw, (secret, written)
    assert raw == "debug: login with [REDACTED] (not JSON)\n"
    got = result["structuredContent"]
    assert got["token"] == "[REDACTED]" and got["sessions"] == {"[REDACTED]": {"user": "ada"}}
    assert got["keys"] == {"[REDACTED]-2": "owner", "[REDACTED]": "taken"}  # (no entry lost to a collision)
    assert result["content"][0]["text"] == "your pin is [REDACTED], using key [REDACTED], token [REDACTED] for [REDACTED]"
    assert check(out).returncode == 0


def _as_log(text: bytes) -> bytes:
    return J + b'"method":"notifications/message","params":{"level":"info","data":' + text + b"}}"


def _as_progress(text: bytes, n: int) -> bytes:
    return J + b'"method":"notifications/progress","params":{"progressToken":"tok-%d","progress":1,"message":' % n \
        + text + b"}}"


def run_recorder(tmp_path: Path, cases: list[tuple[list[bytes], bytes | None]]) -> None:
    out = tmp_path / "hostile.yaml"
    out.unlink(missing_ok=True)
    client = recorder(tmp_path, out)
    try:
        for n, (lines, answer) in enumerate(cases):
            got = exchange(client, n, hostile_call(n, lines, answer=answer, meta={"progressToken": f"tok-{n}"}))
            for want in expected(lines):
                assert want in got, (n, want[:200])
        status = client.close()
    finally:
        client.kill()
    err = client.stderr().decode("utf-8", "replace")
    assert "Traceback" not in err, err[-3000:]
    if status != 0:  # allowed: one clear line, and no cassette half written
        problems = [row for row in err.splitlines() if not row.startswith("mockmcp record: redacted")]
        assert len(problems) == 1 and problems[0].startswith("mockmcp record: "), err[-3000:]
        return
    checked = check(out)
    assert checked.returncode == 0, checked.stderr.decode()[-3000:]


def test_the_worst_server_lines_under_the_recorder(tmp_path: Path) -> None:
    cases: list[tuple[list[bytes], bytes | None]] = []
    for n, raw in enumerate(FIXED_LINES):
        cases.append(([raw, _as_log(raw), _as_progress(raw, len(cases))], None))
    for answer in ANSWERS:
        cases.append(([], answer))
    run_recorder(tmp_path, cases)


@settings(max_examples=2, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture])
@given(lines=st.lists(mutated(), min_size=30, max_size=40), answers=st.lists(st.none() | mutated(), min_size=40, max_size=40))
def test_fuzzed_server_lines_under_the_recorder(tmp_path: Path, lines: list[bytes], answers: list[bytes | None]) -> None:
    """The stdio fuzzer's lines, bare, as a log's data and as a progress message during a call, and
    as a call's result: recorded into a cassette that loads."""
    run_recorder(tmp_path, [([line, _as_log(line), _as_progress(line, n)], answers[n]) for n, line in enumerate(lines)])


def test_new_episodes_survives_a_deep_client_line_and_replayed_garbage(tmp_path: Path) -> None:
    """``--mode new_episodes`` reads every client line (to route it) and every line the cassette's
    engine writes (to learn the ``requestState`` of rounds it starts). A client line nested 100,000
    deep, and a replayed call whose recorded garbage lines hold the text "requestState" (a cut
    object, a non-object line; the reply dribbled, so the engine writes pieces of lines) are passed
    on: the probe, the replayed call and a new call are answered, the new call is merged, no
    traceback."""
    out = tmp_path / "c.yaml"
    garbage = [b'{"jsonrpc":"2.0","id":"x","result":{"requestState":"abc", <cut by the server>',
               b'["requestState", 1]', b'"requestState"']
    client = recorder(tmp_path, out)
    try:
        exchange(client, 0, hostile_call(0, garbage, meta=META))
        assert client.close() == 0, client.stderr()
    finally:
        client.kill()
    text = out.read_text()
    assert text.count("rawBytes") == len(garbage), text
    # every reply of the cassette dribbled in chunks long enough to hold "requestState" and less than a line
    out.write_text(text.replace("steps:\n", "steps:\n          - dribble: {chunkBytes: 20, pause: 0ms}\n", 1))
    client = recorder(tmp_path, out, mode="new_episodes")
    try:
        assert client.proc.stdin is not None
        client.proc.stdin.write(b"[" * 100_000 + b"]" * 100_000 + b"\n")
        client.proc.stdin.flush()
        client.send(hostile_call(0, garbage, meta=META))  # replayed (the end marker came after the answer)
        got = client.until(lambda got: any(matches(g, "id", "request-000000") for g in got))
        assert got[:len(garbage)] == [g + b"\n" for g in garbage]
        client.send(probe(0))
        client.until(lambda got: any(matches(g, "id", "probe-000000") for g in got))
        exchange(client, 1, hostile_call(1, [], meta=META))  # new: the real server's
        status = client.close()
    finally:
        client.kill()
    err = client.stderr().decode()
    assert status == 0 and "Traceback" not in err, err
    merged = out.read_text()
    replies = yaml.safe_load(merged)["tools"][0]["replies"]
    assert "dribble" in replies[0]["steps"][0] and [r["when"]["arguments"]["n"] for r in replies] == [0, 1]
    assert check(out).returncode == 0
