"""What one request may cost the server.

- Loops expand lazily: a plan keeps at most ``EAGER_BUDGET`` evaluations of
  eager work, whatever the loop count, and the rest runs as the shell pulls it.
- A loop that produces nothing still lets the event loop run (it yields
  ``None``), so a nested 100000 x 100000 loop neither grows memory nor ignores
  a signal, and cancelling the request stops it (``check`` rejects literal loop
  counts that multiply past its bound; counts from the request are capped per
  loop at run time, so these tests take them from the arguments).
- Plan tasks are bounded: a client that never reads stops being read.
- Delivering an event to one stream of 10,000 costs one lookup, not a walk.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from typing import Any

import trio
import trio.testing
from support.paths import ROOT
from support.messages import call, cancelled, discover, line, listen
from support.engines import engine_for
from support.shellharness import Harness

from mockmcp.core.actions import Emit, Plan, Send
from mockmcp.core.connection import Connection
from mockmcp.core.steps import EAGER_BUDGET

LOOPS = """
mockmcp: 1
tools:
  - name: progress
    replies:
      - steps:
          - loop:
              times: "{{ arguments.n }}"
              steps:
                - progress: {progress: "{{ index }}", total: "{{ arguments.n }}"}
          - text: done
  - name: nested
    replies:
      - steps:
          - loop:
              times: "{{ arguments.n }}"
              steps:
                - loop:
                    times: "{{ arguments.n }}"
                    steps:
                      - progress: {progress: "{{ index }}"}
          - text: never
  - name: slow
    replies:
      - steps: [{sleep: 10ms}, {text: "{{ arguments.pad }}"}]
capabilities: {tools: {}}
"""


# Bounds in this module are CPU seconds of this process (time.process_time): they are about
# what the work costs, and a machine busy with other work stretches the wall clock, not that.


def test_a_huge_loop_builds_a_bounded_plan_at_once() -> None:
    conn = Connection(engine_for(LOOPS))
    t = time.process_time()
    (plan,) = conn.receive_data(line(call(1, "progress", n=10**9, meta={"progressToken": "p"})))
    elapsed = time.process_time() - t
    assert isinstance(plan, Plan)
    assert len(plan.actions) <= EAGER_BUDGET + 1
    assert plan.rest is not None and not plan.immediate
    assert elapsed < 0.5  # was ~2.3 s and ~150 MB for the capped 100,000 repetitions


def test_the_lazy_rest_continues_where_the_eager_part_stopped() -> None:
    conn = Connection(engine_for(LOOPS))
    (plan,) = conn.receive_data(line(call(1, "progress", n=1000, meta={"progressToken": "p"})))
    assert isinstance(plan, Plan)
    sends = [a for a in plan.all_actions() if isinstance(a, Send)]
    progress = [json.loads(s.data)["params"]["progress"] for s in sends[:-1]]
    assert progress == list(range(1, 1001))
    assert json.loads(sends[-1].data)["result"]["content"][0]["text"] == "done"


def test_a_template_error_in_the_eager_part_replaces_the_plan() -> None:
    yaml = """
mockmcp: 1
tools:
  - name: t
    replies:
      - steps:
          - loop:
              times: 1000
              steps:
                - progress: {progress: "{{ index }}", total: "{{ arguments.total }}"}
          - text: done
"""
    conn = Connection(engine_for(yaml))
    (plan,) = conn.receive_data(line(call(1, "t", total=5, meta={"progressToken": "p"})))
    assert isinstance(plan, Plan) and plan.rest is not None
    (bad,) = conn.receive_data(line(call(2, "t", total="x", meta={"progressToken": "p"})))
    # a bad value met in the eager part replaces the whole plan with -32602
    assert isinstance(bad, Plan) and bad.immediate
    assert json.loads(bad.actions[0].data)["error"]["code"] == -32602


def test_a_template_error_in_the_lazy_part_ends_the_plan_with_the_error() -> None:
    """Past the eager budget the request has started answering: the error is its last message."""
    yaml = """
mockmcp: 1
tools:
  - name: t
    replies:
      - steps:
          - loop:
              times: 1000
              steps:
                - progress: {progress: "{{ div(1, sub(arguments.at, index)) }}"}
          - text: done
"""
    conn = Connection(engine_for(yaml))
    at = EAGER_BUDGET + 100  # the division by zero comes in the lazy rest
    (plan,) = conn.receive_data(line(call(1, "t", at=at, meta={"progressToken": "p"})))
    assert isinstance(plan, Plan) and plan.rest is not None and not plan.immediate
    sends = [a for a in plan.all_actions() if isinstance(a, Send)]
    notes = [json.loads(s.data) for s in sends[:-1]]
    assert all(n["method"] == "notifications/progress" for n in notes)
    assert len(notes) == at - 1  # every repetition before the failing one was sent
    last = json.loads(sends[-1].data)
    assert last["id"] == 1 and last["error"]["code"] == -32602
    assert "division by zero" in last["error"]["message"] and sends[-1].final


def test_a_loop_that_sends_nothing_still_yields_to_the_event_loop() -> None:
    conn = Connection(engine_for(LOOPS))
    (plan,) = conn.receive_data(line(call(1, "nested", n=100000)))  # no progressToken: nothing is sent
    assert isinstance(plan, Plan) and plan.rest is not None
    pulled = [next(plan.rest) for _ in range(10 * EAGER_BUDGET)]
    assert all(a is None for a in pulled)  # each evaluation hands control back


async def test_cancelling_a_request_in_a_huge_loop_stops_it(autojump_clock: trio.testing.MockClock) -> None:
    h = Harness(engine_for(LOOPS))
    async with trio.open_nursery() as nursery:
        await h.start(nursery)
        await h.send(call(1, "nested", n=100000))
        # (no sleep: a task that only checkpoints keeps the mock clock from jumping)
        await h.send(cancelled(1))
        await h.send(discover(2))
        reply = await h.next()
        assert reply["id"] == 2  # the server stayed responsive, and 1 never answers
        assert 1 not in h.engine.session.in_flight
        nursery.cancel_scope.cancel()


def test_sigterm_stops_a_server_busy_in_a_nested_loop(tmp_path: Any) -> None:
    path = tmp_path / "loops.yaml"
    path.write_text(LOOPS)
    proc = subprocess.Popen(
        [sys.executable, "-m", "mockmcp", "run", str(path), "--no-cache"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(line(call(1, "nested", n=100000)) + line(discover(2)))
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["id"] == 2  # answered while the loop runs
    proc.send_signal(signal.SIGTERM)
    try:
        status = proc.wait(timeout=10)
    finally:
        proc.kill()
    assert status == 0, proc.stderr.read() if proc.stderr else ""


async def test_a_client_that_never_reads_stops_being_read(autojump_clock: trio.testing.MockClock) -> None:
    """Timed requests stop the reader once the task slots and the writer's channel are full."""
    from mockmcp.shells.stdio import Shell, StderrLog

    engine = engine_for(LOOPS)
    stdin_send, stdin_recv = trio.testing.memory_stream_one_way_pair()  # buffers all we send
    stdout_send, stdout_recv = trio.testing.lockstep_stream_one_way_pair()  # blocks: never read
    shell = Shell(Connection(engine), stdin_recv, stdout_send, log=StderrLog("quiet"), max_tasks=8)
    pad = "x" * 1000
    async with trio.open_nursery() as nursery:
        nursery.start_soon(shell.serve)
        await stdin_send.send_all(b"".join(line(call(i, "slow", pad=pad)) for i in range(10_000)))
        await trio.sleep(60)  # virtual: every request's sleep is long over
        seen = engine.session.requests_seen
        await trio.sleep(600)
        # Read: the task slots, what the writer's channel holds, and one read's worth of lines.
        assert seen == engine.session.requests_seen  # nothing more was read meanwhile
        assert seen < 200, seen
        # The marker that the wait proved something: once stdout is read, stdin is read again.
        nursery.start_soon(_drain, stdout_recv)
        with trio.fail_after(60):
            while engine.session.requests_seen == seen:
                await trio.sleep(0.01)
        nursery.cancel_scope.cancel()
    await stdout_recv.aclose()


async def _drain(stream: trio.abc.ReceiveStream) -> None:
    while await stream.receive_some():
        pass


def test_ten_thousand_streams_each_get_their_own_timer_event_fast() -> None:
    engine = engine_for("""
mockmcp: 1
tools: [{name: t}]
capabilities: {tools: {listChanged: true}}
""")
    conn = Connection(engine)
    lines = b"".join(
        line(listen(i, toolsListChanged=True))
        for i in range(10_000)
    )
    assert len(conn.receive_data(lines)) == 10_000
    t = time.process_time()
    delivered = [engine.fan_out(Emit("tools/list_changed", None, i, has_only=True)) for i in range(10_000)]
    elapsed = time.process_time() - t
    assert all(len(d) == 1 for d in delivered)
    assert json.loads(delivered[42][0].data)["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 42
    assert len(engine.fan_out(Emit("tools/list_changed"))) == 10_000
    assert elapsed < 2.0  # a walk of every stream per event took 38.6 s for these


def test_a_finished_stream_leaves_the_index() -> None:
    engine = engine_for("""
mockmcp: 1
tools: [{name: t}]
resources: [{uri: "mem://a", name: a}]
capabilities: {tools: {listChanged: true}, resources: {subscribe: true}}
""")
    conn = Connection(engine)
    conn.receive_data(line(listen("s", toolsListChanged=True, resourceSubscriptions=["mem://a"])))
    assert len(engine.fan_out(Emit("resources/updated", "mem://a"))) == 1
    assert engine.fan_out(Emit("resources/updated", "mem://b")) == []
    engine.finished("s")
    assert engine.fan_out(Emit("resources/updated", "mem://a")) == []
    assert engine.fan_out(Emit("tools/list_changed")) == []



def test_raw_bytes_with_a_request_character_outside_latin1_is_a_client_error() -> None:
    """Found by the check-implies-run property work: this crashed the process."""
    conn = Connection(engine_for("""
mockmcp: 1
tools:
  - name: t
    replies:
      - steps: [{rawBytes: "{{ arguments.a }}\\n"}, {hang: true}]
"""))
    (plan,) = conn.receive_data(line(call(1, "t", a="\u20ac")))
    assert isinstance(plan, Plan)
    assert json.loads(plan.actions[0].data)["error"]["code"] == -32602
    (ok,) = conn.receive_data(line(call(2, "t", a="caf\u00e9")))
    assert isinstance(ok, Plan) and ok.actions[0].data == b"caf\xe9\n"  # type: ignore[union-attr]


def test_a_deep_line_with_the_journal_on_is_answered_and_journaled(tmp_path: Any) -> None:
    """A guard on the journal path: a line past the nesting limit is answered and journaled
    without the verifier re-reading it deeper than the decoder allows (the verifier now
    re-reads rejected lines with the decoder's own parse, not json.loads)."""
    journal = tmp_path / "j.jsonl"
    deep = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"x":' + b"[" * 978 + b"]" * 978 + b"}}}\n"
    probe = line(discover(8))
    proc = subprocess.run(
        [sys.executable, "-m", "mockmcp", "run", "default", "--journal", str(journal), "--no-cache"],
        input=deep + probe, capture_output=True, cwd=ROOT, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    answers = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [a["id"] for a in answers] == [7, 8]
    assert answers[0]["error"]["code"] == -32602
    assert b"Traceback" not in proc.stderr
    assert journal.read_text().count("\n") >= 3

