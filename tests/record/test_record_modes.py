"""``mockmcp record``'s modes and its bad input, through the real command (subprocesses).

The real server is the official SDK's (tests/servers/sdk_server.py) where the mode
matters, and a few lines of Python where the point is a server that misbehaves
(garbage on stdout, exiting at once) or a command that does not exist.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from support.messages import line, request
from support import zygote
from support.process import mockmcp_prefix
from support.rawservers import GARBAGE_SERVER

pytestmark = pytest.mark.usefixtures("zygote")

SERVER = zygote.command("sdk_server.py")  # through this worker's fork server (support.zygote)
ECHO_HI = request(2, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})
ECHO_NEW = request(3, "tools/call", {"name": "echo", "arguments": {"text": "new"}})


def record(cassette: Path, *args: str, input: bytes = b"", server: list[str] = SERVER,
           timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    """Run ``mockmcp record`` like a client does: write the requests, keep stdin open until each is
    answered (the SDK's server drops requests in flight when its stdin closes), then close it."""
    cmd = [*mockmcp_prefix(), "record", "-o", str(cassette), *args, "--", *server]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    ids = {json.loads(raw)["id"] for raw in input.splitlines()}
    out: list[bytes] = []
    try:
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.write(input)
            proc.stdin.flush()
        deadline = time.monotonic() + timeout
        while ids and time.monotonic() < deadline:
            raw = proc.stdout.readline()
            if not raw:
                break
            out.append(raw)
            with contextlib.suppress(ValueError):
                ids.discard(json.loads(raw).get("id"))
        rest, err = proc.communicate(timeout=timeout)  # closes stdin: the client leaves
    finally:
        proc.kill()
    return subprocess.CompletedProcess(cmd, proc.returncode, b"".join(out) + rest, err)


def answers(proc: subprocess.CompletedProcess[bytes]) -> dict[Any, Any]:
    return {m["id"]: m for m in map(json.loads, proc.stdout.splitlines()) if "id" in m}


def text(answer: dict[str, Any]) -> str:
    return str(answer["result"]["content"][0]["text"])


def test_modes_once_none_all_and_new_episodes(tmp_path: Path) -> None:
    cassette = tmp_path / "c.yaml"
    proc = record(cassette, "--mode", "none", input=line(ECHO_HI))
    assert proc.returncode == 2 and b"does not exist" in proc.stderr and not proc.stdout
    proc = record(cassette, input=line(ECHO_HI))  # once, missing: records
    assert proc.returncode == 0, proc.stderr
    assert text(answers(proc)[2]) == "echo: hi"
    # Mark the recorded answer, so a replayed answer shows it.
    cassette.write_text(cassette.read_text().replace('"echo: hi"', '"echo: hi (from the cassette)"'))
    for mode in ("once", "none"):
        proc = record(cassette, "--mode", mode, input=line(ECHO_HI) + line(ECHO_NEW))
        got = answers(proc)
        assert text(got[2]) == "echo: hi (from the cassette)"
        assert "error" in got[3] and "new" in json.dumps(got[3]["error"]), got[3]  # unrecorded: a near miss
    proc = record(cassette, "--mode", "new_episodes", input=line(ECHO_HI) + line(ECHO_NEW))
    assert proc.returncode == 0, proc.stderr
    got = answers(proc)
    assert text(got[2]) == "echo: hi (from the cassette)"  # replayed
    assert text(got[3]) == "echo: new"  # passed to the real server
    kept = cassette.read_text()
    assert "echo: hi (from the cassette)" in kept and '"echo: new"' in kept
    proc = record(cassette, "--mode", "none", input=line(ECHO_NEW))
    assert text(answers(proc)[3]) == "echo: new"  # appended, now replayed
    proc = record(cassette, "--mode", "all", input=line(ECHO_HI))
    assert text(answers(proc)[2]) == "echo: hi"
    assert "from the cassette" not in cassette.read_text() and '"echo: new"' not in cassette.read_text()


def test_a_command_that_does_not_exist_fails_before_reading_stdin(tmp_path: Path) -> None:
    cassette = tmp_path / "c.yaml"
    cmd = [*mockmcp_prefix(), "record", "-o", str(cassette), "--", "no-such-server-xyz"]
    # stdin stays open and unwritten: a recorder that read it first would never exit
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 2 and not out
    assert b"no-such-server-xyz" in err and b"not found" in err
    assert not cassette.exists()


@pytest.mark.parametrize("mode", ["once", "new_episodes"])
def test_a_server_that_exits_at_once_fails_before_reading_stdin(tmp_path: Path, mode: str) -> None:
    cassette = tmp_path / "c.yaml"
    if mode == "new_episodes":
        cassette.write_text("mockmcp: 1\n")  # an existing cassette: new episodes need the server too
    # sh, not Python: "at once" is within relay.STARTUP_WAIT (0.2 s), which a Python interpreter's
    # own start-up can exceed on a busy machine
    cmd = [*mockmcp_prefix(), "record", "-o", str(cassette), "--mode", mode, "--", "/bin/sh", "-c", "exit 3"]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 2 and not out
    assert b"exited at once with status 3" in err, err
    assert not cassette.exists() or cassette.read_text() == "mockmcp: 1\n"


def test_garbage_from_the_server_passes_through_and_is_recorded_as_raw_steps(tmp_path: Path) -> None:
    cassette = tmp_path / "c.yaml"
    proc = record(cassette, input=line(request(1, "tools/call", {"name": "t", "arguments": {}})),
                  server=[sys.executable, "-c", GARBAGE_SERVER])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(b"garbage \x01 not json\n\xff\xfe\n{")  # unchanged, byte for byte
    replay = subprocess.run([*mockmcp_prefix(), "run", str(cassette)],
                            input=line(request(1, "tools/call", {"name": "t", "arguments": {}})), capture_output=True,
                            timeout=30)
    assert replay.stdout.startswith(b"garbage \x01 not json\n\xff\xfe\n{"), replay.stdout


BRACES_SERVER = r"""
import json, sys
for raw in sys.stdin:
    msg = json.loads(raw)
    result = {"resultType": "complete", "content": [{"type": "text", "text": "Hello {{ name }}, {{ '{{' }} and }}"}],
              "structuredContent": {"{{ key }}": ["{{", "{{ arguments.x }}"]}}
    # the same text through a JSON escape (no "{{" on the wire), and as an error's message
    line = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result})
    if msg["params"]["name"] == "escaped":
        line = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {"resultType": "complete", "content": []}})
        line = line.replace('"content": []', '"content": [{"type": "text", "text": "\\u007b\\u007b name }}"}]')
    if msg["params"]["name"] == "error":
        line = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32000, "message": "bad {{ x }}"}})
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
"""


def test_text_that_looks_like_a_template_replays_as_the_server_sent_it(tmp_path: Path) -> None:
    """Steps render {{ }} templates: a recorded "{{" must come back as "{{", not as what a template
    of the request makes of it (the tool's name, an argument, a -32602)."""
    cassette = tmp_path / "c.yaml"
    calls = b"".join(line(request(i, "tools/call", {"name": name, "arguments": {"x": 1}}))
                     for i, name in enumerate(("plain", "escaped", "error"), start=1))
    recorded = record(cassette, input=calls, server=[sys.executable, "-c", BRACES_SERVER])
    assert recorded.returncode == 0, recorded.stderr
    replay = subprocess.run([*mockmcp_prefix(), "run", str(cassette)], input=calls,
                            capture_output=True, timeout=30)
    real, again = answers(recorded), answers(replay)
    assert text(real[1]) == "Hello {{ name }}, {{ '{{' }} and }}" and text(real[2]) == "{{ name }}"
    for i in (1, 2):
        assert again[i]["result"]["content"] == real[i]["result"]["content"], again[i]
    assert again[1]["result"]["structuredContent"] == {"{{ key }}": ["{{", "{{ arguments.x }}"]}
    assert again[3]["error"] == real[3]["error"] == {"code": -32000, "message": "bad {{ x }}"}


RAW_SERVER = r"""
import json, sys
ANSWERS = {"list": {"result": ["not", "an", "object", "{{ id }}"]}, "nocontent": {"result": {"isError": False}},
           "code": {"error": {"code": "E42", "message": "bad {{"}}, "nomessage": {"error": {"code": -32000}},
           "nullmessage": {"error": {"code": -32001, "message": None}}}
for raw in sys.stdin:
    msg = json.loads(raw)
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], **ANSWERS[msg["params"]["name"]]}) + "\n")
    sys.stdout.flush()
"""


def test_an_answer_recorded_as_a_raw_step_replays_with_the_request_s_own_id(tmp_path: Path) -> None:
    """A non-object result, a tools/call result without content and an error whose code is not an
    integer or that has no message (which an error step would fill in as "Error") are replayed as
    the message the server sent (a raw step): with the id of the request
    being answered (its JSON type kept), so the same call made again, under another id, is
    answered too; the recorded "{{" still comes back as the text it was."""
    cassette = tmp_path / "c.yaml"
    names = ("list", "nocontent", "code", "nomessage", "nullmessage")
    calls = b"".join(line(request(i, "tools/call", {"name": name, "arguments": {}})) for i, name in enumerate(names, 1))
    recorded = record(cassette, input=calls, server=[sys.executable, "-c", RAW_SERVER])
    assert recorded.returncode == 0, recorded.stderr
    assert cassette.read_text().count("raw:") == 5
    sent: list[tuple[Any, str]] = [(1, "list"), ("second", "list"), (30, "list"), ("nc-a", "nocontent"),
                                   (78, "nocontent"), ("code-a", "code"), (77, "code"), (5, "nomessage"), (6, "nullmessage")]
    again = b"".join(line(request(rid, "tools/call", {"name": name, "arguments": {}})) for rid, name in sent)
    replay = subprocess.run([*mockmcp_prefix(), "run", str(cassette)], input=again, capture_output=True, timeout=30)
    got = [json.loads(raw) for raw in replay.stdout.splitlines()]
    assert [m["id"] for m in got] == [rid for rid, _ in sent], replay.stdout  # each request its own answer
    assert all(type(m["id"]) is type(rid) for m, (rid, _) in zip(got, sent))
    assert [m.get("result", m.get("error")) for m in got] == [["not", "an", "object", "{{ id }}"]] * 3 + [
        {"isError": False}] * 2 + [{"code": "E42", "message": "bad {{"}] * 2 + [{"code": -32000}, {"code": -32001, "message": None}]


ARGS_SERVER = r"""
import json, sys
for raw in sys.stdin:
    msg = json.loads(raw)
    params = dict(msg["params"])
    params.pop("_meta")
    text = "args=" + json.dumps(params.get("arguments", params), sort_keys=True)
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {"content": [{"type": "text", "text": text}]}}) + "\n")
    sys.stdout.flush()
"""


def test_a_replay_matches_recorded_arguments_exactly_at_every_depth(tmp_path: Path) -> None:
    """A call whose nested object has a key more than a recorded call's is another call: each
    replays its own answer (the rule of the smaller one once took both, exactArguments reaching
    only the top level). 1 and 1.0, which the matcher takes as equal, are one call to the
    recorder too: one rule, not a second one no request could reach."""
    cassette = tmp_path / "c.yaml"
    args: list[dict[str, Any]] = [{"filter": {"status": "open"}}, {"filter": {"status": "open", "owner": "bob"}},
                                  {"tags": [{"k": "a"}]}, {"tags": [{"k": "a", "v": "b"}]}, {"n": 1}, {"n": 1.0}]
    calls = b"".join(line(request(i, "tools/call", {"name": "t", "arguments": a})) for i, a in enumerate(args, 1))
    recorded = record(cassette, input=calls, server=[sys.executable, "-c", ARGS_SERVER])
    assert recorded.returncode == 0, recorded.stderr
    assert cassette.read_text().count("exactArguments") == 5  # (1 and 1.0: one rule)
    replay = subprocess.run([*mockmcp_prefix(), "run", str(cassette)], input=calls, capture_output=True, timeout=30)
    real, again = answers(recorded), answers(replay)
    for i in range(1, 6):
        assert text(again[i]) == text(real[i]), (i, again[i])
    assert text(again[6]) == text(real[5])  # 1.0 replays what 1 was answered
    # a nested key the recording never had is a near miss that names it
    extra = line(request(9, "tools/call", {"name": "t", "arguments": {"filter": {"status": "open", "x": 1}}}))
    missed = answers(subprocess.run([*mockmcp_prefix(), "run", str(cassette)], input=extra, capture_output=True,
                                    timeout=30))[9]
    assert "filter'.x is 1, rule wants absent" in missed["error"]["message"], missed


def test_arguments_that_look_like_matchers_replay_as_the_values_they_were(tmp_path: Path) -> None:
    """A client's mapping whose keys all start with "$" (a MongoDB-style filter) is a value, not a
    matcher: the cassette writes it as a $literal, so the call replays (it once did not: the rule
    read {"$regex": "^a"} as a regular expression), a custom method's {"$regex": "["} no longer
    makes the cassette invalid, and new_episodes still knows those calls as recorded."""
    cassette = tmp_path / "c.yaml"
    sent = [request(1, "tools/call", {"name": "t", "arguments": {"filter": {"name": {"$regex": "^a"}}}}),
            request(2, "tools/call", {"name": "t", "arguments": {"q": {"$type": "string"}, "n": [{"$gt": 1}]}}),
            request(3, "x/search", {"q": {"$regex": "["}})]
    calls = b"".join(map(line, sent))
    recorded = record(cassette, input=calls, server=[sys.executable, "-c", ARGS_SERVER])
    assert recorded.returncode == 0, recorded.stderr
    assert check_cassette(cassette).returncode == 0
    replay = subprocess.run([*mockmcp_prefix(), "run", str(cassette)], input=calls, capture_output=True, timeout=30)
    real, again = answers(recorded), answers(replay)
    for i in (1, 2, 3):
        assert text(again[i]) == text(real[i]), (i, again[i])
    # the value itself, not whatever the "matcher" would have taken
    other = line(request(4, "tools/call", {"name": "t", "arguments": {"filter": {"name": "abc"}}}))
    missed = answers(subprocess.run([*mockmcp_prefix(), "run", str(cassette)], input=other, capture_output=True,
                                    timeout=30))[4]
    assert "error" in missed, missed
    cassette.write_text(cassette.read_text().replace('args=', 'cassette: args='))
    proc = record(cassette, "--mode", "new_episodes", input=calls, server=[sys.executable, "-c", ARGS_SERVER])
    assert proc.returncode == 0, proc.stderr
    assert all(text(m).startswith("cassette: ") for m in answers(proc).values()), proc.stdout  # replayed


def check_cassette(path: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*mockmcp_prefix(), "check", str(path)], capture_output=True, timeout=60)


def test_recording_never_loses_the_old_cassette_half_way(tmp_path: Path) -> None:
    """The cassette is written to a temporary file and renamed: a killed recorder leaves the old one whole."""
    cassette = tmp_path / "c.yaml"
    cassette.write_text("old: content\n")
    cmd = [*mockmcp_prefix(), "record", "-o", str(cassette), "--mode", "all", "--", *SERVER]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(0.5)
    proc.kill()
    proc.wait(timeout=30)
    assert cassette.read_text() == "old: content\n"
    assert [p.name for p in tmp_path.iterdir()] == ["c.yaml"]


def test_a_write_that_fails_half_way_leaves_the_old_cassette_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The disk fills up (or anything else fails) after part of the new text is written: the old
    cassette is still there, unchanged, and no temporary file is left beside it."""
    from mockmcp.record import recording as record_module

    cassette = tmp_path / "c.yaml"
    cassette.write_text("old: content\n")

    def full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(record_module.os, "fsync", full)
    with pytest.raises(OSError):
        record_module.write_atomic(str(cassette), "new: content\n" * 1000)
    assert cassette.read_text() == "old: content\n"
    assert [p.name for p in tmp_path.iterdir()] == ["c.yaml"]


def test_a_cassette_that_cannot_be_written_is_a_clear_error_not_a_crash(tmp_path: Path) -> None:
    """Writable when the recording starts, a folder by its end (the server makes it, mid-session):
    the rename over it fails at the very end, said plainly, the session itself unharmed."""
    target = tmp_path / "taken"
    server = f"import os; os.mkdir({str(target)!r})\n" + SLOW_SERVER
    proc = record(target, "--mode", "all", input=line(request(1, "tools/call", {"name": "t", "arguments": {}})),
                  server=[sys.executable, "-c", server])
    assert proc.returncode == 1, proc.stderr
    assert f"cannot write {target}".encode() in proc.stderr and b"Traceback" not in proc.stderr, proc.stderr
    assert answers(proc)[1]["result"] == {"resultType": "complete", "content": []}  # the session itself went through
    assert [p.name for p in tmp_path.iterdir()] == ["taken"] and not any(target.iterdir())


@pytest.mark.parametrize("args", [["--redact", "("], ["--mode", "bogus"]])
def test_bad_options_are_usage_errors(tmp_path: Path, args: list[str]) -> None:
    proc = record(tmp_path / "c.yaml", *args)
    assert proc.returncode == 2 and proc.stderr


def test_a_cassette_edited_into_an_invalid_scenario_gets_located_errors(tmp_path: Path) -> None:
    cassette = tmp_path / "c.yaml"
    proc = record(cassette, input=line(request(1, "tools/call", {"name": "t", "arguments": {}})),
                  server=[sys.executable, "-c", GARBAGE_SERVER])
    assert proc.returncode == 0, proc.stderr
    text = cassette.read_text()
    broken = text.replace("- hang: true", "- hang: maybe") if "hang: true" in text else text.replace(
        "exactArguments: true", "exactArguments: sometimes")
    cassette.write_text(broken)
    line_no = next(i for i, ln in enumerate(broken.splitlines(), 1) if "sometimes" in ln or "maybe" in ln)
    for mode in ("once", "new_episodes"):
        proc = record(cassette, "--mode", mode, input=line(request(1, "tools/call", {"name": "t", "arguments": {}})),
                      server=[sys.executable, "-c", GARBAGE_SERVER])
        assert proc.returncode == 2 and not proc.stdout, (mode, proc.stdout)
        assert f"c.yaml:{line_no}:".encode() in proc.stderr, (mode, proc.stderr)
    assert cassette.read_text() == broken  # an invalid cassette is never overwritten by new_episodes


SLOW_SERVER = r"""
import json, sys, time
for raw in sys.stdin:
    msg = json.loads(raw)
    time.sleep(0.15)
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {"resultType": "complete", "content": []}}) + "\n")
    sys.stdout.flush()
"""


def test_keep_timing_writes_the_observed_delay(tmp_path: Path) -> None:
    cassette = tmp_path / "c.yaml"
    proc = record(cassette, "--keep-timing", input=line(request(1, "tools/call", {"name": "t", "arguments": {}})),
                  server=[sys.executable, "-c", SLOW_SERVER])
    assert proc.returncode == 0, proc.stderr
    from mockmcp.scenario import loader

    scenario, _ = loader.load(str(cassette), use_cache=False)
    sleep, result = scenario.tools[0].replies[0].steps or []
    assert 0.14 <= sleep.sleep.seconds < 5 and type(result).__name__ == "ResultStep"


def test_a_probe_only_session_writes_no_cassette(tmp_path: Path) -> None:
    """The TS client probes with server/discover in a process of its own, then opens the session in
    a second one: the probe must not leave a cassette the session's process would then replay."""
    cassette = tmp_path / "c.yaml"
    probe = request("server-discover-probe-1", "server/discover")
    proc = record(cassette, input=line(probe), server=[sys.executable, "-c", GARBAGE_SERVER])
    assert proc.returncode == 0 and not cassette.exists(), proc.stderr
    assert b"only probed" in proc.stderr
    proc = record(cassette, input=line(probe) + line(request(1, "tools/call", {"name": "t", "arguments": {}})),
                  server=[sys.executable, "-c", GARBAGE_SERVER])
    assert cassette.exists()


@pytest.mark.parametrize("mode", ["once", "all"])
def test_a_cassette_that_cannot_be_written_is_said_before_recording(tmp_path: Path, mode: str) -> None:
    """``-o`` under a file (or wherever the cassette cannot go): status 2 at once, the real server
    never started (before: the whole session was recorded, then lost with "nothing was written")."""
    marker = tmp_path / "server-started"
    started = [sys.executable, "-c", f"open({str(marker)!r}, 'w').close()"]
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    proc = record(blocker / "c.yaml", "--mode", mode, input=line(ECHO_HI), server=started)
    assert proc.returncode == 2 and proc.stdout == b"", proc.stderr
    assert proc.stderr.decode().strip() == f"mockmcp record: cannot write the cassette {blocker / 'c.yaml'}: {blocker} is not a folder"
    assert not marker.exists()
    fresh = tmp_path / "new" / "sub" / "c.yaml"  # a folder that is not there yet is made, as before
    assert "cannot write" not in record(fresh, "--mode", mode, input=line(ECHO_HI)).stderr.decode()
    assert fresh.exists() and [p.name for p in fresh.parent.iterdir()] == ["c.yaml"]  # (no probe left)
