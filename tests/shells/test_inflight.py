"""Many requests in flight: the stdio reader keeps reading, and what they hold is bounded.

The reader used to wait for one of 1,024 task slots before it read on, so past
1,024 slow requests it read nothing (cancellations, the client's responses,
requests it could answer at once, EOF) until a slot came free: 1,100 calls of
the ``cancel`` scenario's 30 s tool, a cancellation for each and a probe got the
probe answered after about 36 s. Timed plans now run from one timer heap
(``streams.TimedPlans``) and the reader never waits for them; a bound on their
estimated memory refuses a request past it with an error instead.

The process tests run the real ``mockmcp run``; the differential test runs
generated request plans through the timer heap and through a task each (the
reference path) on trio's mock clock and compares every line and its time.
"""

from __future__ import annotations

import contextlib
import json
import queue
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import trio
import trio.testing
from support.messages import META, request
from support.process import direct_cmd, mockmcp_cmd, own_pid
from support.messages import call, cancelled, discover, line
from support.engines import engine_for
from hypothesis import given, settings, strategies as st
from support.shellharness import Harness, response_to

ROOT = Path(__file__).resolve().parents[2]


class Mock:
    """``mockmcp run`` with stdout read by a thread (so a wait can time out) and stderr in a file."""

    def __init__(self, *args: str, direct: bool = False) -> None:
        """``direct``: a fresh interpreter even under the warm server, for a test that reads the
        mock's own memory (``support.process.direct_cmd``)."""
        self.err = tempfile.TemporaryFile()
        self.proc = subprocess.Popen((direct_cmd if direct else mockmcp_cmd)("run", *args), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.err, bufsize=0, cwd=ROOT)
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        with self.proc.stdout:  # closed at its end of file: nothing else reads it
            for raw in self.proc.stdout:
                self.lines.put(raw)
        self.lines.put(b"")

    def write(self, data: bytes) -> threading.Thread:
        """Write in a thread: a mock that stops reading must not hang the test."""

        def run() -> None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write(data)
            except (BrokenPipeError, ValueError):
                pass

        th = threading.Thread(target=run, daemon=True)
        th.start()
        return th

    def until(self, rid: Any, timeout: float) -> list[dict[str, Any]]:
        """Every message up to and including the response to ``rid``, which must come within ``timeout`` s."""
        deadline = time.monotonic() + timeout
        out = []
        while True:
            try:
                raw = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no answer to {rid!r} within {timeout} s ({len(out)} other lines)") from None
            assert raw, "the mock closed stdout"
            msg: dict[str, Any] = json.loads(raw)
            out.append(msg)
            if msg.get("id") == rid and "method" not in msg:
                return out

    def end(self, timeout: float) -> tuple[int, float, list[dict[str, Any]]]:
        """Close stdin: the exit status, the seconds until the process was gone, and what it wrote meanwhile."""
        assert self.proc.stdin is not None
        t = time.monotonic()
        self.proc.stdin.close()
        status = self.proc.wait(timeout)
        took = time.monotonic() - t
        rest = []
        while (raw := self.lines.get(timeout=5)) != b"":
            rest.append(json.loads(raw))
        return status, took, rest

    def stderr(self) -> str:
        self.err.seek(0)
        return self.err.read().decode()

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()
        self.err.close()
        with contextlib.suppress(OSError):  # a broken pipe: the mock ended before reading it all
            assert self.proc.stdin is not None
            self.proc.stdin.close()


def test_past_a_thousand_slow_requests_cancels_a_probe_and_eof_are_read_at_once() -> None:
    n = 1100
    mock = Mock("cancel", "--log-level", "info")
    try:
        mock.write(line(discover("first")))
        mock.until("first", 30)  # started (a slow machine's spawn is not what is measured)
        data = b"".join(line(call(i, "long_running")) for i in range(n))
        data += b"".join(line(cancelled(i, "enough")) for i in range(n)) + line(discover("probe"))
        t = time.monotonic()
        writer = mock.write(data)
        before = mock.until("probe", 10)  # the slot-bound reader answered it after about 36 s
        took = time.monotonic() - t
        writer.join(10)
        assert [m.get("id") for m in before] == ["probe"], before[:3]  # a cancelled request gets no response
        # Each cancellation stopped its request: logged as such, and its id is free again at once.
        mock.write(line(call(0, "quick")) + line(call(n - 1, "quick")))
        answers = mock.until(n - 1, 10)
        assert [(m["id"], m["result"]["content"][0]["text"]) for m in answers] == [(0, "quick answer"), (n - 1, "quick answer")]
        status, exit_took, rest = mock.end(10)
        assert status == 0 and rest == []
        assert exit_took < 5, f"exit took {exit_took:.1f} s after EOF"
        log = mock.stderr()
        assert all(f"request {i} cancelled by the client (enough)" in log for i in range(n)), log[-2000:]
        assert "Traceback" not in log
        assert took < 10
    finally:
        mock.kill()


def test_eof_is_seen_at_once_past_a_thousand_requests_sleeping() -> None:
    """No cancellation: EOF with 1,100 calls each sleeping a minute ends the process at once (their next
    wake-up is past the grace period; the slot-bound reader never read the EOF before the first slot freed)."""
    scenario = "mockmcp: 1\nserver: {name: inflight, version: 1.0.0}\ntools:\n  - name: slow\n" \
               "    replies: [{steps: [{sleep: 60s}, {text: finally}]}]\n"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "slow.yaml"
        path.write_text(scenario)
        mock = Mock(str(path))
        try:
            mock.write(b"".join(line(call(i, "slow")) for i in range(1100)) + line(discover("probe")))
            assert [m.get("id") for m in mock.until("probe", 10)] == ["probe"]
            status, took, rest = mock.end(10)
            assert status == 0 and rest == []
            assert took < 5, f"exit took {took:.1f} s after EOF"
        finally:
            mock.kill()


BIG = 64 * 1024


def test_past_the_memory_bound_a_request_is_refused_at_once() -> None:
    """Plans that would hold more than the bound are refused with an error, the others keep running, the reader
    reads on, and a cancellation gives the place back."""
    scenario = (
        "mockmcp: 1\nserver: {name: inflight-big, version: 1.0.0}\ntools:\n"
        f"  - name: big\n    replies: [{{steps: [{{sleep: 60s}}, {{text: {'x' * BIG}}}]}}]\n"
        "  - name: soon\n    replies: [{steps: [{sleep: 10ms}, {text: soon}]}]\n"
    )
    n = 1000  # each holds 64 KiB and is estimated at twice that: about 370 fit in the 48 MiB bound
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.yaml"
        path.write_text(scenario)
        mock = Mock(str(path), direct=True)  # (its memory is read below)
        try:
            mock.write(b"".join(line(call(i, "big")) for i in range(n)) + line(discover("probe")))
            before = mock.until("probe", 20)[:-1]
            refused = {m["id"] for m in before}
            assert 100 < len(refused) < n - 100, len(refused)  # some ran, the rest were refused
            assert refused == set(range(n - len(refused), n))  # the later ones, once the bound was reached
            for m in before:
                assert m["error"]["code"] == -32603, m
                assert "too many requests in flight" in m["error"]["message"], m
            assert _rss_kib(own_pid(mock.proc.pid)) < 300 * 1024
            admitted = n - len(refused)
            mock.write(b"".join(line(cancelled(i)) for i in range(admitted)) + line(call("after", "soon")))
            (answer,) = mock.until("after", 10)
            assert answer["result"]["content"][0]["text"] == "soon"  # admitted: the places were given back
            status, took, rest = mock.end(10)
            assert status == 0 and rest == [] and took < 5
            assert "too many requests in flight" in mock.stderr()
        finally:
            mock.kill()


def _rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for row in fh:
            if row.startswith("VmHWM:"):
                return int(row.split()[1])
    raise AssertionError("no VmHWM")


# ---------------------------------------------------------------- the heap against a task per plan

step = st.one_of(
    st.builds(lambda n: f"{{sleep: {n * 10}ms}}", st.integers(0, 30)),
    st.just('{progress: {progress: "{{ index }}"}}'),
    st.just("{emit: {event: tools/list_changed}}"),
    st.just("{log: {level: info, data: tick}}"),
)
ending = st.sampled_from(["{text: done}", "{error: {code: -32000, message: nope}}", "{hang: true}",
                          "{raw: '{\"jsonrpc\":\"2.0\",\"method\":\"x\"}'}, {text: after-raw}",
                          "{stderr: hi}, {text: after-stderr}"])


@st.composite
def tools(draw: Any) -> str:
    steps = draw(st.lists(step, max_size=3))
    times = draw(st.sampled_from([1, 3, 300, 300]))  # 300: past the eager budget, the rest pulled lazily
    inner = draw(st.lists(step, min_size=1, max_size=2))
    loop = f"{{loop: {{times: {times}, steps: [{', '.join(inner)}]}}}}" if draw(st.integers(0, 3)) else None
    return ", ".join([*steps, *([loop] if loop else []), draw(ending)])


@st.composite
def scenarios(draw: Any) -> str:
    bodies = draw(st.lists(tools(), min_size=1, max_size=3))
    return "\n".join([
        "mockmcp: 1",
        "server: {name: inflight, version: 1.0.0}",
        "capabilities: {tools: {listChanged: true}, logging: {}}",
        "tools:",
        *[f"  - name: t{n}\n    replies: [{{steps: [{body}]}}]" for n, body in enumerate(bodies)],
    ]) + "\n"


@st.composite
def clients(draw: Any) -> list[tuple[int, dict[str, Any]]]:
    """(virtual milliseconds, message) in time order.

    A request's scripted times fall on multiples of ten milliseconds after it (an odd millisecond), its
    cancellation five milliseconds off them: a cancel never ties with what it cancels (at one instant,
    either path may run the plan's next step or the cancel first)."""
    script: list[tuple[int, dict[str, Any]]] = [
        (1, {"jsonrpc": "2.0", "id": "l", "method": "subscriptions/listen",
             "params": {"notifications": {"toolsListChanged": True}, "_meta": META}}),
    ]
    for rid in range(draw(st.integers(1, 6))):
        at = draw(st.integers(1, 200)) * 2 + 1
        meta = {**META, "progressToken": f"p{rid}", "io.modelcontextprotocol/logLevel": "info"}
        script.append((at, {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                            "params": {"name": f"t{draw(st.integers(0, 2))}", "arguments": {}, "_meta": meta}}))
        if draw(st.booleans()):
            script.append((at + 5 + draw(st.integers(0, 150)) * 10, cancelled(rid)))
    script.sort(key=lambda e: e[0])
    return script


def _run(yaml_text: str, script: list[tuple[int, dict[str, Any]]], *, timed: bool) -> list[tuple[float, bytes]]:
    async def main() -> list[tuple[float, bytes]]:
        async with trio.open_nursery() as nursery:
            h = await Harness(engine_for(yaml_text), log_level="quiet", timed_streams=timed).start(nursery)
            start = trio.current_time()
            for ms, msg in script:
                await trio.sleep_until(start + ms / 1000)
                await h.send(msg)
            # Most scripts have run out by then (the others are cut after the EOF grace); half a
            # millisecond off so that the grace's end never ties with a scripted wake-up.
            await trio.sleep(10.0005)
            await h.send(request("end", "server/discover"))
            while not any(b'"id":"end"' in raw for _, raw in h.lines):  # (raw steps' lines need not parse)
                await trio.sleep(0.0001)
            await h.eof()
            await h.done.wait()
            nursery.cancel_scope.cancel()
        return [(round(t - start, 6), raw) for t, raw in h.lines]

    return trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def _by_request(lines: list[tuple[float, bytes]]) -> dict[str, list[tuple[float, bytes]]]:
    out: dict[str, list[tuple[float, bytes]]] = {}
    for t, raw in lines:
        try:
            msg = json.loads(raw)
        except ValueError:
            msg = None
        if type(msg) is not dict:
            key = "raw"
        else:
            params = msg.get("params") or {}
            key = json.dumps(params.get("progressToken", msg.get("id", msg.get("method"))))
        out.setdefault(key, []).append((t, raw))
    return out


@settings(max_examples=100, deadline=None, derandomize=True)
@given(scenarios(), clients())
def test_the_timer_heap_writes_what_a_task_per_plan_writes(yaml_text: str, script: list[tuple[int, dict[str, Any]]]) -> None:
    heap = _run(yaml_text, script, timed=True)
    tasks = _run(yaml_text, script, timed=False)
    assert sorted(heap) == sorted(tasks)  # the same lines at the same virtual times
    assert _by_request(heap) == _by_request(tasks)  # and in the same order for each request


def test_the_heap_runs_request_plans_and_hands_a_lazy_rest_to_a_task() -> None:
    """The differential test compares two paths only if the heap one runs request plans (and hands over)."""
    yaml_text = "\n".join([
        "mockmcp: 1", "server: {name: s, version: 1.0.0}", "tools:",
        "  - name: slow",
        "    replies: [{steps: [{sleep: 1s}, {text: done}]}]",
        "  - name: loop",
        "    replies: [{steps: [{loop: {times: 300, steps: [{sleep: 10ms}]}}, {stderr: handed}, {sleep: 1s}, {text: ok}]}]",
        "",
    ])

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            h = await Harness(engine_for(yaml_text), log_level="quiet").start(nursery)
            await h.send(call(1, "slow"), call(2, "loop"))
            await h.probe()
            shell = h.shell
            assert shell.streams is not None
            assert 1 in shell.streams and 2 in shell.streams and not shell.scopes  # no task, no cancel scope
            await trio.sleep(3.5)  # the loop's 300 sleeps are over: its stderr step needs a task
            assert 2 not in shell.streams and 2 in shell.scopes
            assert b"handed" in b"".join(h.stderr)
            assert (await h.next())["id"] == 1  # (at 1 s)
            await h.send(cancelled(2))
            await h.silent_for(5)
            assert shell.in_flight == 0 and shell.load == 0 and shell.busy == 0
            await h.eof()
            nursery.cancel_scope.cancel()

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_the_grace_still_bounds_a_plan_that_keeps_working_after_eof() -> None:
    """A plan whose next step falls within the grace runs on until the grace ends (then it is cut); one that
    sleeps past it is dropped at once."""
    yaml_text = "\n".join([
        "mockmcp: 1", "server: {name: s, version: 1.0.0}", "tools:",
        "  - name: ticks",
        "    replies: [{steps: [{loop: {times: 100, steps: [{sleep: 100ms}, {progress: {progress: '{{ index }}'}}]}}, {text: done}]}]",
        "  - name: late",
        "    replies: [{steps: [{sleep: 5s}, {text: late}]}]",
        "",
    ])

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            h = await Harness(engine_for(yaml_text), log_level="quiet", grace=1.0).start(nursery)
            await h.send(call(1, "ticks", meta={"progressToken": "t"}), call(2, "late"))
            await h.probe()
            t0 = trio.current_time()
            await h.eof()
            await h.done.wait()
            # Within the grace, not the loop's 10 s: after its last tick before the grace's end
            # (its next one would fall past it, so it was cut then).
            assert 0.9 < trio.current_time() - t0 <= 1.0
            after = [json.loads(raw) for t, raw in h.lines if t > t0]
            assert [m["params"]["progress"] for m in after] == list(range(1, 11))  # it worked on meanwhile
            nursery.cancel_scope.cancel()

        async with trio.open_nursery() as nursery:
            h = await Harness(engine_for(yaml_text), log_level="quiet", grace=1.0).start(nursery)
            await h.send(call(2, "late"))
            await h.probe()
            t0 = trio.current_time()
            await h.eof()
            await h.done.wait()
            assert trio.current_time() == t0  # it could not finish within the grace: dropped at once
            nursery.cancel_scope.cancel()

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))

