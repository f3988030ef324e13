"""Recording 10,000 calls: the cassette is built, redacted, emitted and written in < 2 s;
a server flooding one call costs the recorder bounded memory.

The lines of a 10,000-call session (discover, a tools/list, 10,000 distinct
``tools/call`` with their results, some with progress) are fed to the recorder as
the shell feeds them during a session, the recorder learning the secrets to redact as
they pass (timed apart: that cost is paid while the session runs), then the cassette is built, emitted and written atomically, which is
what ``mockmcp record`` does after the client disconnects (the figure). The file is
then loaded back (the fast path's time, for the record).

The flood: ``mockmcp record`` in front of a small server (``FLOOD_SERVER``, below) that
answers one ``tools/call`` with 500 MB of 4 KB ``notifications/message`` lines and then
its result, read by the client as fast as it comes. A cassette keeps the first 1,000
messages of a call (within 4 MiB), so the recorder's peak RSS (VmHWM) must stay
< 100 MB whatever the server sends (it grew with what passed through: 740 MB after 10 s).
"""

from __future__ import annotations

import json
import os
import tempfile
import time

from _common import META, PY, Server, scenario_file

CALLS = 10_000
FLOOD_MB = 500
FLOOD_SERVER = """\
import json, sys
pad = "x" * 3900
log = json.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": pad}})
chunk = ((log + "\\n") * 256).encode()  # 256 lines of 4 KB: about 1 MB
for raw in sys.stdin.buffer:
    msg = json.loads(raw)
    if "id" not in msg or "method" not in msg:
        continue
    if msg["method"] == "tools/call":
        for _ in range(int(sys.argv[1])):
            sys.stdout.buffer.write(chunk)
    answer = {"jsonrpc": "2.0", "id": msg["id"], "result": {"content": [{"type": "text", "text": "done"}]}}
    sys.stdout.buffer.write((json.dumps(answer) + "\\n").encode())
    sys.stdout.buffer.flush()
"""


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
    from mockmcp.record import cassette
    from mockmcp.record import yamlemit
    from mockmcp.scenario.loader import load
    from mockmcp.record.recording import HEADER, write_atomic
    from mockmcp.record.redact import Redactor

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
        *flood(),
        dict(name=f"record {CALLS:,} calls: observing the lines (during the session)", value=best_feed * 1000, unit="ms"),
        dict(name=f"record {CALLS:,} calls: build + emit + write ({size / 1e6:.1f} MB)", value=best_write * 1000, unit="ms",
             target="< 2000 ms", ok=best_write < 2.0),
        dict(name="  the same, CPU time of this process (less sensitive to load)", value=best_cpu * 1000, unit="ms"),
        dict(name=f"load the {CALLS:,}-rule cassette back (check included)", value=loaded * 1000, unit="ms"),
    ]


def flood() -> list[dict]:
    server = scenario_file("flood_server.py", FLOOD_SERVER)
    out = os.path.join(tempfile.mkdtemp(prefix="mockmcp-bench-flood-"), "flood.yaml")
    rec = Server([PY, "-m", "mockmcp", "record", "--mode", "all", "-o", out, "--", PY, server, str(FLOOD_MB)])
    try:
        t = time.perf_counter()
        rec.write((json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                               "params": {"name": "flood", "arguments": {}, "_meta": META}}) + "\n").encode())
        rec.read_lines(FLOOD_MB * 256 + 1)  # the flood, then the answer
        took = time.perf_counter() - t
        peak = rec.rss_kib("VmHWM") / 1024
    finally:
        rec.close()
    size = os.path.getsize(out)
    return [
        dict(name=f"record: {FLOOD_MB} MB flood of 4 KB logs in a call, peak RSS", value=peak, unit="MB",
             target="< 100 MB", ok=peak < 100),
        dict(name=f"  the same, passed through (cassette {size / 1e6:.1f} MB)", value=FLOOD_MB / took, unit="MB/s"),
    ]
