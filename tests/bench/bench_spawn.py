"""Spawn to first response: start the process, send ``server/discover``, read the answer.

Suites spawn the mock once per test, so this is the figure users pay most often.
Measured warm (the scenario's load cache is filled by a first spawn) and cold
(``--no-cache``: YAML and cattrs on every spawn). Floor and mock spawns are
interleaved so that machine noise hits both alike. One more warm figure, without a
target: the bundled ``faults`` scenario, whose steps (hang, exit, raw...) are classes of
a part of the model (``model_faults``), defined only for the scenarios that use them:
its spawn creates the classes of that part too.
"""

from __future__ import annotations

import time

from _common import Server, floor_cmd, median, mock_cmd, request

SPAWNS = 31  # a shared VM moves a single spawn by tens of ms: fewer spawns, a median that wanders


def spawn_once(cmd: list[str]) -> float:
    s = Server(cmd)
    s.write(request(1, "server/discover"))
    line = s.readline()
    took = time.perf_counter() - s.t0
    assert b'"result"' in line, line
    s.close()
    return took


def bench() -> list[dict]:
    floor_cmd_, warm_cmd, cold_cmd = floor_cmd(), mock_cmd("default"), mock_cmd("default", "--no-cache")
    faults_cmd = mock_cmd("faults")
    spawn_once(warm_cmd)  # fill the load cache and the OS page cache
    spawn_once(faults_cmd)
    spawn_once(floor_cmd_)
    floor, warm, cold, faults = [], [], [], []
    for _ in range(SPAWNS):
        floor.append(spawn_once(floor_cmd_))
        warm.append(spawn_once(warm_cmd))
        cold.append(spawn_once(cold_cmd))
        faults.append(spawn_once(faults_cmd))
    f = median(floor)
    return [
        dict(name="spawn to first response (floor)", value=f * 1000, unit="ms"),
        dict(name="spawn to first response, default, cache warm", value=median(warm) * 1000, unit="ms",
             ratio=median(warm) / f, target="<= 1.15x floor", ok=median(warm) / f <= 1.15),
        dict(name="spawn to first response, default, --no-cache", value=median(cold) * 1000, unit="ms",
             ratio=median(cold) / f, target="<= 1.5x floor", ok=median(cold) / f <= 1.5),
        dict(name="spawn to first response, faults, cache warm (a part more)", value=median(faults) * 1000, unit="ms",
             ratio=median(faults) / f),
    ]
