"""The journal: every message in both directions, as JSON Lines, and its transcript.

Each record is one ``os.write`` of one line on a file opened with
``O_APPEND``: two mock processes can share a journal (the TypeScript client
spawns the server twice) without interleaving inside a line, and a SIGKILL
loses at most the record being written. Nothing is buffered in Python, so an
``exit`` fault (``os._exit``) loses nothing already recorded.

Record fields: ``t`` (monotonic seconds, comparable across processes on one
machine), ``pid`` (the process: one lane of the HTML timeline), ``dir``
(``in``, ``out``, ``event``, ``finding``, ``start``, ``verdict``: a failed
expectation, written at exit), then ``message`` (parsed) or ``raw`` (the
bytes as latin-1 text, when a line did not parse or a fault wrote raw
bytes), ``rule`` (which scenario rule answered), ``id``, ``kind``,
``finding``, ``verdict``.

Every reader takes records through ``record_of``: a line is a record only when it has the shape
``mockmcp schema journal`` publishes (``well_formed``, held to that schema by a differential test).
A journal is a file anyone may edit, truncate or mistake for another, so what is not a record is
skipped and counted, and the transcript, the timeline, a session's verdict and
``MockServer.journal`` rely on each field's type instead of each guarding its own.

``print_transcript`` renders a journal for humans (``mockmcp journal FILE``).
"""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from typing import Any, Callable, Iterator, TextIO

_encoder = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False, default=repr)
_claimed_pid: int | None = None


def process_pid() -> int:
    """The pid the journal's records and ``{pid}`` in ``--report`` name: this process's, or the one
    a warm child claimed (its launcher's: the pid the client spawned and sees, docs/warm.md)."""
    return os.getpid() if _claimed_pid is None else _claimed_pid


def claim_pid(pid: int) -> None:
    """Name ``pid`` as this process's from now on (the warm child, before it runs the command)."""
    global _claimed_pid
    _claimed_pid = pid


class JournalWriter:
    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self.fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        self.pid = process_pid()
        self.broken = False
        # A session directory bounds its journal: every ``check_every`` bytes this writer sets
        # ``due`` and the session (under its lock) looks whether to rotate; then ``reopen``.
        self.check_every: int | None = None
        self.due = False
        self._since_check = 0
        self._torn = _ends_mid_line(self.fd, self.path)

    def write(self, dir: str, **fields: Any) -> None:
        if self.broken:
            return
        record = {"t": round(time.monotonic(), 6), "pid": self.pid, "dir": dir}
        record.update(fields)
        data = (_encoder.encode(record) + "\n").encode("ascii")
        if self._torn:  # the last line another writer left torn ends here: this record is not glued onto it
            data = b"\n" + data
            self._torn = False
        try:
            written = os.write(self.fd, data)
            while written < len(data):  # only on a full disk or a signal; keep the line whole if we can
                written += os.write(self.fd, data[written:])
        except OSError:
            self.broken = True  # a journal failure must not take the protocol down
        if self.check_every is not None:
            self._since_check += len(data)
            if self._since_check >= self.check_every:
                self._since_check = 0
                self.due = True

    def reopen(self) -> None:
        """The file at ``path`` was rotated away: write to the new one from now on."""
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        except OSError:
            self.broken = True
            return
        os.close(self.fd)
        self.fd = fd

    def close(self) -> None:
        try:
            os.close(self.fd)
        except OSError:
            pass


def _ends_mid_line(fd: int, path: str) -> bool:
    """Does the journal end with a torn line (a writer stopped mid-record by a full disk, a file size
    limit or a kill)? Then the next record starts on a line of its own. The torn line is ended, not
    cut off: other processes append to a shared journal without any lock, and a cut could take a
    whole record one of them wrote meanwhile; the torn line is then one unreadable line, skipped."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_size == 0:
        return False
    try:
        rfd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:  # (write-only for us: left as it is)
        return False
    try:
        return os.pread(rfd, 1, st.st_size - 1) != b"\n"
    except OSError:
        return False
    finally:
        os.close(rfd)


def raw_text(data: bytes) -> str:
    """Bytes as text that round-trips exactly (``text.encode('latin-1') == data``)."""
    return data.decode("latin-1")


DIRECTIONS = ("start", "in", "out", "event", "finding", "verdict")
LEVELS = ("error", "warning", "note")
VERDICTS = ("passed", "failed")


def _integer(v: Any) -> bool:
    """JSON Schema's integer: 3 and 3.0, never true."""
    return type(v) is int or (type(v) is float and v.is_integer())


def _string(v: Any) -> bool:
    return type(v) is str


def _strings(v: Any) -> bool:
    return type(v) is list and all(type(x) is str for x in v)


def _rpc_id(v: Any) -> bool:
    return type(v) is str or _integer(v)


def _anything(v: Any) -> bool:
    return True


def _object(fields: dict[str, Callable[[Any], bool]], required: tuple[str, ...], more: bool) -> Callable[[Any], bool]:
    """A check of one JSON object: its ``required`` keys there, each known key's value passing its
    check, and other keys allowed only when ``more`` (the schema's ``additionalProperties``)."""
    def check(v: Any) -> bool:
        if type(v) is not dict or any(key not in v for key in required):
            return False
        for key, value in v.items():
            field = fields.get(key)
            if field is None:
                if not more:
                    return False
            elif not field(value):
                return False
        return True
    return check


_finding = _object({
    "check": _string, "level": lambda v: type(v) is str and v in LEVELS, "spec": _string, "text": _string,
    "id": _rpc_id, "message": _anything, "nearMiss": _anything, "pid": _integer,
}, ("check", "level", "text"), more=True)
_verdict = _object({
    "expectation": _string, "request": _string, "wanted": _string, "count": _integer,
    "ids": lambda v: type(v) is list and all(_rpc_id(x) for x in v),
    "verdict": lambda v: type(v) is str and v in VERDICTS,
    "why": _string, "retriesNotCounted": _integer, "before": _string, "after": _string,
}, ("expectation", "request", "wanted", "count", "ids", "verdict"), more=False)
_OPTIONAL: dict[str, Callable[[Any], bool]] = {
    "message": lambda v: type(v) is dict,
    "raw": _string, "fault": lambda v: type(v) is bool, "error": lambda v: v is None or type(v) is str,
    "oversized": _integer, "headers": lambda v: type(v) is dict and all(type(x) is str for x in v.values()),
    "rule": _string, "kind": _string, "finding": _finding, "verdict": _verdict, "scenario": _string,
    "argv": _strings, "versions": _strings,
}
_BIGGEST_CLOCK = 2**1023  # (past it an integer has no double: the transcript's arithmetic would overflow)


def well_formed(rec: Any) -> bool:
    """Whether a parsed line is a journal record: what ``mockmcp schema journal`` admits (an event
    carries fields of its own; a verdict carries no field the schema does not name), with a clock
    ``t`` a double can hold (JSON has no infinity, though Python's parser reads 1e400 as one).

    The three fields every record has are checked inline and the others only when present: a
    session's verdict runs this on every line journalled since the last one."""
    if type(rec) is not dict:
        return False
    t, pid, d = rec.get("t"), rec.get("pid"), rec.get("dir")
    if type(t) is float:
        if t - t != 0:  # (inf and NaN)
            return False
    elif type(t) is not int or not -_BIGGEST_CLOCK < t < _BIGGEST_CLOCK:
        return False
    if not _integer(pid):
        return False
    if type(d) is not str or d not in DIRECTIONS:
        return False
    if len(rec) > 3:
        for key, value in rec.items():
            check = _OPTIONAL.get(key)
            if check is not None and not check(value):
                return False
    return True


def record_of(line: bytes | str) -> dict[str, Any] | None:
    """The record on one journal line, or None when the line is not one (torn by a killed
    writer, nested past the parser's depth, of another shape, from another file)."""
    try:
        rec = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return rec if well_formed(rec) else None


def read_journal(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Parse a journal; lines that are not records (a torn last line: a killed writer) are skipped."""
    return list(_records(path)[0])


class NotAJournal(ValueError):
    """The file has lines but none of them is a journal record (a scenario, a report, a log...)."""


def load_journal(path: str | os.PathLike[str]) -> tuple[list[dict[str, Any]], int]:
    """The records of a journal and how many lines were not records (torn by a killed writer, or edited).

    Raises ``NotAJournal`` when no line is a record: counting a whole YAML file
    as "torn lines" would hide the real mistake (the wrong file).
    """
    records, torn = _records(path)
    if torn and not records:
        raise NotAJournal(f"{os.fspath(path)} is not a journal: none of its {torn} line{'s' if torn != 1 else ''} is a journal record "
                          "(write one with `mockmcp run SCENARIO --journal FILE`)")
    return records, torn


def _records(path: str | os.PathLike[str]) -> tuple[list[dict[str, Any]], int]:
    records, torn = [], 0
    with open(path, "rb") as fh:
        for line in fh:
            rec = record_of(line)
            if rec is None:
                torn += 1
            else:
                records.append(rec)
    return records, torn


def torn_note(torn: int) -> str:
    return (f"({torn} unreadable line{'s' if torn != 1 else ''} skipped: not journal records, "
            "as a writer killed mid-record or an edit leaves)")


def load_for_command(path: str | os.PathLike[str]) -> tuple[list[dict[str, Any]], int] | int:
    """A journal's records and torn-line count for a CLI command, or the exit status after
    saying on stderr why not: 1 for a file that is not a journal, 2 for one that cannot be read."""
    try:
        return load_journal(path)
    except NotAJournal as exc:
        print(f"mockmcp journal: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"mockmcp journal: {exc}", file=sys.stderr)
        return 2


# ---------------------------------------------------------------- transcript

_COLORS = {"in": "36", "out": "32", "finding": "1;31", "warning": "33", "note": "2", "event": "35", "start": "1"}


def print_transcript(path: str | os.PathLike[str], color: str = "auto", out: TextIO | None = None) -> int:
    """Print a readable transcript of a journal; 0 on success, 1 if it is not a journal, 2 if unreadable."""
    out = out or sys.stdout
    loaded = load_for_command(path)
    if isinstance(loaded, int):
        return loaded
    records, torn = loaded
    use_color = color == "always" or (color == "auto" and out.isatty() and os.environ.get("NO_COLOR") is None)
    for text, style in transcript_lines(records):
        out.write((f"\x1b[{_COLORS[style]}m{text}\x1b[0m" if use_color and style in _COLORS else text) + "\n")
    if torn:
        out.write(torn_note(torn) + "\n")
    return 0


def printable(text: str) -> str:
    """``text`` with each lone surrogate as its escape (``\\ud800``), all else as it is.

    JSON lets a client send one (``"\\ud800"``) and mockmcp keeps what a client sent: in the
    journal, in findings that quote a request, in a task's arguments. No UTF-8 stream or file
    can hold it, so every text mockmcp writes out for people or as JSON passes through here
    (inside a JSON string the escape reads back as the same value)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def transcript_lines(records: list[dict[str, Any]]) -> Iterator[tuple[str, str]]:
    """(text, style) per record, each ``printable``; times are relative to the first record."""
    for text, style in _lines(records):
        yield printable(text), style


def _lines(records: list[dict[str, Any]]) -> Iterator[tuple[str, str]]:
    if not records:
        return
    t0 = min(r.get("t", 0) for r in records)
    pids = {r.get("pid") for r in records}
    sent_at: dict[tuple[Any, Any], float] = {}
    for r in records:
        t = r.get("t", t0)
        stamp = f"{(t - t0) * 1000:9.1f}ms"
        who = f" [{r.get('pid')}]" if len(pids) > 1 else ""
        d = r.get("dir")
        if d == "start":
            yield f"{stamp}{who} == mockmcp started ({r.get('scenario', '')})", "start"
        elif d == "in":
            msg = r.get("message")
            if msg is None:
                yield f"{stamp}{who} -> (unparsed) {_clip(r.get('raw', ''))}  [{r.get('error', '')}]", "in"
                continue
            if "id" in msg and "method" in msg:
                sent_at[(r.get("pid"), _key(msg["id"]))] = t
            kind = "" if "method" in msg else "(a response from the client) "
            yield f"{stamp}{who} -> {kind}{describe_message(msg)}", "in"
        elif d == "out":
            msg = r.get("message")
            rule = f"  (rule {r['rule']})" if r.get("rule") else ""
            if msg is None:
                yield f"{stamp}{who} <- (raw bytes) {_clip(r.get('raw', ''))}", "out"
                continue
            took = ""
            if "id" in msg and "method" not in msg:
                start = sent_at.pop((r.get("pid"), _key(msg["id"])), None)
                if start is not None:
                    took = f"  in {(t - start) * 1000:.1f}ms"
            yield f"{stamp}{who} <- {describe_message(msg)}{took}{rule}", "out"
        elif d == "event":
            info = {k: v for k, v in r.items() if k not in ("t", "pid", "dir", "kind")}
            yield f"{stamp}{who} ** {r.get('kind')} {json.dumps(info, ensure_ascii=False)}", "event"
        elif d == "finding":
            f = r.get("finding") or {}
            level = f.get("level", "error")
            style = "finding" if level == "error" else level
            yield f"{stamp}{who} !! {level.upper()} {f.get('check')}: {f.get('text')}  <{f.get('spec')}>", style
        elif d == "verdict":
            v = r.get("verdict") or {}
            yield f"{stamp}{who} !! EXPECTATION FAILED {v.get('expectation')}: {v.get('request')} {v.get('wanted')}: {verdict_why(v)}", "finding"


def verdict_why(v: dict[str, Any]) -> str:
    """Why a journalled verdict failed: its own words (which say when matching retries were left
    out of the count, and how to count them), or the count where a record has none."""
    why = v.get("why")
    return why if type(why) is str else f"seen {v.get('count')}"


def _key(rid: Any) -> str:
    return json.dumps(rid)


def _clip(text: str, limit: int = 120) -> str:
    text = repr(text)[1:-1]
    return text if len(text) <= limit else text[: limit - 3] + "..."


def describe_message(msg: dict[str, Any]) -> str:
    """One line for a message: id, method and the details that tell requests apart, or the result's kind."""
    if "method" in msg:
        raw = msg.get("params")
        params: dict[str, Any] = raw if isinstance(raw, dict) else {}
        detail = ""
        for key in ("name", "uri"):
            if type(params.get(key)) is str:
                detail += f" {params[key]}"
        if type(params.get("arguments")) is dict and params["arguments"]:
            detail += " " + _clip(json.dumps(params["arguments"], ensure_ascii=False), 80)
        if "inputResponses" in params:
            detail += " +inputResponses"
        if "requestState" in params:
            detail += " +requestState"
        if msg["method"] == "notifications/cancelled":
            detail += f" requestId={json.dumps(params.get('requestId'))}"
        head = f"#{json.dumps(msg['id'])} " if "id" in msg else ""
        return f"{head}{msg['method']}{detail}"
    rid = f"#{json.dumps(msg['id'])}" if msg.get("id") is not None else "(no id)"
    if "error" in msg and type(msg["error"]) is dict:
        e = msg["error"]
        return f"{rid} error {e.get('code')} {_clip(str(e.get('message')), 100)}"
    result = msg.get("result")
    if type(result) is dict:
        kind = result.get("resultType", "(no resultType)")
        extra = ""
        if kind == "input_required" and type(result.get("inputRequests")) is dict:
            extra = " asks " + ", ".join(result["inputRequests"])
        elif type(result.get("content")) is list and result["content"] and type(result["content"][0]) is dict:
            first = result["content"][0]
            if first.get("type") == "text":
                extra = " " + _clip(json.dumps(first.get("text"), ensure_ascii=False), 60)
        if result.get("isError") is True:
            extra += " (isError)"
        return f"{rid} result {kind}{extra}"
    return f"{rid} {_clip(json.dumps(msg, ensure_ascii=False))}"
