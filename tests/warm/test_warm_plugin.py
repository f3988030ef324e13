"""``pytest --mockmcp-warm``, through a real pytest run under pytest-xdist: the controller starts
one warm server that every worker's fixture spawns through, and nothing of it outlives the run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from support.process import LEAN_PYTEST_ADDOPTS, alive

INNER = '''
import json, os, subprocess
from pathlib import Path

import pytest

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"}}
DISCOVER = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": META}}) + "\\n"


@pytest.mark.parametrize("n", range(4))
def test_the_fixture_spawns_through_the_warm_server(mockmcp, n):
    server = mockmcp("default")
    prefix = json.loads(os.environ["MOCKMCP_WARM_ARGV"])
    assert server.argv[:len(prefix)] == prefix
    proc = subprocess.Popen(server.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    out, _ = proc.communicate(DISCOVER.encode(), timeout=30)
    assert json.loads(out)["id"] == 1
    server.assert_expectations()
    folder = Path(os.environ["MOCKMCP_WARM_DIR"])
    log = "".join(p.read_text() for p in folder.glob("*.log"))
    assert f" for pid {proc.pid}\\n" in log, log
    [pidfile] = folder.glob("*.pid")
    out_dir = Path(os.environ["WARM_PLUGIN_OUT"])
    (out_dir / f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}-{n}").write_text(f"{folder} {pidfile.read_text().strip()}")
'''


def test_one_warm_server_for_the_run_shared_by_the_workers_and_gone_after(tmp_path: Path) -> None:
    (tmp_path / "test_inner.py").write_text(INNER)
    out = tmp_path / "out"
    out.mkdir()
    env = {**os.environ, "PYTEST_ADDOPTS": LEAN_PYTEST_ADDOPTS, "WARM_PLUGIN_OUT": str(out)}
    env.pop("MOCKMCP_WARM_ARGV", None)
    env.pop("MOCKMCP_WARM_DIR", None)
    # warnings as errors in the controller, which starts the server: it leaves no ``Popen`` behind
    # to warn that its process is still running
    proc = subprocess.run([sys.executable, "-W", "error", "-m", "pytest", "-p", "no:cacheprovider", "-q", "-n", "2",
                           "--mockmcp-warm", "test_inner.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Warning" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    seen = {p.read_text() for p in out.iterdir()}
    assert len(list(out.iterdir())) == 4 and len(seen) == 1, seen  # one server, whichever worker ran a test
    folder, pid = seen.pop().split()
    assert not Path(folder).exists() and not alive(int(pid))
    # the summary counts the server's CPU, which `time pytest` cannot (it is not pytest's child)
    summary = re.search(r"mockmcp warm server: ([0-9.]+) CPU s with the mocks it forked", proc.stdout)
    assert summary and float(summary.group(1)) > 0, proc.stdout[-2000:]


KILLED_INNER = '''
import json, os, subprocess, time
from pathlib import Path

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"}}
DISCOVER = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": META}}) + "\\n"


def test_killed_while_a_mock_runs(mockmcp):
    server = mockmcp("default")
    proc = subprocess.Popen(server.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    proc.stdin.write(DISCOVER.encode())
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["id"] == 1  # served, and still running
    folder = Path(os.environ["MOCKMCP_WARM_DIR"])
    [pidfile] = folder.glob("*.pid")
    log = "".join(p.read_text() for p in folder.glob("*.log"))
    child = int(log.rsplit("forked ", 1)[1].split()[0])
    Path(os.environ["WARM_PLUGIN_OUT"]).write_text(f"{pidfile.read_text().strip()} {child} {folder}")
    time.sleep(600)
'''


def test_a_run_killed_by_a_signal_takes_its_warm_server_and_mocks_with_it(tmp_path: Path) -> None:
    """SIGKILL (or a CI step's time-out SIGTERM) skips the run's own stop of its warm server, which
    runs in a session of its own: it was left serving forever, with the mock it had forked. The run
    holds the write end of a pipe whose read end the server watches; the kernel closes it with the
    run, and the server stops as for ``mockmcp warm stop``, removing the folder the run made for it."""
    import signal
    import time

    from support.process import gone_within

    (tmp_path / "test_inner.py").write_text(KILLED_INNER)
    out = tmp_path / "out"
    env = {**os.environ, "PYTEST_ADDOPTS": LEAN_PYTEST_ADDOPTS, "WARM_PLUGIN_OUT": str(out)}
    env.pop("MOCKMCP_WARM_ARGV", None)
    env.pop("MOCKMCP_WARM_DIR", None)
    run = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-n", "0", "--mockmcp-warm",
                            "test_inner.py"], cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not out.exists() or len(out.read_text().split()) != 3:
            assert run.poll() is None and time.monotonic() < deadline, "the inner run ended or never served"
            time.sleep(0.05)
        server, mock, folder = out.read_text().split()
        assert alive(int(server)) and alive(int(mock))
    finally:
        run.send_signal(signal.SIGKILL)
        run.wait(30)
    try:
        assert gone_within(int(server), 20) and gone_within(int(mock), 20), (alive(int(server)), alive(int(mock)))
        assert not Path(folder).exists()  # its socket, pid file and log with it
    finally:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)  # (the killed run could not remove it)
