"""The suite's fork server for real MCP servers (``support.zygote``) stands in for a direct spawn.

The record and proxy tests start the official SDKs' servers through it; these hold it to what a
direct spawn gives the process that started the command: the script's stdio, exit status, folder,
environment and arguments, a signal passed on, and nothing left running when the launcher is
killed. Without a zygote at the socket the launcher is the script itself.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from support import zygote
from support.process import gone_within

pytestmark = pytest.mark.usefixtures("zygote")

SCRIPT = """
import json, os, signal, sys, time
print(json.dumps({"argv": sys.argv[1:], "cwd": os.getcwd(), "env": os.environ.get("ZYGOTE_PROBE"),
                  "pid": os.getpid()}), flush=True)
line = sys.stdin.readline()
if line.strip() == "wait":
    time.sleep(60)
sys.exit(int(sys.argv[1]))
"""


def launch(tmp_path: Path, *args: str, socket: str = zygote.SOCKET) -> subprocess.Popen[bytes]:
    script = tmp_path / "probe.py"
    script.write_text(SCRIPT)
    return subprocess.Popen([sys.executable, zygote.__file__, socket, str(script), *args], cwd=tmp_path,
                            env={**os.environ, "ZYGOTE_PROBE": "seen"}, stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def first_line(proc: subprocess.Popen[bytes]) -> dict[str, object]:
    assert proc.stdout is not None
    return json.loads(proc.stdout.readline())


def test_the_fork_gets_the_launchers_stdio_arguments_folder_and_environment_and_its_status_is_the_launchers(tmp_path):
    proc = launch(tmp_path, "7", "more")
    seen = first_line(proc)
    assert seen["argv"] == ["7", "more"] and seen["cwd"] == str(tmp_path) and seen["env"] == "seen"
    assert seen["pid"] != proc.pid  # a fork of the zygote, not the launcher
    proc.communicate(b"go\n", timeout=30)
    assert proc.returncode == 7


def test_a_signal_to_the_launcher_reaches_the_fork_and_ends_both_as_it_would_a_direct_spawn(tmp_path):
    proc = launch(tmp_path, "0")
    pid = int(first_line(proc)["pid"])  # type: ignore[call-overload]
    assert proc.stdin is not None
    proc.stdin.write(b"wait\n")
    proc.stdin.flush()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == -signal.SIGTERM
    assert gone_within(pid, 10)


def test_killing_the_launcher_takes_its_fork_down(tmp_path):
    proc = launch(tmp_path, "0")
    pid = int(first_line(proc)["pid"])  # type: ignore[call-overload]
    proc.kill()
    proc.wait(30)
    assert gone_within(pid, 10)


def test_without_a_zygote_the_launcher_is_the_script(tmp_path):
    proc = launch(tmp_path, "3", socket=str(tmp_path / "none.sock"))
    assert first_line(proc)["pid"] == proc.pid
    proc.communicate(b"go\n", timeout=30)
    assert proc.returncode == 3
