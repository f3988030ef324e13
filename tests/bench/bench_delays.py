"""Accuracy of scripted delays from 10 ms to 1 s.

Tools ``d10`` .. ``d1000`` sleep for that many milliseconds, then answer. Each
is called ping-pong (one at a time) several times; the error is the measured
round trip minus the scripted delay (so it includes one round trip, tens of
microseconds). Reported: median and worst error over all calls.
"""

from __future__ import annotations

import time

from _common import Server, call, median, mock_cmd, request, scenario_file

DELAYS_MS = [10, 20, 50, 100, 200, 500, 1000]
REPEATS = 5


def scenario() -> str:
    out = ["mockmcp: 1", "server: {name: bench-delays, version: 1.0.0}", "tools:"]
    for ms in DELAYS_MS:
        out += [f"  - name: d{ms}", f"    description: Sleeps {ms} ms.", "    replies:",
                "      - steps:", f"          - sleep: {ms}ms", "          - text: done"]
    return "\n".join(out) + "\n"


def bench() -> list[dict]:
    s = Server(mock_cmd(scenario_file("delays.yaml", scenario())))
    s.ask(request("warm", "server/discover"))
    errors = []
    rid = 0
    for _ in range(REPEATS):
        for ms in DELAYS_MS:
            rid += 1
            t = time.perf_counter()
            reply = s.ask(call(rid, f"d{ms}"))
            took = time.perf_counter() - t
            assert reply.get("id") == rid and "result" in reply, reply
            errors.append((took - ms / 1000) * 1000)
    s.close()
    med = median(errors)
    worst = max(errors, key=abs)
    return [
        dict(name=f"scripted delay error, median ({len(errors)} calls, 10 ms..1 s)", value=med, unit="ms",
             target="within 5 ms", ok=abs(med) <= 5),
        dict(name="scripted delay error, worst", value=worst, unit="ms"),
    ]
