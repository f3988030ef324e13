"""What the official clients do with the Tasks extension, against the bundled ``tasks`` scenario.

Python (mcp 2.3.0) has no Tasks extension of its own for 2026-07-28, but its
extension API (``ClientExtension`` + ``ResultClaim``) lets a client author
write one; mockmcp ships one (``mockmcp.mcp_tasks.Tasks``), and
tests/interop/python_tasks.py drives every tool of the scenario with it, on
asyncio and on trio. The TypeScript client
(2.4.0) declares the extension when asked to but rejects a ``resultType:
"task"`` answer itself (``UNSUPPORTED_RESULT_TYPE``), through ``callTool``
and through ``request`` with a custom schema alike; ``tasks/get`` reaches the
server only through ``request`` with a custom schema. docs/interop.md records
both; where a client cannot go, tests/shells/test_tasks_e2e.py drives the path with
the raw reference client.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from interop.matrix import TS_DIR
from support.process import mockmcp_cmd

pytestmark = pytest.mark.interop


def test_python_sdk_with_a_tasks_extension_drives_every_tool() -> None:
    """On asyncio and on trio, one after the other in one interpreter: what is tested is the
    extension under each backend, and the SDK's import (a second of CPU) is paid once."""
    code = (
        "import anyio, json, sys; sys.path.insert(0, 'tests/interop'); import python_tasks; "
        f"print(json.dumps({{b: anyio.run(python_tasks.drive, {mockmcp_cmd('run', 'tasks', '--time-scale', '0.05')!r}, 0.05, backend=b)"
        " for b in ('asyncio', 'trio')}))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-2000:]
    by_backend = json.loads(proc.stdout.strip().splitlines()[-1])
    assert sorted(by_backend) == ["asyncio", "trio"]
    for backend, got in by_backend.items():
        assert got["build"] == {"ok": ["built py"], "statuses": ["working"] * 3 + ["completed"]}, backend
        assert got["approve"] == {"ok": ["v9: accept"], "statuses": ["working", "input_required", "working", "completed"]}, backend
        assert got["doomed"]["task"] == "failed" and got["doomed"]["error"]["code"] == -32603, backend
        assert got["forever"]["task"] == "cancelled", backend
        assert got["quick"]["ok"] == ["quick result"] and got["deploy"]["ok"] == ["deployed"], backend
        # without the extension the SDK sends no capability: a synchronous answer, or -32021
        assert got["quick/plain"] == ["quick result"] and got["build/plain"] == -32021, backend


@pytest.mark.usefixtures("typescript_client")
def test_typescript_client_rejects_a_task_result_itself() -> None:
    proc = subprocess.run(
        ["node", str(TS_DIR / "tasks.mjs"), *mockmcp_cmd("run", "tasks")], capture_output=True, text=True, timeout=120, cwd=TS_DIR
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout)
    ext, plain = got["withExtension"], got["plain"]
    assert ext["version"] == "2026-07-28"
    # it declared the extension (the mock only answers a task then), and refused the answer
    assert ext["callTool"] == {"status": "client-error", "code": "UNSUPPORTED_RESULT_TYPE", "message": "Unsupported result type 'task' for tools/call"}
    assert ext["requestWithSchema"]["code"] == "UNSUPPORTED_RESULT_TYPE"
    assert ext["tasksGet"]["status"] == "error" and ext["tasksGet"]["code"] == -32602
    assert ext["tasksGetNoSchema"]["code"] == "METHOD_NOT_SUPPORTED_BY_PROTOCOL_VERSION"
    assert plain["quick"]["status"] == "ok" and plain["quick"]["result"]["content"][0]["text"] == "quick result"
    assert plain["build"]["code"] == -32021
