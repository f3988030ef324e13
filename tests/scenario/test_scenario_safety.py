"""Scenario loading is safe: no code from YAML, no alias bombs, no files from outside, no template code.

A scenario may come from anywhere (a colleague's branch, a bug report); loading
it must never run code, exhaust memory or read files outside its own folder.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from support.process import run_mock
from support.fakelink import FakeLink, close_links  # noqa: F401  (autouse: no link outlives its test)
from support.messages import call, line, request
from support.engines import engine_for

from mockmcp.scenario.loader import load, load_text
from mockmcp.scenario.problems import LoadError

BASE = "mockmcp: 1\nserver: {name: safety, version: 1.0.0}\n"


def load_error(text: str, **kw) -> str:
    with pytest.raises(LoadError) as info:
        load_text(text, "s.yaml", **kw)
    return "\n".join(str(p) for p in info.value.problems)


@pytest.mark.parametrize(
    "tag",
    [
        "!!python/object/apply:os.system ['touch {marker}']",
        "!!python/object:os.system {{}}",
        "!!python/name:os.system",
        "!!python/object/new:subprocess.Popen [['touch', '{marker}']]",
        "!!binary aGVsbG8=",
        "!custom {{a: 1}}",
    ],
)
def test_python_and_unknown_tags_are_rejected_without_running_anything(tmp_path, tag):
    marker = tmp_path / "pwned"
    text = BASE + "description: " + tag.format(marker=marker) + "\n"
    msg = load_error(text)
    assert "unsupported YAML tag" in msg or "YAML" in msg, msg
    assert not marker.exists()


def test_alias_bomb_is_rejected_quickly_with_a_clear_error():
    bomb = [BASE + "x0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, 10):
        bomb.append(f"x{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    t = time.monotonic()
    msg = load_error("\n".join(bomb) + "\n")
    assert time.monotonic() - t < 10
    assert "alias" in msg and "bomb" in msg, msg
    assert msg.startswith("s.yaml:")


def test_recursive_alias_is_rejected():
    msg = load_error(BASE + "tools: &t\n  - name: x\n    inputSchema: *t\n")
    assert "recursive alias" in msg or "alias" in msg, msg


def test_small_aliases_are_still_fine():
    scenario, _ = load_text(
        BASE + "tools:\n  - name: a\n    inputSchema: &s {type: object}\n  - name: b\n    inputSchema: *s\n", "s.yaml"
    )
    assert [t.name for t in scenario.tools] == ["a", "b"]


def _resource_scenario(folder: Path, ref: str) -> Path:
    path = folder / "scenario.yaml"
    path.write_text(BASE + f"resources:\n  - uri: file:///data\n    name: data\n    file: {json.dumps(ref)}\n")
    return path


def test_resource_files_resolve_inside_the_scenario_folder(tmp_path):
    (tmp_path / "inside.txt").write_text("inside")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "deeper.txt").write_text("deeper")
    for ref in ("inside.txt", "sub/deeper.txt", "sub/../inside.txt"):
        load(str(_resource_scenario(tmp_path, ref)), use_cache=False)


@pytest.mark.parametrize("ref", ["../secret.txt", "sub/../../secret.txt", "link/secret.txt"])
def test_resource_files_cannot_escape_the_folder(tmp_path, ref):
    outside = tmp_path / "secret.txt"
    outside.write_text("secret")
    folder = tmp_path / "scenario"
    folder.mkdir()
    (folder / "sub").mkdir()
    (folder / "link").symlink_to(tmp_path)  # a symlink out of the folder counts as leaving it
    with pytest.raises(LoadError) as info:
        load(str(_resource_scenario(folder, ref)), use_cache=False)
    assert "leaves the scenario's folder" in str(info.value.problems[0])


def test_absolute_paths_need_the_flag(tmp_path, schema):
    outside = tmp_path / "abs.txt"
    outside.write_text("absolute content")
    folder = tmp_path / "scenario"
    folder.mkdir()
    path = _resource_scenario(folder, str(outside))
    with pytest.raises(LoadError) as info:
        load(str(path), use_cache=False)
    assert "--allow-absolute-paths" in str(info.value.problems[0])
    # End to end: refused without the flag, served with it.
    proc = run_mock("run", str(path), input=b"")
    assert proc.returncode == 2 and b"absolute paths are not allowed" in proc.stderr
    read = line(request(1, "resources/read", {"uri": "file:///data"}))
    proc = run_mock("run", str(path), "--allow-absolute-paths", input=read)
    assert proc.returncode == 0, proc.stderr
    reply = json.loads(proc.stdout)
    schema.check(reply, "resources/read")
    assert reply["result"]["contents"][0]["text"] == "absolute content"
    check = run_mock("check", str(path))
    assert check.returncode == 1 and b"absolute paths are not allowed" in check.stderr


@pytest.mark.parametrize(
    "template",
    [
        "{{ __import__('os').system('touch MARKER') }}",
        "{{ arguments.__class__.__mro__ }}",
        "{{ open('MARKER', 'w') }}",
        "{{ eval('1+1') }}",
        "{{ exec('import os') }}",
        "{{ arguments['__class__'] }}",
        "{{ lambda: 1 }}",
    ],
)
def test_templates_are_never_evaluated_as_python(tmp_path, template):
    marker = tmp_path / "pwned"
    text = BASE + (
        "tools:\n  - name: t\n    replies:\n      - steps:\n          - text: "
        + json.dumps(template.replace("MARKER", str(marker)))
        + "\n"
    )
    try:
        engine = engine_for(text)
    except LoadError as exc:  # the checker refuses unknown helpers and odd syntax: fine
        assert "template" in str(exc.problems[0]).lower() or "helper" in str(exc.problems[0]).lower()
        assert not marker.exists()
        return
    out = FakeLink(engine).send(call(1, "t"))
    assert len(out) == 1 and out[0]["id"] == 1
    assert "<class" not in json.dumps(out) and "built-in" not in json.dumps(out)
    assert not marker.exists()


def test_client_text_that_looks_like_a_template_is_echoed_verbatim(schema):
    link = FakeLink(engine_for(BASE + "tools:\n  - name: echo\n    replies:\n      - steps:\n          - text: '{{ arguments.text }}'\n"))
    sneaky = "{{ __import__('os').getcwd() }} {{ arguments }}"
    out = link.send(call(1, "echo", text=sneaky))
    schema.check(out[0], "tools/call")
    assert out[0]["result"]["content"] == [{"type": "text", "text": sneaky}]


@pytest.mark.parametrize("command", ["run", "check"])
def test_a_scenario_argument_that_never_ends_is_an_error_not_a_memory_leak(tmp_path, command):
    """``/dev/zero`` has no end and a sparse file can claim any size: the scenario file is read up
    to its bound (64 MiB) and then refused with one line naming it, in bounded time and memory."""
    sparse = tmp_path / "big.yaml"
    with open(sparse, "wb") as fh:
        fh.truncate(64 * 1024 * 1024 + 1)
    for target in ("/dev/zero", str(sparse)):
        proc = run_mock(command, target, timeout=60)
        err = proc.stderr.decode()
        assert proc.returncode == (2 if command == "run" else 1), err
        assert f"{target}: cannot read: more than 67108864 bytes, the most a scenario file may hold" in err and "Traceback" not in err


def test_a_scenario_read_from_a_pipe_still_loads(tmp_path, monkeypatch):
    """The bound counts what is read: a pipe (``<(...)``, ``/dev/stdin``) has no size to look at first."""
    from mockmcp.scenario import loadcache

    text = (Path(__file__).resolve().parents[2] / "scenarios" / "default.yaml").read_bytes()
    proc = run_mock("check", "/dev/stdin", input=text)
    assert proc.returncode == 0 and b"ok" in proc.stdout, proc.stderr
    exact = tmp_path / "exact.yaml"
    exact.write_bytes(b"x" * 10)
    monkeypatch.setattr(loadcache, "MAX_FILE_BYTES", 10)
    assert loadcache.read_scenario(exact) == b"x" * 10
    exact.write_bytes(b"x" * 11)
    with pytest.raises(OSError, match="more than 10 bytes"):
        loadcache.read_scenario(exact)
