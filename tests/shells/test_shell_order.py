"""Output order when the reader writes immediate answers itself (the ping-pong fast path).

The shell lets the reader write an immediate answer straight to stdout when the
writer task is idle. Output a task queued earlier must still come first: a
request's progress notification sent before a later line's answer keeps its place.
"""

from __future__ import annotations

import trio
from support.messages import call
from support.engines import scenario_engine
from support.shellharness import Harness

SCENARIO = """\
mockmcp: 1
server: {name: order, version: 1.0.0}
tools:
  - name: slow
    replies:
      - steps:
          - progress: {progress: 1, total: 2}
          - sleep: 1s
          - text: done
  - name: quick
    replies:
      - steps:
          - text: now
"""


async def test_a_tasks_leading_send_precedes_a_later_immediate_answer(schema, autojump_clock):
    h = Harness(scenario_engine(SCENARIO))
    async with trio.open_nursery() as nursery:
        await h.start(nursery)
        for round_ in range(3):  # the writer is idle before each round: the fast path is live
            await h.send(
                call(f"s{round_}", "slow", meta={"progressToken": f"t{round_}"}),
                call(f"q{round_}", "quick"),
            )
            out = await h.until(lambda m: m.get("id") == f"s{round_}")
            assert [m.get("id", m.get("method")) for m in out] == ["notifications/progress", f"q{round_}", f"s{round_}"]
            # and a lone immediate request goes out at once (straight from the reader)
            await h.send(call(f"x{round_}", "quick"))
            assert (await h.next())["id"] == f"x{round_}"
        await h.eof()
        await h.done.wait()
    h.check_all(schema)
