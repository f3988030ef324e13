"""``MockServer``'s control methods are declared, not forwarded, and drive a real mock.

Every operation of ``AsyncControl`` but ``journal`` is a method of ``MockServer`` itself
(``await mock.emit_tools_changed()``, docs/api.md); they are inherited from
``controlclient.ControlOperations``, so IDEs and ``mypy`` see them on the class. These tests
spawn ``mockmcp run --control PATH`` and drive it through those methods.
"""

from __future__ import annotations

import inspect
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.messages import request

from mockmcp.api import MockServer, prepare
from mockmcp.controlclient import AsyncControl, ControlError

SCENARIO: dict[str, Any] = {
    "mockmcp": 1,
    "tools": [{"name": "greet", "replies": [{"steps": [{"text": "hello"}]}]}],
}


def _operations() -> list[str]:
    return [n for n, v in inspect.getmembers(AsyncControl, inspect.isfunction) if not n.startswith("_") and n != "journal"]


def test_every_control_operation_is_declared_on_the_class() -> None:
    """On the class, not found at attribute lookup: what an IDE and mypy see."""
    missing = [n for n in _operations() if not inspect.isfunction(inspect.getattr_static(MockServer, n, None))]
    assert missing == []
    assert "wait_for" in dir(MockServer) and "emit_tools_changed" in dir(MockServer)
    # ``journal`` stays the file reader; the control channel's is ``mock.control.journal()``
    assert inspect.signature(MockServer.journal).parameters.keys() == {"self"}


def _line(proc: subprocess.Popen[bytes], message: dict[str, Any]) -> dict[str, Any]:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write((json.dumps(message) + "\n").encode())
    proc.stdin.flush()
    answer: dict[str, Any] = json.loads(proc.stdout.readline())
    return answer


async def test_the_servers_own_methods_drive_the_running_mock(tmp_path: Path) -> None:
    mock = prepare(SCENARIO, tmp_path, control=True)
    proc = subprocess.Popen(mock.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert await mock.get_state() == "start"
        added = await mock.add_tool({"name": "wave", "replies": [{"steps": [{"text": "o/"}]}]}, notify=False)
        assert added["key"] == "wave"
        assert await mock.emit_tools_changed() == 0  # no listen stream on stdio yet
        since = await mock.position()
        listed = _line(proc, request(1, "tools/list"))
        assert sorted(t["name"] for t in listed["result"]["tools"]) == ["greet", "wave"]
        seen = await mock.wait_for("tools/list", since=since, timeout=10)
        assert seen["id"] == 1
        with pytest.raises(ControlError) as info:
            await mock.remove_tool("nope")
        assert "no tool 'nope'" in info.value.message
        assert mock.sync.get_state() == "start"  # the blocking twin beside it
        records = (await mock.control.journal())["records"]
        assert any(r.get("message", {}).get("method") == "tools/list" for r in records)
        await mock.shutdown()
        assert proc.wait(10) == 0
    finally:
        proc.kill()
        proc.wait()
    assert mock.received("tools/list")[0]["id"] == 1  # ``journal()`` on the server reads the file


def test_without_a_control_channel_the_call_itself_says_so(tmp_path: Path) -> None:
    mock = prepare(SCENARIO, tmp_path)
    with pytest.raises(RuntimeError, match="control=True"):
        mock.emit_tools_changed()  # raised at the call, before anything is awaited
    with pytest.raises(AttributeError):
        mock.no_such_operation  # type: ignore[attr-defined]  # noqa: B018


def test_a_value_holding_a_lone_surrogate_goes_through_the_control_channel(tmp_path: Path) -> None:
    """A client under test may send ``\\ud800`` (JSON allows it): the test must be able to wait for
    that very request, and to set such a value. Before, the control client raised UnicodeEncodeError."""
    odd = "a\ud800é"
    mock = prepare(SCENARIO, tmp_path, control=True)
    proc = subprocess.Popen(mock.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert mock.sync.set_state(odd) is not None and mock.sync.get_state() == odd
        since = mock.sync.position()
        _line(proc, request(1, "tools/call", {"name": "greet", "arguments": {"who": odd}}))
        seen = mock.sync.wait_for("tools/call", arguments={"who": odd}, since=since, timeout=10)
        assert seen["params"]["arguments"]["who"] == odd
    finally:
        proc.kill()
        proc.wait()


def test_an_inline_scenario_with_a_lone_surrogate_is_refused_where_it_is_given(tmp_path: Path) -> None:
    """A Python string can hold ``"\\ud800"`` and UTF-8 cannot: ``prepare`` said UnicodeEncodeError
    from deep in ``write_text``. Now a ValueError names the string's path, and no file is left."""
    scenario = {"mockmcp": 1, "tools": [{"name": "greet", "description": "a\ud800b",
                                         "replies": [{"steps": [{"text": "hello"}]}]}]}
    with pytest.raises(ValueError, match=r"^scenario\.tools\[0\]\.description: a lone surrogate \(U\+D800\) at character 1"):
        prepare(scenario, tmp_path)
    assert not (tmp_path / "scenario.yaml").exists()
    with pytest.raises(ValueError, match=r"^scenario \(the key 'x\\udc01'\): a lone surrogate \(U\+DC01\)"):
        prepare({**SCENARIO, "x\udc01": 1}, tmp_path)
    # a character outside the BMP, written as one code point, is text like any other
    mock = prepare({**SCENARIO, "tools": [{**SCENARIO["tools"][0], "description": "\U0001f600"}]}, tmp_path)
    assert "\U0001f600" in Path(mock.scenario).read_text(encoding="utf-8")


def test_a_control_socket_moved_out_of_a_long_directory_takes_its_folder_with_it(tmp_path: Path) -> None:
    """A directory too long for a Unix socket's path puts the socket in a fresh folder of the
    system's temporary directory; each such mock left one behind, empty, for good."""
    import gc

    deep = tmp_path / ("d" * 60) / ("e" * 60)
    mock = prepare(SCENARIO, deep, control=True)
    assert mock.control_path is not None and not mock.control_path.startswith(str(tmp_path))
    folder = Path(mock.control_path).parent
    assert folder.is_dir()
    (folder / "control.sock").write_text("")  # as the mock's socket would be
    del mock
    gc.collect()
    assert not folder.exists()
