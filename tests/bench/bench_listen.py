"""10,000 ``subscriptions/listen`` streams, each with its own timer: time to accept them all.

A generated scenario offers ``tools.listChanged`` and a timer that emits
``tools/list_changed`` every 100 ms, three times, per stream. All 10,000 listen
requests are written at once and the figure is the time until the 10,000th
acknowledgement is read. Before core v2 every timer event walked every open
stream (quadratic: 38.6 s for 10,000); the session's index makes one event one
lookup.
"""

from __future__ import annotations

import json
import time

from _common import Server, mock_cmd, request, scenario_file, write_in_thread

STREAMS = 10_000

SCENARIO = """\
mockmcp: 1
server: {name: bench-listen, version: 1.0.0}
capabilities: {tools: {listChanged: true}}
tools: [{name: t}]
subscriptions:
  timers:
    - {after: 100ms, every: 100ms, count: 3, emit: {event: tools/list_changed}}
"""


def bench() -> list[dict]:
    cmd = mock_cmd(scenario_file("listen.yaml", SCENARIO))
    Server(cmd).close()  # fill the load cache
    s = Server(cmd)
    s.ask(request("first", "server/discover"))
    data = b"".join(request(i, "subscriptions/listen", {"notifications": {"toolsListChanged": True}}) for i in range(STREAMS))
    t = time.perf_counter()
    th = write_in_thread(s, data)
    acks = 0
    while acks < STREAMS:
        msg = json.loads(s.readline())
        acks += msg.get("method") == "notifications/subscriptions/acknowledged"
    took = time.perf_counter() - t
    th.join()
    s.close()
    return [dict(name=f"{STREAMS:,} listen streams with timers: all acknowledged", value=took * 1000, unit="ms",
                 target="< 2 s", ok=took < 2.0)]
