"""Recording 10,000 calls: the cassette is built, redacted, emitted and written in < 2 s (issue 13).

The lines of a 10,000-call session (discover, a tools/list, 10,000 distinct
``tools/call`` with their results, some with progress) are fed to the recorder as
the shell feeds them during a session, the recorder learning the secrets to redact as
they pass (timed apart: that cost is paid while the session runs), then the cassette is built, emitted and written atomically, which is
what ``mockmcp record`` does after the client disconnects (the figure). The file is
then loaded back (the fast path's time, for the record).
"""

from __future__ import annotations

import json
import os
import tempfile
import time

from _common import META

CALLS = 10_000


def session() -> list[tuple[str, bytes]]:
    lines: list[tuple[str, bytes]] = []

    def c(msg: dict) -> None:
        lines.append(("c", (json.dumps(msg) + "\n").encode()))

    def s(msg: dict) -> None:
        lines.append(("s", (json.dumps(msg) + "\n").encode()))

    c({"jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": {"_meta": META}})
    s({"jsonrpc": "2.0", "id": 0, "result": {"resultType": "complete", "supportedVersions": ["2026-07-28"],
                                             "capabilities": {"tools": {}}, "ttlMs": 0, "cacheScope": "private",
                                             "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "big", "version": "1"}}}})
    c({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": META}})
    tools = [{"name": f"tool{i}", "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}} for i in range(40)]
    s({"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete", "tools": tools, "ttlMs": 0, "cacheScope": "private"}})
    for i in range(2, CALLS + 2):
        meta = dict(META, progressToken=i)
        c({"jsonrpc": "2.0", "id": i, "method": "tools/call",
           "params": {"name": f"tool{i % 40}", "arguments": {"q": f"query {i}", "api_key": f"key-{i:06d}"}, "_meta": meta}})
        if i % 10 == 0:
            s({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": i, "progress": 1, "total": 2}})
        s({"jsonrpc": "2.0", "id": i, "result": {"resultType": "complete", "content": [{"type": "text", "text": f"answer {i}"}],
                                                 "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "big", "version": "1"}}}})
    return lines


def bench() -> list[dict]:
    from mockmcp import cassette, yamlemit
    from mockmcp.loader import load
    from mockmcp.record import HEADER, write_atomic
    from mockmcp.redact import Redactor

    lines = session()
    best_feed = best_write = best_cpu = float("inf")
    path = os.path.join(tempfile.mkdtemp(prefix="mockmcp-bench-record-"), "big.yaml")
    for _ in range(3):
        redactor = Redactor()
        rec = cassette.Recorder(redactor)  # as mockmcp record does: secrets learned as the lines pass
        t = time.perf_counter()
        for n, (side, line) in enumerate(lines):
            (rec.client_line if side == "c" else rec.server_line)(line, float(n))
        feed = time.perf_counter() - t
        t, c = time.perf_counter(), time.process_time()
        data = cassette.build(rec, cassette.Options(redactor))
        write_atomic(path, yamlemit.dump(data, header=HEADER))
        write, cpu = time.perf_counter() - t, time.process_time() - c
        best_feed, best_write, best_cpu = min(best_feed, feed), min(best_write, write), min(best_cpu, cpu)
    size = os.path.getsize(path)
    t = time.perf_counter()
    scenario, _ = load(path, use_cache=False)
    loaded = time.perf_counter() - t
    rules = sum(len(tool.replies) for tool in scenario.tools)
    assert rules == CALLS, rules
    return [
        dict(name=f"record {CALLS:,} calls: observing the lines (during the session)", value=best_feed * 1000, unit="ms"),
        dict(name=f"record {CALLS:,} calls: build + emit + write ({size / 1e6:.1f} MB)", value=best_write * 1000, unit="ms",
             target="< 2000 ms", ok=best_write < 2.0),
        dict(name="  the same, CPU time of this process (less sensitive to load)", value=best_cpu * 1000, unit="ms"),
        dict(name=f"load the {CALLS:,}-rule cassette back (check included)", value=loaded * 1000, unit="ms"),
    ]
