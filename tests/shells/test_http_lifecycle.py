"""``protocol.exitAfter`` and ``--grace`` over Streamable HTTP, in the real process.

The same meaning as on stdio: ``exitAfter`` counts the messages the process writes
(each JSON body and each SSE event that carries a message, over every connection) and
exits with its status right after the Nth is written; at the end of stdin, requests
with scripted work still due get ``--grace`` seconds to finish (no new connection is
accepted meanwhile), while hangs and listen streams hold nothing up.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from support.httpmock import HttpClient, HttpMock, read_events, sse_data

SCENARIO = """\
mockmcp: 1
tools:
  - name: echo
    replies: [{steps: [{text: "{{ arguments.text }}"}]}]
  - name: steps
    replies: [{steps: [{progress: {progress: 1, total: 2}}, {progress: {progress: 2, total: 2}}, {text: done}]}]
  - name: slow
    replies: [{steps: [{sleep: 400ms}, {text: slow done}]}]
  - name: slower
    replies: [{steps: [{sleep: 30s}, {text: never}]}]
  - name: hang
    replies: [{steps: [{hang: true}]}]
"""


def _scenario(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO + extra)
    return path


def _open(mock: HttpMock, client: HttpClient, tool: str, meta: dict[str, Any] | None = None) -> Any:
    m = client.message("tools/call", {"name": tool, "arguments": {}})
    m["params"]["_meta"].update(meta or {})
    conn, resp = mock.stream(m)
    assert resp.status == 200
    return conn, resp


def test_exit_after_counts_messages_over_http(tmp_path: Path) -> None:
    with HttpMock(_scenario(tmp_path, "protocol:\n  exitAfter: {messages: 4, status: 7}\n")) as mock:
        client = HttpClient(mock, caps={})
        assert client.call("echo", text="one")["result"]["content"][0]["text"] == "one"  # 1 (a JSON body)
        conn, resp = _open(mock, client, "steps", {"progressToken": "p"})  # 2, 3 progress; 4 the answer
        got = [json.loads(d) for block in read_events(resp, 3) for d in sse_data(block + b"\n\n")]
        assert [g.get("method", "answer") for g in got] == ["notifications/progress"] * 2 + ["answer"]
        assert got[-1]["result"]["content"][0]["text"] == "done"  # the 4th was written whole
        assert mock.proc.wait(10) == 7
        conn.close()


def test_grace_lets_scripted_replies_finish_after_eof(tmp_path: Path) -> None:
    with HttpMock(_scenario(tmp_path), "--grace", "2", "--sse-keepalive", "0") as mock:
        client = HttpClient(mock, caps={})
        slow = _open(mock, client, "slow")
        slower = _open(mock, client, "slower")
        started = time.monotonic()
        mock.proc.stdin.close()  # type: ignore[union-attr]
        time.sleep(0.1)
        with pytest.raises(OSError):  # no new connection once stdin ended
            socket.create_connection((mock.host, mock.port), timeout=2).close()
        answer = json.loads(sse_data(slow[1].read())[0])
        assert answer["result"]["content"][0]["text"] == "slow done"  # finished within the grace
        assert mock.proc.wait(10) == 0
        waited = time.monotonic() - started
        assert 1.8 <= waited < 8, waited  # the grace, not the 30 s sleep
        rest = b""
        try:
            rest = slower[1].read()
        except Exception:  # (http.client: the stream cut mid-chunk)
            pass
        assert b"never" not in rest
        for conn, _ in (slow, slower):
            conn.close()


def test_hangs_and_listen_streams_hold_up_no_exit(tmp_path: Path) -> None:
    with HttpMock(_scenario(tmp_path), "--grace", "20", "--sse-keepalive", "0") as mock:
        client = HttpClient(mock, caps={})
        hang = _open(mock, client, "hang")
        conn, resp = mock.stream(client.message("subscriptions/listen", {"notifications": {"toolsListChanged": True}}))
        next(read_events(resp, 1))
        started = time.monotonic()
        assert mock.stop() == 0
        assert time.monotonic() - started < 5  # far less than the 20 s grace
        hang[0].close()
        conn.close()


def test_a_port_that_cannot_be_listened_on_is_one_line_and_status_2(tmp_path: Path) -> None:
    """The port taken by another process (before: a traceback from the listener's bind); with
    --control, the control socket bound a moment before goes too."""
    import subprocess

    from support.process import mockmcp_cmd

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        control = tmp_path / "c.sock"
        for extra in ([], ["--control", str(control)]):
            proc = subprocess.run(mockmcp_cmd("run", "default", "--http", str(port), *extra), stdin=subprocess.DEVNULL,
                                  capture_output=True, text=True, timeout=60)
            assert proc.returncode == 2 and proc.stdout == "", proc.stderr
            assert proc.stderr == f"mockmcp: error: --http: cannot listen on 127.0.0.1:{port}: Address already in use\n"
            assert not control.exists()


@pytest.mark.parametrize("stdout", ["full", "no-reader"])
def test_a_url_that_cannot_be_written_is_one_line_and_status_2(tmp_path: Path, stdout: str) -> None:
    """The URL is the first stdout line and the only way a client learns the port: a stdout on a
    full disk, or a pipe whose reader left, made it a traceback (an ExceptionGroup from the serving
    nursery). Now one line, status 2, the journal closed and the control socket gone."""
    import os
    import re
    import subprocess

    from support.process import mockmcp_cmd

    control, journal = tmp_path / "c.sock", tmp_path / "j.jsonl"
    if stdout == "full":
        out = os.open("/dev/full", os.O_WRONLY)
        reason = "No space left on device"
    else:
        read_end, out = os.pipe()
        os.close(read_end)
        reason = "Broken pipe"
    try:
        proc = subprocess.run(mockmcp_cmd("run", "default", "--http", "0", "--control", str(control),
                                          "--journal", str(journal)),
                              stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(out)
    assert proc.returncode == 2, proc.stderr
    assert re.fullmatch(r"mockmcp: error: --http: cannot write the URL http://127\.0\.0\.1:\d+/mcp to stdout "
                        rf"\({reason}\), so no client can learn it; stopping", proc.stderr.splitlines()[0]), proc.stderr
    assert "Traceback" not in proc.stderr
    assert not control.exists()
    assert journal.read_text(encoding="utf-8").count("\n") >= 1  # the start record, whole lines only
