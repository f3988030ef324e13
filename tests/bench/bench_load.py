"""Load time of a large generated scenario, and the time to answer ``tools/list``.

1,000 tools with 100 rules each (100,000 rules) and 1,000 resources. The figure
is spawn to the ``tools/list`` response, cold (``--no-cache``: YAML, structuring and
the semantic checks; median of 3) and warm (load cache hit), and the time of one more
``tools/list`` on the running process.

The targets were first written as times: 3 s cold and 500 ms warm, on the machine of
the performance page, whose floor spawns in 106 ms. A time alone says more about the
machine than about mockmcp (the same tree read 2.0 s there and 3.2 s on a VM whose floor
spawns in 221 ms), so they are held as those times' ratios to the floor's spawn,
measured interleaved in this run: 28x and 4.7x. On that machine they are the same targets.
"""

from __future__ import annotations

import time

from _common import Server, floor_cmd, median, mock_cmd, request, scenario_file
from bench_spawn import spawn_once

TOOLS, RULES, RESOURCES = 1000, 100, 1000
REFERENCE_FLOOR = 0.106  # s: the floor's spawn on the performance page's machine
COLD, WARM = 3.0 / REFERENCE_FLOOR, 0.5 / REFERENCE_FLOOR  # 3 s and 500 ms there


def scenario() -> str:
    out = ["mockmcp: 1", "server: {name: bench-large, version: 1.0.0}", "tools:"]
    for t in range(TOOLS):
        out += [f"  - name: tool{t}", f"    description: Generated tool number {t}.",
                "    inputSchema: {type: object, properties: {n: {type: integer}}}", "    replies:"]
        for r in range(RULES):
            out += [f"      - when: {{arguments: {{n: {r}}}}}", f"        steps: [{{text: 'tool {t} rule {r}'}}]"]
    out.append("resources:")
    for r in range(RESOURCES):
        out += [f"  - uri: mem://bench/{r}", f"    name: resource{r}", "    mimeType: text/plain",
                f"    text: resource number {r}"]
    return "\n".join(out) + "\n"


def first_list(cmd: list[str]) -> tuple[float, float]:
    s = Server(cmd)
    reply = s.ask(request(1, "tools/list"))
    first = time.perf_counter() - s.t0
    assert len(reply["result"]["tools"]) == TOOLS, str(reply)[:300]
    t = time.perf_counter()
    s.ask(request(2, "tools/list"))
    again = time.perf_counter() - t
    s.close()
    return first, again


def bench() -> list[dict]:
    path = scenario_file("large.yaml", scenario())
    floor_ = floor_cmd()
    spawn_once(floor_)  # the OS page cache
    floors: list[float] = []
    # cold: the median of 3, as the machine's load moves a single 3 s run by a second
    cold_runs = []
    for _ in range(3):
        floors.append(spawn_once(floor_))
        cold_runs.append(first_list(mock_cmd(path, "--no-cache"))[0])
    cold = median(cold_runs)
    first_list(mock_cmd(path))  # fill the cache
    warm_runs = []
    for _ in range(5):
        floors.append(spawn_once(floor_))
        warm_runs.append(first_list(mock_cmd(path)))
    warm = median([w[0] for w in warm_runs])
    best = min(w[0] for w in warm_runs)
    again = median([w[1] for w in warm_runs])
    f = median(floors)
    return [
        dict(name="spawn to first response (floor, interleaved)", value=f * 1000, unit="ms"),
        dict(name="1,000 tools x 100 rules: spawn to tools/list, --no-cache", value=cold * 1000, unit="ms",
             ratio=cold / f, target=f"<= {COLD:.0f}x floor (3 s at 106 ms)", ok=cold / f <= COLD),
        dict(name="1,000 tools x 100 rules: same, best of 3", value=min(cold_runs) * 1000, unit="ms"),
        dict(name="1,000 tools x 100 rules: spawn to tools/list, cache warm", value=warm * 1000, unit="ms",
             ratio=warm / f, target=f"< {WARM:.1f}x floor (500 ms at 106 ms)", ok=warm / f < WARM),
        dict(name="1,000 tools x 100 rules: same, best of 5", value=best * 1000, unit="ms"),
        dict(name="1,000 tools: one more tools/list", value=again * 1000, unit="ms"),
    ]
