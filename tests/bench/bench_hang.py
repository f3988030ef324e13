"""Memory with 10,000 requests hanging in flight, and the time to exit on EOF.

A generated scenario has a ``hang`` tool (``hang: true``: never answers). All
10,000 calls are written at once, followed by one ``server/discover``: its
answer proves every call before it was read and planned. Then the peak resident
set (VmHWM) is read from /proc and stdin is closed; the figure is the time until
the process is gone (hangs are dropped at EOF, no grace period applies to them).
"""

from __future__ import annotations

import time

from _common import Server, call, mock_cmd, request, scenario_file, write_in_thread

HANGING = 10_000

SCENARIO = """\
mockmcp: 1
server: {name: bench-hang, version: 1.0.0}
tools:
  - name: hang
    description: Never answers.
    replies:
      - steps:
          - hang: true
"""


def bench() -> list[dict]:
    cmd = mock_cmd(scenario_file("hang.yaml", SCENARIO))
    Server(cmd).close()  # fill the load cache
    s = Server(cmd)
    idle_kib = None
    s.ask(request("first", "server/discover"))
    idle_kib = s.rss_kib("VmRSS")
    data = b"".join(call(i, "hang") for i in range(HANGING)) + request("last", "server/discover")
    th = write_in_thread(s, data)
    line = s.readline()
    assert b'"last"' in line, line[:200]
    th.join()
    peak = s.rss_kib("VmHWM") / 1024
    exit_s = s.close()
    return [
        dict(name="resident memory, idle after first response", value=idle_kib / 1024, unit="MB"),
        dict(name=f"peak resident memory, {HANGING:,} requests hanging", value=peak, unit="MB",
             target="< 150 MB", ok=peak < 150),
        dict(name=f"exit after EOF with {HANGING:,} hanging", value=exit_s * 1000, unit="ms",
             target="< 500 ms", ok=exit_s < 0.5),
    ]
