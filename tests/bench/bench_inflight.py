"""10,000 requests in flight, each sleeping 60 s: the reader keeps reading.

A generated scenario has a ``slow`` tool (``sleep: 60s``, then an answer). All
10,000 calls are written at once, followed by one ``server/discover``: its
answer proves every call before it was read and planned, and that nothing waits
for a call to end (before the timer heap, the reader waited for one of 1,024
task slots, and the probe for the first sleeps to end: 60 s). Then a probe's
round trip with the 10,000 in flight; then a cancellation for half of them,
followed by a probe (the cancellations are read and handled at once); the peak
resident set (VmHWM) from /proc; and the time from closing stdin until the
process is gone, with 5,000 still asleep (their next wake-up is past the EOF
grace, so nothing waits for it).
"""

from __future__ import annotations

import json
import time

from _common import Server, call, mock_cmd, request, scenario_file, write_in_thread

IN_FLIGHT = 10_000

SCENARIO = """\
mockmcp: 1
server: {name: bench-inflight, version: 1.0.0}
tools:
  - name: slow
    description: Answers after a minute.
    replies:
      - steps:
          - sleep: 60s
          - text: finally
"""


def _cancel(rid: int) -> bytes:
    return (json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid}},
                       separators=(",", ":")) + "\n").encode()


def _until(s: Server, rid: str) -> int:
    """Read up to the answer to ``rid``; the number of other lines read on the way."""
    others = 0
    while True:
        msg = json.loads(s.readline())
        if msg.get("id") == rid:
            assert "result" in msg, msg
            return others
        others += 1


def bench() -> list[dict]:
    cmd = mock_cmd(scenario_file("inflight.yaml", SCENARIO))
    Server(cmd).close()  # fill the load cache
    s = Server(cmd)
    s.ask(request("first", "server/discover"))
    data = b"".join(call(i, "slow") for i in range(IN_FLIGHT)) + request("probe", "server/discover")
    t = time.perf_counter()
    th = write_in_thread(s, data)
    early = _until(s, "probe")
    taken = time.perf_counter() - t
    th.join()
    assert early == 0, f"{early} lines before the probe's answer (a call was refused or answered)"
    t = time.perf_counter()
    s.write(request("again", "server/discover"))
    early = _until(s, "again")
    round_trip = time.perf_counter() - t
    data = b"".join(_cancel(i) for i in range(0, IN_FLIGHT, 2)) + request("after-cancels", "server/discover")
    t = time.perf_counter()
    th = write_in_thread(s, data)
    early += _until(s, "after-cancels")
    cancels = time.perf_counter() - t
    th.join()
    assert early == 0, f"{early} unexpected lines"
    peak = s.rss_kib("VmHWM") / 1024
    exit_s = s.close()
    return [
        dict(name=f"{IN_FLIGHT:,} calls sleeping 60 s, then a probe: answered", value=taken * 1000, unit="ms",
             target="< 1 s", ok=taken < 1.0),
        dict(name=f"a probe's round trip with {IN_FLIGHT:,} in flight", value=round_trip * 1000, unit="ms"),
        dict(name=f"{IN_FLIGHT // 2:,} cancellations, then a probe: answered", value=cancels * 1000, unit="ms",
             target="< 1 s", ok=cancels < 1.0),
        dict(name=f"peak resident memory, {IN_FLIGHT:,} requests sleeping", value=peak, unit="MB",
             target="< 100 MB", ok=peak < 100),
        dict(name=f"exit after EOF with {IN_FLIGHT // 2:,} still sleeping", value=exit_s * 1000, unit="ms",
             target="< 1 s", ok=exit_s < 1.0),
    ]
