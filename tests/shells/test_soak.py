"""A soak: 100,000 mixed requests through one mock process, no lost response, no leak.

Each batch of 1,000 opens a subscription, calls a tool that notifies it, makes
800 immediate calls, 100 lists, 48 delayed calls and 50 calls that hang and are
cancelled at once, then cancels the subscription. Every answer that must come
comes exactly once, nothing comes for what was cancelled, and the resident
memory after warm-up stays within 10 percent.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time

import pytest
from support.messages import META
from support.process import direct_cmd, own_pid

SCENARIO = """\
mockmcp: 1
server: {name: soak, version: 1.0.0}
tools:
  - name: echo
    replies:
      - steps:
          - text: "{{ arguments.text }}"
  - name: slow
    replies:
      - steps:
          - sleep: 1ms
          - text: done
  - name: hang
    replies:
      - steps:
          - hang: true
  - name: refresh
    replies:
      - steps:
          - emit: {event: tools/list_changed}
          - text: refreshed
"""

BATCHES = 100
WARM = 10


def req(rid, method, params=None) -> bytes:
    p = dict(params or {})
    p["_meta"] = META
    return (json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": p}) + "\n").encode()


def cancel(rid) -> bytes:
    return (json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid}}) + "\n").encode()


def batch(b: int) -> tuple[bytes, set, str]:
    base = b * 1000
    sub = f"sub-{b}"
    out = [req(sub, "subscriptions/listen", {"notifications": {"toolsListChanged": True}}),
           req(base, "tools/call", {"name": "refresh"})]
    answered = {base}
    for i in range(1, 1000):
        rid = base + i
        kind = i % 20
        if kind < 16:
            out.append(req(rid, "tools/call", {"name": "echo", "arguments": {"text": f"soak {rid}"}}))
            answered.add(rid)
        elif kind == 16 or kind == 17:
            out.append(req(rid, "tools/list"))
            answered.add(rid)
        elif kind == 18 and i < 960:
            out.append(req(rid, "tools/call", {"name": "slow"}))
            answered.add(rid)
        else:
            out.append(req(rid, "tools/call", {"name": "hang"}))
            out.append(cancel(rid))
    out.append(cancel(sub))
    return b"".join(out), answered, sub


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for row in fh:
            if row.startswith("VmRSS:"):
                return int(row.split()[1])
    raise AssertionError("no VmRSS")


@pytest.mark.slow
def test_soak_100k_mixed_requests(tmp_path):
    path = tmp_path / "soak.yaml"
    path.write_text(SCENARIO)
    proc = subprocess.Popen(direct_cmd("run", str(path)), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, bufsize=0)  # (direct: its own memory is read below)
    fd = proc.stdout.fileno()
    pending = b""
    rss: list[int] = []
    total = 0
    started = time.monotonic()
    try:
        for b in range(BATCHES):
            data, expected, sub = batch(b)
            writer = threading.Thread(target=proc.stdin.write, args=(data,), daemon=True)
            writer.start()
            answers: dict = {}
            acks = notes = 0
            while len(answers) < len(expected) or not acks or not notes:
                chunk = os.read(fd, 1 << 20)
                assert chunk, f"the mock closed stdout in batch {b}: {proc.stderr.read()[-2000:]!r}"
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for raw in lines:
                    msg = json.loads(raw)
                    if "method" in msg:
                        assert msg["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == sub, msg
                        if msg["method"] == "notifications/subscriptions/acknowledged":
                            acks += 1
                        else:
                            assert msg["method"] == "notifications/tools/list_changed", msg
                            notes += 1
                        continue
                    rid = msg["id"]
                    assert rid in expected, f"unexpected answer {msg}"  # nothing for hang or the subscription
                    assert rid not in answers, f"answered twice: {rid}"
                    assert "result" in msg, msg
                    answers[rid] = msg
            writer.join()
            assert acks == 1 and notes == 1
            total += len(answers)
            rss.append(rss_kib(own_pid(proc.pid)))
        # A last request flushes anything stray that would have come for a cancelled id.
        proc.stdin.write(req("last", "server/discover"))
        proc.stdin.close()
        rest = pending + proc.stdout.read()
        assert [json.loads(x)["id"] for x in rest.split(b"\n") if x.strip()] == ["last"]
        assert proc.wait(10) == 0
    finally:
        proc.kill()
        proc.wait()
    elapsed = time.monotonic() - started
    warm = rss[WARM - 1]
    peak = max(rss[WARM:])
    print(f"soak: {BATCHES * 1000} requests, {total} answers in {elapsed:.1f} s; RSS warm {warm} KiB, peak {peak} KiB")
    assert total == sum(len(batch(b)[1]) for b in range(BATCHES))
    assert peak <= warm * 1.10, f"memory grew from {warm} KiB to {peak} KiB after warm-up"
