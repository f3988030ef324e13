"""A grammar-based fuzzer of input lines: no line a client can send crashes the mock or silences it.

Lines are JSON generated from a grammar (plain values and JSON-RPC envelopes
around the bundled ``default`` scenario's tools), then mutated the ways hostile
or broken clients write them: missing values, numbers JSON does not allow or no
double holds, deep nesting, lone surrogates, duplicate keys, truncation,
bytes that are not UTF-8. Each line is followed by a probe request that must
be answered exactly once. It would have found the crashes on client input that
tests/wire/test_hardening_input.py pins one by one.
"""

from __future__ import annotations

import json
from typing import Any

from support.messages import META

from support.process import run_mock
from hypothesis import HealthCheck, given, settings, strategies as st

from mockmcp.core.actions import Plan, Send
from mockmcp.core.connection import Connection
from mockmcp.scenario.loader import load
from mockmcp.launch.boot import new_engine

from support.fuzz import MUTATIONS, VALUES, mutated  # noqa: F401  (the generators other surfaces' fuzz tests share)


def probe(n: int) -> bytes:
    return (json.dumps({"jsonrpc": "2.0", "id": f"probe-{n}", "method": "server/discover", "params": {"_meta": META}}) + "\n").encode()


def sent_lines(conn: Connection, data: bytes) -> list[bytes]:
    out = []
    for plan in conn.receive_data(data):
        if type(plan) is Plan:
            out += [a.data for a in plan.all_actions() if type(a) is Send]
    return out


def check_output(lines: list[bytes], probes: int) -> None:
    """Every line is one JSON object; each probe is answered exactly once, successfully."""
    answered: dict[str, int] = {}
    for raw in lines:
        assert raw.endswith(b"\n") and raw.count(b"\n") == 1, raw[:200]
        msg = json.loads(raw)
        assert type(msg) is dict, raw[:200]
        rid = msg.get("id")
        if type(rid) is str and rid.startswith("probe-"):
            assert "result" in msg, msg
            answered[rid] = answered.get(rid, 0) + 1
    assert answered == {f"probe-{n}": 1 for n in range(probes)}


DEFAULT = load("default", use_cache=False)[0]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(line=mutated())
def test_fuzzed_lines_through_the_core(line: bytes) -> None:
    conn = Connection(new_engine(DEFAULT, seed=0, state_key=b"k"))
    check_output(sent_lines(conn, line + b"\n") + sent_lines(conn, probe(0)), 1)


@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(lines=st.lists(mutated(), min_size=60, max_size=80))
def test_fuzzed_lines_through_the_process(lines: list[bytes]) -> None:
    data = b"".join(line + b"\n" + probe(n) for n, line in enumerate(lines))
    proc = run_mock("run", "default", input=data, timeout=60)
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr, proc.stderr[-3000:]
    check_output(proc.stdout.splitlines(keepends=True), len(lines))
