"""A client that never reads stdout while it keeps sending timed requests: resident memory.

For 20 s a thread writes ``tools/call`` requests of a tool that sleeps 10 ms and
answers 1 KB, as fast as the pipe takes them, and nobody reads the answers. Once
stdout's pipe and the mock's bounded channel and task slots are full the mock
stops reading stdin, so the writer blocks and memory stays flat (before core
v2 the reader kept starting tasks: 55 MB -> 555 MB in 20 s). The figure is the
peak resident set (VmHWM) over the run.
"""

from __future__ import annotations

import threading
import time

from _common import Server, call, mock_cmd, request, scenario_file

SECONDS = 20.0

SCENARIO = """\
mockmcp: 1
server: {name: bench-nonreader, version: 1.0.0}
tools:
  - name: slow
    replies:
      - steps: [{sleep: 10ms}, {text: "{{ arguments.pad }}"}]
"""


def bench() -> list[dict]:
    cmd = mock_cmd(scenario_file("nonreader.yaml", SCENARIO))
    Server(cmd).close()  # fill the load cache
    s = Server(cmd)
    s.ask(request("first", "server/discover"))
    stop = threading.Event()
    sent = [0]
    line = call(0, "slow", {"pad": "x" * 1000})

    def write() -> None:
        i = 0
        try:
            while not stop.is_set():
                s.write(line.replace(b'"id":0', b'"id":%d' % (i + 1), 1))
                i += 1
                sent[0] = i
        except (BrokenPipeError, ValueError, OSError):
            pass

    th = threading.Thread(target=write, daemon=True)
    th.start()
    samples = []
    t = time.perf_counter()
    while time.perf_counter() - t < SECONDS:
        time.sleep(1.0)
        samples.append(s.rss_kib("VmRSS") / 1024)
    peak = s.rss_kib("VmHWM") / 1024
    stop.set()
    s.proc.kill()
    s.proc.wait()
    th.join(5)
    return [
        dict(name=f"non-reading client, {SECONDS:.0f} s of timed requests: peak RSS", value=peak, unit="MB",
             target="< 100 MB", ok=peak < 100),
        dict(name="  requests the mock took in before it stopped reading", value=sent[0], unit="req"),
        dict(name="  RSS in the last second vs the first", value=samples[-1] - samples[0], unit="MB"),
    ]
