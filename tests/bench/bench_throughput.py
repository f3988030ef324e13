"""Pipelined throughput (many requests written at once) and ping-pong round trip.

Pipelined: 20,000 ``tools/call`` of the default scenario's ``echo`` are written
in one go by a thread while the main thread reads the answers; the figure is
requests per second from the first byte written to the last line read.
Ping-pong: one request, wait for its answer, next; the figure is the mean round
trip. The floor answers the same bytes with a fixed result. Rounds of the floor
and the mock alternate and each keeps its best: on a shared machine noise only
ever slows a round down, so best-of compares the programs, not the neighbours.
"""

from __future__ import annotations

import statistics
import time

from _common import Server, call, floor_cmd, mock_cmd, request, write_in_thread

PIPELINED = 20_000
PINGPONG = 3_000
ROUNDS = 5


def pipelined_once(cmd: list[str], data: bytes) -> float:
    s = Server(cmd)
    s.ask(request("warm", "server/discover"))
    t = time.perf_counter()
    th = write_in_thread(s, data)
    s.read_lines(PIPELINED)
    rate = PIPELINED / (time.perf_counter() - t)
    th.join()
    s.close()
    return rate


def pingpong_once(cmd: list[str], msgs: list[bytes]) -> float:
    s = Server(cmd)
    for m in msgs[:200]:  # warm-up
        s.ask(m)
    t = time.perf_counter()
    for m in msgs:
        s.write(m)
        s.readline()
    rtt = (time.perf_counter() - t) / len(msgs)
    s.close()
    return rtt


def bench() -> list[dict]:
    """Floor and mock rounds alternate; each keeps its best round (noise only ever slows a round down)."""
    mock, floor = mock_cmd("default"), floor_cmd()
    data = b"".join(call(i, "echo", {"text": f"hello {i}"}) for i in range(PIPELINED))
    msgs = [call(i, "echo", {"text": f"hello {i}"}) for i in range(PINGPONG)]
    f_rates, m_rates, f_rtts, m_rtts = [], [], [], []
    for _ in range(ROUNDS):
        f_rates.append(pipelined_once(floor, data))
        m_rates.append(pipelined_once(mock, data))
        f_rtts.append(pingpong_once(floor, msgs))
        m_rtts.append(pingpong_once(mock, msgs))
    f_rate, m_rate, f_rtt, m_rtt = max(f_rates), max(m_rates), min(f_rtts), min(m_rtts)
    # For reference (no target): each round's mock figure against the floor's of the same round,
    # median of the rounds. Best-of compares each program's luckiest round; on a shared VM the
    # scheduler's placement of client and server is bimodal, so one lucky floor round moves it.
    rate_ratios = statistics.median(m / f for m, f in zip(m_rates, f_rates))
    rtt_ratios = statistics.median(m / f for m, f in zip(m_rtts, f_rtts))
    return [
        dict(name="pipelined tools/call (floor)", value=f_rate, unit="req/s"),
        dict(name="pipelined tools/call", value=m_rate, unit="req/s", ratio=m_rate / f_rate,
             target=">= 0.6x floor", ok=m_rate / f_rate >= 0.6),
        dict(name="  pipelined, median of the per-round ratios", value=rate_ratios, unit="x"),
        dict(name="ping-pong round trip (floor)", value=f_rtt * 1e6, unit="us"),
        dict(name="ping-pong round trip", value=m_rtt * 1e6, unit="us", ratio=m_rtt / f_rtt,
             target="<= 1.25x floor", ok=m_rtt / f_rtt <= 1.25),
        dict(name="  ping-pong, median of the per-round ratios", value=rtt_ratios, unit="x"),
    ]
