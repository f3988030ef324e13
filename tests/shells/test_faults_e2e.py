"""Every fault end to end: a real ``mockmcp run`` process on pipes.

Time bounds are generous (the machine is shared): a test about a delay checks
that it happened at all, never how precisely. Lines meant to be valid are
schema-checked; lies are compared with what the scenario asked for.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from support.paths import SCENARIOS
from support.messages import line, request
from support.process import mockmcp_cmd, run_mock


def call(rid: Any, name: str, **args: Any) -> dict[str, Any]:
    return request(rid, "tools/call", {"name": name, "arguments": args})


class Mock:
    """A spawned mock: write messages, read raw stdout chunks/lines with timeouts."""

    def __init__(self, scenario: str | Path, *args: str) -> None:
        self.proc = subprocess.Popen(
            mockmcp_cmd("run", str(scenario), "--log-level", "info", *args),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        self.chunks: queue.Queue[tuple[float, bytes]] = queue.Queue()
        self.buffer = b""
        self.stderr = b""
        self._stderr_grew = threading.Condition()
        threading.Thread(target=self._pump, daemon=True).start()
        self._err_thread = threading.Thread(target=self._pump_err, daemon=True)
        self._err_thread.start()

    def _pump(self) -> None:
        with self.proc.stdout:  # closed at its end of file: nothing else reads it
            fd = self.proc.stdout.fileno()
            while True:
                data = os.read(fd, 65536)
                self.chunks.put((time.monotonic(), data))
                if not data:
                    return

    def _pump_err(self) -> None:
        with self.proc.stderr:
            fd = self.proc.stderr.fileno()
            while True:
                data = os.read(fd, 65536)
                with self._stderr_grew:
                    self.stderr += data
                    self._stderr_grew.notify_all()
                if not data:
                    return

    def stderr_after_exit(self) -> bytes:
        self._err_thread.join(10)
        return self.stderr

    def wait_stderr(self, text: bytes, timeout: float = 30) -> None:
        """Until the mock has logged ``text`` (a condition, not a guess at how long start-up takes)."""
        with self._stderr_grew:
            assert self._stderr_grew.wait_for(lambda: text in self.stderr, timeout), self.stderr

    def send(self, *msgs: Any) -> None:
        self.proc.stdin.write(b"".join(m if isinstance(m, bytes) else line(m) for m in msgs))
        self.proc.stdin.flush()

    def close_stdin(self) -> None:
        self.proc.stdin.close()

    def chunk(self, timeout: float = 20) -> bytes:
        return self.chunks.get(timeout=timeout)[1]

    def raw_line(self, timeout: float = 20) -> bytes:
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            data = self.chunk(max(0.01, deadline - time.monotonic()))
            if not data:
                raise EOFError(self.buffer)
            self.buffer += data
        out, self.buffer = self.buffer.split(b"\n", 1)
        return out + b"\n"

    def msg(self, timeout: float = 20) -> dict[str, Any]:
        return json.loads(self.raw_line(timeout))

    def rest(self, timeout: float = 20) -> bytes:
        """Everything until stdout closes."""
        out = self.buffer
        self.buffer = b""
        while True:
            data = self.chunk(timeout)
            if not data:
                return out
            out += data

    def wait(self, timeout: float = 20) -> int:
        return self.proc.wait(timeout)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        with contextlib.suppress(OSError):  # a broken pipe: the mock ended before reading it all
            self.proc.stdin.close()


@pytest.fixture
def mocks():
    spawned: list[Mock] = []

    def spawn(scenario: str | Path, *args: str) -> Mock:
        m = Mock(scenario, *args)
        spawned.append(m)
        return m

    yield spawn
    for m in spawned:
        m.kill()


FAULTS = SCENARIOS / "faults.yaml"
LIES = SCENARIOS / "lies.yaml"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return path


# ------------------------------------------------------------ bundled `faults`


def test_hang_serves_others_and_eof_still_exits(mocks, schema):
    m = mocks(FAULTS)
    m.send(call(1, "hang"), call(2, "flaky"))
    out = m.msg()
    schema.check(out, "tools/call")
    assert out["id"] == 2
    m.close_stdin()
    assert m.wait() == 0
    assert m.rest() == b""  # the hung request never got an answer


def test_crash_exits_3_without_answering(mocks):
    m = mocks(FAULTS)
    m.send(call(1, "crash"))
    assert m.wait() == 3
    assert m.rest() == b""


def test_garbage_then_result(mocks, schema):
    m = mocks(FAULTS)
    m.send(call(1, "garbage"))
    assert m.raw_line() == b"this is not JSON\n"
    schema.check_line(m.raw_line(), "tools/call")


def test_flaky_twice_then_success(mocks, schema):
    m = mocks(FAULTS)
    codes = []
    for i in range(4):
        m.send(call(i, "flaky"))
        out = m.msg()
        schema.check(out, "tools/call")
        codes.append(out.get("error", {}).get("code"))
    assert codes == [-32603, -32603, None, None]


def test_slow_answers_after_two_seconds(mocks, schema):
    m = mocks(FAULTS)
    m.send(call(1, "slow"))
    start = time.monotonic()
    out = m.msg()
    assert time.monotonic() - start >= 1.8
    schema.check(out, "tools/call")


def test_bad_result(mocks):
    m = mocks(FAULTS)
    m.send(call(1, "bad_result"))
    out = m.msg()
    assert out["id"] == 1 and "resultType" not in out["result"]


# ------------------------------------------------------------ timing

TIMING = """
mockmcp: 1
tools:
  - name: random
    replies: [{steps: [{sleep: {min: 10ms, max: 300ms}}, {text: "{{ id }}"}]}]
  - name: dribble
    replies: [{steps: [{dribble: {chunkBytes: 16, pause: 40ms}}, {text: "a reply that arrives in pieces"}]}]
"""


def test_dribble_line_arrives_in_pieces(mocks, tmp_path, schema):
    m = mocks(write(tmp_path, TIMING))
    m.send(call(1, "dribble"))
    pieces = []
    data = b""
    while not data.endswith(b"\n"):
        t, chunk = m.chunks.get(timeout=20)
        pieces.append((t, chunk))
        data += chunk
    assert len(pieces) >= 4
    assert pieces[-1][0] - pieces[0][0] >= 0.1
    schema.check_line(data, "tools/call")


def test_random_delays_reorder_answers(mocks, tmp_path, schema):
    # Each answer waits its own drawn delay, so they come out of input order (seed
    # reproducibility is shown exactly at engine level and, with probability, end to end
    # in test_targeting; wall-clock order is too noisy to compare across runs).
    m = mocks(write(tmp_path, TIMING), "--seed", "3")
    m.send(*[call(i, "random") for i in range(8)])
    out = [m.msg() for _ in range(8)]
    for o in out:
        schema.check(o, "tools/call")
    ids = [o["id"] for o in out]
    assert sorted(ids) == list(range(8)) and ids != list(range(8))


# ------------------------------------------------------------ silence and death

DEATH = """
mockmcp: 1
tools:
  - name: pause
    replies: [{steps: [{stopReading: 1500ms}, {text: paused}]}]
  - name: stop
    replies: [{steps: [{stopReading: forever}, {text: stopped}]}]
  - name: close
    replies: [{steps: [{closeStdout: true}, {text: never seen}]}]
  - name: midline
    replies: [{steps: [{exit: {status: 4, partialBytes: 20}}]}]
  - name: echo
    replies: [{steps: [{text: "{{ id }}"}]}]
"""


def test_stop_reading_for_a_while_delays_later_requests(mocks, tmp_path, schema):
    m = mocks(write(tmp_path, DEATH))
    m.send(call(1, "pause"))
    schema.check(m.msg(), "tools/call")
    start = time.monotonic()
    m.send(call(2, "echo"))
    out = m.msg()
    schema.check(out, "tools/call")
    assert out["id"] == 2 and time.monotonic() - start >= 1.0


def test_stop_reading_forever_back_pressures_the_client(mocks, tmp_path, schema):
    m = mocks(write(tmp_path, DEATH))
    m.send(call(1, "stop"))
    schema.check(m.msg(), "tools/call")
    done = threading.Event()

    def flood() -> None:
        try:
            m.send(b"\n" * (4 * 1024 * 1024))  # blank lines: harmless if read
            done.set()
        except (BrokenPipeError, ValueError, OSError):
            pass

    threading.Thread(target=flood, daemon=True).start()
    assert not done.wait(2.0)  # the pipe filled up: the client's write blocks
    assert m.proc.poll() is None
    m.proc.send_signal(signal.SIGTERM)
    assert m.wait() is not None


def test_close_stdout_but_keep_running(mocks, tmp_path):
    m = mocks(write(tmp_path, DEATH))
    m.send(call(1, "close"))
    assert m.rest() == b""  # stdout reached EOF, with nothing written
    time.sleep(0.3)
    assert m.proc.poll() is None  # still running, still reading
    m.send(call(2, "echo"))
    m.close_stdin()
    assert m.wait() == 0


def test_exit_mid_line(mocks, tmp_path):
    m = mocks(write(tmp_path, DEATH))
    m.send(call(1, "midline"))
    assert m.wait() == 4
    assert m.rest() == b'{"jsonrpc":"2.0","id":1,"result":{'[:20]


def test_exit_after_n_lines_written(mocks, tmp_path, schema):
    m = mocks(write(tmp_path, DEATH + "protocol: {exitAfter: {messages: 2, status: 9}}\n"))
    m.send(*[call(i, "echo") for i in range(5)])
    assert m.wait() == 9
    lines = m.rest().splitlines(keepends=True)
    assert len(lines) == 2
    for raw in lines:
        schema.check_line(raw, "tools/call")


def test_ignore_eof_needs_sigterm(mocks, tmp_path):
    m = mocks(write(tmp_path, "mockmcp: 1\nprotocol: {ignoreEof: true}\n"))
    m.close_stdin()
    m.wait_stderr(b"ignoring EOF")  # it has seen the EOF (however long it took to start)
    time.sleep(1.0)
    assert m.proc.poll() is None  # and a second later it is still there
    m.proc.send_signal(signal.SIGTERM)
    assert m.wait() is not None
    err = m.stderr_after_exit()
    assert b"ignoring EOF" in err and b"received SIGTERM" in err


def test_ignore_sigterm_needs_sigkill(mocks, tmp_path):
    m = mocks(write(tmp_path, "mockmcp: 1\nprotocol: {ignoreEof: true, ignoreSigterm: true}\n"))
    m.send(request(1, "server/discover"))  # it is up and serving (the handler is installed)
    m.msg()
    m.close_stdin()
    m.proc.send_signal(signal.SIGTERM)
    time.sleep(1.0)
    assert m.proc.poll() is None
    m.proc.kill()
    assert m.wait() == -signal.SIGKILL


# ------------------------------------------------------------ lies on the wire (bundled `lies`)


def lie(mocks, name: str, rid: Any = 7, lines: int = 1) -> tuple[Mock, list[bytes]]:
    m = mocks(LIES)
    m.send(call(rid, name))
    return m, [m.raw_line() for _ in range(lines)]


def test_malformed_then_result(mocks, schema):
    _, (bad, good) = lie(mocks, "malformed", lines=2)
    with pytest.raises(ValueError):
        json.loads(bad)
    schema.check_line(good, "tools/call")


def test_split_response(mocks):
    _, (a, b) = lie(mocks, "split", lines=2)
    assert json.loads(a.rstrip(b"\n") + b) == {"jsonrpc": "2.0", "id": 7, "result": {"resultType": "complete", "content": []}}


def test_noise_then_result(mocks, schema):
    _, (noise, good) = lie(mocks, "noise", lines=2)
    assert noise == b"INFO server ready on stdio\n"
    schema.check_line(good, "tools/call")


def test_invalid_utf8(mocks):
    _, (raw,) = lie(mocks, "bad_utf8")
    assert b'"text":"\xff\xfe"' in raw
    with pytest.raises(UnicodeDecodeError):
        raw.decode()


def test_wrong_and_unknown_id(mocks, schema):
    _, (raw,) = lie(mocks, "wrong_id")
    assert json.loads(raw)["id"] == "7"
    _, (stray, good) = lie(mocks, "unknown_id", lines=2)
    assert json.loads(stray)["id"] == 987654321
    assert schema.check_line(good, "tools/call")["id"] == 7


def test_duplicate(mocks, schema):
    _, lines = lie(mocks, "duplicate", lines=2)
    assert [schema.check_line(x, "tools/call")["id"] for x in lines] == [7, 7]


def test_bad_results_and_errors(mocks):
    assert "resultType" not in json.loads(lie(mocks, "no_result_type")[1][0])["result"]
    assert json.loads(lie(mocks, "unknown_result_type")[1][0])["result"]["resultType"] == "partial"
    assert json.loads(lie(mocks, "null_message")[1][0])["error"] == {"code": -32603, "message": None}
    assert json.loads(lie(mocks, "string_code")[1][0])["error"]["code"] == "-32603"


def test_server_request_then_result(mocks, schema):
    _, (req, good) = lie(mocks, "server_request", lines=2)
    assert json.loads(req)["method"] == "sampling/createMessage"
    schema.check_line(good, "tools/call")


def test_huge_result(mocks, schema):
    _, (raw,) = lie(mocks, "huge")
    msg = schema.check_line(raw, "tools/call")
    assert len(msg["result"]["content"][0]["text"]) == 1_000_000


def test_stderr_flood(mocks, schema):
    m, (raw,) = lie(mocks, "stderr_flood")
    schema.check_line(raw, "tools/call")
    m.close_stdin()
    assert m.wait() == 0
    assert m.stderr_after_exit().count(b"mockmcp flood:") == 20000


def test_response_to_a_notification(mocks):
    m = mocks(LIES)
    m.send({"jsonrpc": "2.0", "method": "notifications/poke", "params": {}})
    out = m.msg()
    assert out["id"] is None and "result" in out


# ------------------------------------------------------------ eras and versions


def test_legacy_process(mocks):
    m = mocks(SCENARIOS / "legacy.yaml")
    m.send(request(1, "server/discover"))
    assert m.msg()["error"]["code"] == -32601
    m.send({"jsonrpc": "2.0", "id": 2, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}})
    assert m.msg()["result"]["protocolVersion"] == "2025-11-25"
    m.send({"jsonrpc": "2.0", "method": "notifications/initialized"},
           {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "hi"}}})
    assert m.msg()["result"] == {"content": [{"type": "text", "text": "hi"}]}


def test_version_retry_process(mocks, schema):
    m = mocks(SCENARIOS / "version-retry.yaml")
    m.send(request(1, "server/discover"))
    first = m.msg()
    schema.check(first)
    assert first["error"]["code"] == -32022 and first["error"]["data"]["supported"] == ["2026-07-28"]
    m.send(request(2, "server/discover"))
    schema.check(m.msg(), "server/discover")


@pytest.mark.parametrize("mode,code", [("method-not-found", -32601), ("invalid-params", -32602)])
def test_discover_error_modes_process(mocks, tmp_path, schema, mode, code):
    m = mocks(write(tmp_path, f"mockmcp: 1\nprotocol: {{discover: {mode}}}\n"))
    m.send(request(1, "server/discover"))
    out = m.msg()
    schema.check(out)
    assert out["error"]["code"] == code


def test_discover_silent_and_exit_process(mocks, tmp_path):
    m = mocks(write(tmp_path, "mockmcp: 1\nprotocol: {discover: silent}\ntools: [{name: t}]\n"))
    m.send(request(1, "server/discover"), request(2, "tools/list"))
    assert m.msg()["id"] == 2  # discover never answered, the rest served
    m = mocks(write(tmp_path, "mockmcp: 1\nprotocol: {discover: exit}\n"))
    m.send(request(1, "server/discover"))
    assert m.wait() == 1 and m.rest() == b""


def test_instant_output_keeps_input_order_before_a_later_requests_exit() -> None:
    """``garbage`` (raw bytes, then its result) and ``crash`` (exit) sent in one chunk: garbage's
    whole answer is written before the exit, every time. Its steps take no time, so the reader
    writes them in input order; run by two tasks, trio's randomised scheduling let the exit
    overtake the result about one time in four."""
    lines = b"".join(line(request(i, "tools/call", {"name": name})) for i, name in ((2, "garbage"), (3, "crash")))
    for _ in range(10):
        res = run_mock("run", "faults", input=lines)
        assert res.returncode == 3
        out = res.stdout.split(b"\n")
        assert out[0] == b"this is not JSON"
        assert json.loads(out[1])["result"]["content"][0]["text"] == "garbage survived"
