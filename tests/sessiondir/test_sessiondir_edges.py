"""Edges of session directories, through real ``mockmcp run --session DIR`` processes.

A named state set by one process is answered by a later one. A file of the
directory that is a folder, a FIFO or a symbolic link is refused at start-up with
one line and exit status 2 (never a traceback, never a hang, never a write
through the link). And the directory's files are fuzzed (truncated, corrupt,
wrong types, links, folders in place of files, empty files): the mock either
serves (a probe is answered) or refuses with one line and status 2.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.messages import META, line, request
from support.process import direct_cmd, run_mock
from hypothesis import HealthCheck, example, given, settings, strategies as st
from support.taskclient import TaskClient
from support.fuzz import VALUES

from mockmcp.sessiondir import layout
from mockmcp.sessiondir.connection import SessionConnection
from mockmcp.sessiondir.store import SessionStore
from mockmcp.verify.journal import read_journal
from mockmcp.verify.report import SavedVerdict

STATES = """\
mockmcp: 1
state:
  initial: locked
  states: [locked, open]
tools:
  - name: unlock
    replies:
      - steps: [{setState: open}, {text: unlocked}]
  - name: door
    replies:
      - when: {state: open}
        steps: [{text: the door is open}]
      - steps: [{text: the door is locked}]
"""


def _texts(stdout: bytes) -> dict[Any, str]:
    out = {}
    for raw in stdout.splitlines():
        msg = json.loads(raw)
        if "result" in msg:
            out[msg["id"]] = msg["result"]["content"][0]["text"]
    return out


def test_a_named_state_set_by_one_process_is_answered_by_a_later_one(tmp_path: Path) -> None:
    scenario = tmp_path / "states.yaml"
    scenario.write_text(STATES)
    session = str(tmp_path / "s")
    door = lambda rid: line(request(rid, "tools/call", {"name": "door", "arguments": {}}))  # noqa: E731
    unlock = line(request(2, "tools/call", {"name": "unlock", "arguments": {}}))

    first = run_mock("run", str(scenario), "--session", session, input=door(1) + unlock)
    assert first.returncode == 0, first.stderr.decode()
    assert _texts(first.stdout) == {1: "the door is locked", 2: "unlocked"}

    later = run_mock("run", str(scenario), "--session", session, input=door(3))
    assert later.returncode == 0, later.stderr.decode()
    assert _texts(later.stdout) == {3: "the door is open"}  # the state the first process set

    alone = run_mock("run", str(scenario), input=door(4))  # (without the session: the initial state)
    assert _texts(alone.stdout) == {4: "the door is locked"}


# ---------------------------------------------------------------- a write that fails (a full disk)


def _door(rid: Any) -> bytes:
    return line(request(rid, "tools/call", {"name": "door", "arguments": {}}))


def _opened(tmp_path: Path) -> tuple[Path, Path]:
    """The door scenario and a session in which one process unlocked it."""
    scenario = tmp_path / "states.yaml"
    scenario.write_text(STATES)
    d = tmp_path / "s"
    first = run_mock("run", str(scenario), "--session", str(d), input=line(request(1, "tools/call", {"name": "unlock", "arguments": {}})))
    assert first.returncode == 0, first.stderr.decode()
    return scenario, d


def _limited(limit: int, *args: str, input: bytes) -> subprocess.CompletedProcess[bytes]:
    """A direct spawn whose files cannot grow past ``limit`` bytes (``RLIMIT_FSIZE``, SIGXFSZ
    ignored so a write past it fails with EFBIG), as a full disk makes them: the warm server's fork
    would not inherit the limit."""
    def limit_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run(direct_cmd(*args), input=input, capture_output=True, timeout=30, preexec_fn=limit_files)


def test_a_state_log_write_that_fails_stops_the_process_with_one_line_and_leaves_the_log_whole(tmp_path: Path) -> None:
    """The log can grow by a few bytes only: the process says so in one line and exits with status
    2 without answering the change it could not save, the log is cut back to what it was, and the
    next processes serve (a torn line left there refused the session for good)."""
    scenario, d = _opened(tmp_path)
    log = d / layout.LOG
    before = log.read_bytes()
    proc = _limited(len(before) + 10, "run", str(scenario), "--session", str(d), input=_door(2))
    err = proc.stderr.decode()
    assert proc.returncode == 2 and "Traceback" not in err, err
    assert f"{log}: cannot write: File too large" in err.splitlines()[0], err
    assert proc.stdout == b""  # (not answered: no other process would have seen the change)
    assert log.read_bytes() == before
    for rid in (3, 4):
        later = run_mock("run", str(scenario), "--session", str(d), input=_door(rid))
        assert later.returncode == 0, later.stderr.decode()
        assert _texts(later.stdout) == {rid: "the door is open"}


def test_a_torn_last_line_is_cut_off_before_the_next_append(tmp_path: Path) -> None:
    """A process stopped in the middle of a line (killed, or by a full disk) left half of it in
    ``state.log`` and in ``journal.jsonl``: the next process appends after the last whole line of
    the log, and its journal records start on a line of their own (its ``start`` record is read)."""
    scenario, d = _opened(tmp_path)
    log, journal = d / layout.LOG, d / layout.JOURNAL
    whole = log.read_bytes()
    with open(log, "ab") as fh:
        fh.write(b'E {"state":"op')
    with open(journal, "ab") as fh:
        fh.write(b'{"t":1.5,"pid":1,"dir":"in","mes')
    for rid in (2, 3, 4):
        proc = run_mock("run", str(scenario), "--session", str(d), input=_door(rid))
        assert proc.returncode == 0, proc.stderr.decode()
        assert _texts(proc.stdout) == {rid: "the door is open"}
    assert log.read_bytes().startswith(whole + b"E {")
    starts = [r for r in read_journal(journal) if r["dir"] == "start"]
    assert len(starts) == 4, starts  # the first process's, and each later one's


def test_a_verdict_that_cannot_be_saved_at_exit_is_said_in_one_line(tmp_path: Path) -> None:
    """At exit on a full disk, ``judged.json`` cannot be written: one line on stderr, the exit
    status of the run, and no temporary file left in the directory."""
    scenario, d = _opened(tmp_path)
    judged = (d / layout.JUDGED).stat().st_size
    assert (d / layout.LOG).stat().st_size + 200 < judged - 20
    proc = _limited(judged - 20, "run", str(scenario), "--session", str(d), input=_door(2))
    err = proc.stderr.decode()
    assert proc.returncode == 0 and "Traceback" not in err, err
    assert "cannot save the session's verdict so far: File too large" in err, err
    assert _texts(proc.stdout) == {2: "the door is open"}
    assert [p.name for p in d.iterdir() if p.name.endswith(".tmp")] == []


# ---------------------------------------------------------------- files that are not regular files

PROBE = line(request("probe", "server/discover"))


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A session directory of the bundled ``default`` scenario, as one process left it."""
    d = tmp_path_factory.mktemp("made") / "s"
    proc = run_mock("run", "default", "--session", str(d), input=PROBE)
    assert proc.returncode == 0, proc.stderr.decode()
    return d


def _copy(made: Path, tmp_path: Path) -> Path:
    d = tmp_path / "s"
    shutil.copytree(made, d)
    return d


def _refused(proc: Any, words: str) -> None:
    err = proc.stderr.decode()
    assert proc.returncode == 2 and "Traceback" not in err, err
    assert len(err.splitlines()) == 1 and words in err, err
    assert proc.stdout == b""


@pytest.mark.parametrize("below", [False, True])
def test_a_session_path_that_is_a_file_is_refused_saying_so(tmp_path: Path, below: bool) -> None:
    """``--session FILE`` (or a path below a file) said "File exists" (or "Not a directory"): it
    says which path is a file, and that a directory is wanted."""
    afile = tmp_path / "afile"
    afile.write_text("mine\n")
    where = afile / "s" if below else afile
    said = f"{afile if below else 'it'} is a file, not a directory; give --session a directory"
    _refused(run_mock("run", "default", "--session", str(where), input=PROBE), said)
    assert afile.read_text() == "mine\n"


@pytest.mark.parametrize("name", layout.FILES)
def test_a_session_file_that_is_a_folder_is_refused_with_one_line(made: Path, tmp_path: Path, name: str) -> None:
    d = _copy(made, tmp_path)
    target = d / name
    if target.exists():
        target.unlink()
    target.mkdir()
    _refused(run_mock("run", "default", "--session", str(d), input=PROBE), f"{name}: is a folder, not a regular file")


@pytest.mark.parametrize("kind", ["folder", "link"])
def test_report_leaves_out_a_journal_that_is_not_a_regular_file(made: Path, tmp_path: Path, kind: str) -> None:
    d = _copy(made, tmp_path)
    (d / layout.JOURNAL).unlink()
    if kind == "folder":
        (d / layout.JOURNAL).mkdir()
    else:
        (d / layout.JOURNAL).symlink_to(made / layout.JOURNAL)
    proc = run_mock("report", str(d), "--per-process")
    assert proc.returncode in (0, 1) and proc.stderr == b"", proc.stderr.decode()
    assert proc.stdout.startswith(b"session "), proc.stdout


@pytest.mark.parametrize("name", layout.FILES)
def test_a_session_file_that_is_a_fifo_is_refused_and_never_waited_on(made: Path, tmp_path: Path, name: str) -> None:
    d = _copy(made, tmp_path)
    target = d / name
    if target.exists():
        target.unlink()
    os.mkfifo(target)
    _refused(run_mock("run", "default", "--session", str(d), input=PROBE, timeout=60), f"{name}: is a FIFO")


@pytest.mark.parametrize("name", layout.FILES)
@pytest.mark.parametrize("dangling", [False, True], ids=["to-a-file", "dangling"])
def test_a_session_file_that_is_a_symlink_is_never_written_through(made: Path, tmp_path: Path, name: str, dangling: bool) -> None:
    d = _copy(made, tmp_path)
    outside = tmp_path / "outside.txt"
    before = (d / name).read_bytes() if (d / name).exists() else b"outside\n"
    if not dangling:
        outside.write_bytes(before)  # (the same bytes: only the link differs)
    target = d / name
    if target.exists():
        target.unlink()
    target.symlink_to(outside)
    _refused(run_mock("run", "default", "--session", str(d), input=PROBE), f"{name}: is a symbolic link")
    if dangling:
        assert not outside.exists()  # nothing was created through the link
    else:
        assert outside.read_bytes() == before  # nothing was appended or replaced through the link


def test_the_journal_is_rotated_to_a_file_made_without_following_a_link(tmp_path: Path, monkeypatch: Any) -> None:
    """A link put at ``journal.jsonl`` while the mock runs (after a rotation moved the file away)
    is not written through: the writer stops journalling instead."""
    from support.engines import scenario_engine

    from mockmcp.verify.journal import JournalWriter

    d = tmp_path / "s"
    store = SessionStore(str(d), "default", SavedVerdict())
    engine = scenario_engine("default")
    store.check(engine)
    conn = SessionConnection(type("C", (), {"engine": engine})(), store)
    writer = JournalWriter(store.journal)
    conn.attach_journal(writer, [])
    writer.write("in", message={"x": 1})
    os.replace(store.journal, d / layout.OLDER_JOURNAL)
    outside = tmp_path / "outside.txt"
    outside.write_text("")
    os.symlink(outside, store.journal)
    store.rotation.heard(store.rotation.generation + 1)  # (another process rotated it: a ``J`` line)
    writer.write("in", message={"x": 2})
    assert outside.read_text() == "" and writer.broken
    writer.close()


# ---------------------------------------------------------------- fuzzing the directory's files


def _seed(root: Path) -> Path:
    """A session of the bundled ``tasks`` scenario with tasks going and ended, an archive, a rotated
    journal and a saved verdict: every file a session directory may hold."""
    d = root / "seed"
    client = TaskClient("tasks", "--session", str(d))
    try:
        client.call("build")
        client.call("doomed")
        client.call("forever")
        quick = client.call("quick")["result"]["taskId"]
        client.poll_until_terminal(quick, 100)
        assert client.close() == 0
    finally:
        if client.proc.poll() is None:
            client.kill()
    log = (d / layout.LOG).read_bytes().splitlines(keepends=True)
    ended = [ln for ln in log if ln.startswith(b"D ")]
    assert ended, log
    body = b"".join(ended)
    (d / layout.ARCHIVE).write_bytes(f"{layout.ARCHIVE_HEAD}{len(body)}\n".encode() + body)
    shutil.copy(d / layout.JOURNAL, d / layout.OLDER_JOURNAL)
    assert sorted(layout.FILES) == sorted(p.name for p in d.iterdir()), list(d.iterdir())
    return d


def _lines_of_json_kind(data: bytes) -> list[tuple[int, bytes, bytes]]:
    """Each line's (index, head, JSON body): ``T ID {..}`` / ``E {..}`` lines, or a whole-file JSON."""
    out = []
    for i, ln in enumerate(data.split(b"\n")):
        brace = ln.find(b"{")
        if brace >= 0:
            out.append((i, ln[:brace], ln[brace:]))
    return out


@st.composite
def corruption(draw: st.DrawFn) -> tuple[str, str, Any]:
    """(file, how, detail): one way to break one file of the directory."""
    name = draw(st.sampled_from(layout.FILES + (layout.LOG, layout.LOG, layout.JOURNAL, layout.META)))
    how = draw(st.sampled_from(
        ["truncate", "empty", "bytes", "wrong-type", "field", "deep", "garbage-line", "delete",
         "folder", "fifo", "link-in", "link-out", "dangling"]
    ))
    detail: Any = None
    if how == "truncate":
        detail = draw(st.floats(0, 1))
    elif how == "bytes":
        detail = (draw(st.floats(0, 1)), draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00", b"\n", b" ", b"{", b"}"])))
    elif how in ("wrong-type", "field"):
        detail = (draw(st.integers(0, 1000)), json.dumps(draw(VALUES)).encode())
    elif how == "deep":
        detail = draw(st.sampled_from([100, 1000, 100_000]))
    elif how == "garbage-line":
        detail = draw(st.sampled_from([b"T", b"T x", b"T x {", b"D x []", b"E []", b"E {}", b"J x", b"J 99", b"F", b"F x y", b"Z z"]))
    elif how == "link-in":
        detail = draw(st.sampled_from(layout.FILES))
    return name, how, detail


def _corrupt(d: Path, outside: Path, name: str, how: str, detail: Any) -> None:
    path = d / name
    regular = path.is_file() and not path.is_symlink()
    data = path.read_bytes() if regular else b""
    if (how in ("delete", "folder", "fifo", "link-in", "link-out", "dangling") or not regular) and (path.exists() or path.is_symlink()):
        # (an earlier corruption made it a link, a folder or a FIFO: the test never writes through those)
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    if how == "truncate":
        path.write_bytes(data[: int(len(data) * detail)])
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "bytes":
        at = int(len(data) * detail[0])
        path.write_bytes(data[:at] + detail[1] + data[at:])
    elif how in ("wrong-type", "field"):
        spots = _lines_of_json_kind(data)
        if not spots:
            path.write_bytes(detail[1])
            return
        i, head, body = spots[detail[0] % len(spots)]
        new = detail[1]
        if how == "field":
            try:
                obj = json.loads(body)
            except ValueError:
                obj = None
            if type(obj) is dict and obj:
                key = sorted(obj)[detail[0] % len(obj)]
                obj[key] = json.loads(detail[1])
                new = json.dumps(obj).encode()
        lines = data.split(b"\n")
        lines[i] = head + new
        path.write_bytes(b"\n".join(lines))
    elif how == "deep":
        spots = _lines_of_json_kind(data)
        nest = b"[" * detail + b"]" * detail
        if not spots:
            path.write_bytes(nest)
            return
        i, head, body = spots[0]
        lines = data.split(b"\n")
        lines[i] = head + b'{"a":' + nest + b"}"
        path.write_bytes(b"\n".join(lines))
    elif how == "garbage-line":
        path.write_bytes(data + detail + b"\n")
    elif how == "folder":
        path.mkdir()
    elif how == "fifo":
        os.mkfifo(path)
    elif how == "link-in":
        path.symlink_to(detail)
    elif how == "link-out":
        path.symlink_to(outside)
    elif how == "dangling":
        path.symlink_to(outside.parent / "nothing-here")


PROBES = (
    line(request("probe", "server/discover"))
    + (json.dumps({"jsonrpc": "2.0", "id": "call", "method": "tools/call", "params": {
        "name": "quick", "arguments": {},
        "_meta": {**META, "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}}}) + "\n").encode()
)


@pytest.fixture(scope="module")
def seed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _seed(tmp_path_factory.mktemp("session-seed"))


@pytest.mark.slow
@settings(max_examples=20, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(corruptions=st.lists(corruption(), min_size=1, max_size=3))
# The 20 derandomized draws break every file with 10 of the 13 ways; these give the other three.
@example(corruptions=[(layout.LOG, "delete", None), (layout.ARCHIVE, "field", (3, b'"x"'))])
@example(corruptions=[(layout.META, "dangling", None)])
def test_fuzzed_session_files_either_serve_or_refuse_with_one_line(seed: Path, tmp_path_factory: pytest.TempPathFactory, corruptions: list[Any]) -> None:
    """22 spawns (20 derandomized draws of one to three corruptions, and two fixed cases), each
    serving a corrupted copy of a full session directory: it serves, or refuses with one line."""
    work = tmp_path_factory.mktemp("fuzzed")
    d = work / "s"
    shutil.copytree(seed, d)
    outside = work / "outside.txt"
    outside.write_bytes(b"not the mock's\n")
    for name, how, detail in corruptions:
        _corrupt(d, outside, name, how, detail)
    proc = run_mock("run", "tasks", "--session", str(d), input=PROBES, timeout=60)
    err = proc.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err, (corruptions, err)
    assert outside.read_bytes() == b"not the mock's\n", corruptions  # nothing written through a link
    assert not (work / "nothing-here").exists(), corruptions
    if proc.returncode == 2:
        assert len(err.splitlines()) == 1 and err.startswith("mockmcp: "), (corruptions, err)
        assert proc.stdout == b"", corruptions
        return
    assert proc.returncode == 0, (corruptions, err)
    answers = {m.get("id"): m for m in map(json.loads, proc.stdout.splitlines())}
    assert "result" in answers["probe"], (corruptions, answers)
    assert "call" in answers, (corruptions, answers)  # answered (a task, or an error naming what is corrupt)
