"""One verdict per session: the expectations and client checks of every process of a session directory.

``mockmcp report DIR`` (and ``--report``/``--strict`` with ``--session``)
judges the session from its journal, ``DIR/journal.jsonl``, which every
process appends to: the scenario's expectations count the requests of all
processes, in the order they arrived, and the client-check findings each
process recorded are gathered. So a client that probes with one process and
works in a second (the TypeScript client) is judged on what it did, not on
what one of its processes saw. ``per_process=True`` gives each process's own
verdict as well (from the journal still kept).

A verdict is carried on from the last one, not judged from the whole journal
again: ``DIR/judged.json`` holds the ``Aggregate`` (bounded: counts, the first
matches and findings) and how far each journal file was read, so a process's
exit costs what was journalled since the last verdict, not the session's
history. It is trusted only for the same expectations (an edited scenario is
judged from the journal again); the files are known by inode and first line.
Every file is opened without following a symbolic link (``sessiondir.files.open_file``),
and a ``judged.json`` that does not have the shape a verdict writes is not used
(the journal is judged again).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
from typing import TYPE_CHECKING, Any, Iterator, Mapping

from mockmcp.scenario.expectations import ExpectationTracker
from mockmcp.verify.journal import printable, read_journal, record_of
from mockmcp.sessiondir.files import open_file, read_file, write_aside
from mockmcp.sessiondir.layout import JOURNAL, JUDGED, OLDER_JOURNAL  # (JUDGED: where the last verdict stopped)
from mockmcp.verify.reportshape import report_of, report_text

if TYPE_CHECKING:
    from mockmcp.scenario.model.options import Expectation

MAX_FINDINGS = 1000


def session_scenario(directory: str) -> str:
    return str(json.loads(read_file(os.path.join(directory, "session.json"), 64 * 1024))["scenario"])


class Aggregate:
    """What a session's verdict is made of, fed one journal record at a time, kept as plain JSON.

    Bounded whatever the session's length (counts, the first ``MAX_FINDINGS``
    findings, the tracker's counts and first ids), so the verdict at a
    process's exit reads only what was journalled since the last one."""

    def __init__(self, expectations: list[Any]) -> None:
        self.tracker = ExpectationTracker(expectations)
        self.findings: list[dict[str, Any]] = []
        self.by_check: dict[str, int] = {}
        self.counts = {"requests": 0, "notifications": 0}
        self.pids: dict[int, None] = {}

    def feed(self, rec: dict[str, Any]) -> None:
        """One journal record (``record_of``: of the journal's shape; the message in it is the
        client's, of any shape: what is not a request or notification is not counted)."""
        pid = rec.get("pid", 0)
        if type(pid) is int:
            self.pids[pid] = None
        kind = rec.get("dir")
        if kind == "in":
            msg = rec.get("message")
            if type(msg) is not dict or type(msg.get("method")) is not str:
                return
            raw = msg.get("params")
            params: dict[str, Any] = raw if type(raw) is dict else {}
            hdrs = rec.get("headers")  # an HTTP request's headers (``mockmcp run --http``)
            headers = hdrs if type(hdrs) is dict else None
            if "id" in msg:
                self.counts["requests"] += 1
                self.tracker.observe(msg["id"], msg["method"], params, headers)
            else:
                self.counts["notifications"] += 1
                self.tracker.observe(None, msg["method"], params, headers)
        elif kind == "finding":
            finding = rec.get("finding")
            if type(finding) is not dict:
                return
            check = finding.get("check", "?")
            if type(check) is not str:
                return
            self.by_check[check] = self.by_check.get(check, 0) + 1
            if len(self.findings) < MAX_FINDINGS:
                self.findings.append({**finding, "pid": rec.get("pid")})

    def export(self) -> dict[str, Any]:
        return {"tracker": self.tracker.export(), "findings": self.findings, "byCheck": self.by_check,
                "counts": self.counts, "pids": list(self.pids)}

    def restore(self, data: dict[str, Any]) -> None:
        self.tracker.restore(data["tracker"])
        self.findings = list(data["findings"])
        self.by_check = dict(data["byCheck"])
        self.counts = dict(data["counts"])
        self.pids = dict.fromkeys(data["pids"])

    def report(self) -> dict[str, Any]:
        """A report (the shape ``mockmcp run --report`` writes) over what was fed."""
        return report_of({"processes": list(self.pids)}, self.counts, self.by_check, self.tracker.verdicts(), list(self.findings))


def judge(records: list[dict[str, Any]], expectations: list[Any]) -> dict[str, Any]:
    """A report (the shape ``mockmcp run --report`` writes) over these journal records."""
    agg = Aggregate(expectations)
    for rec in records:
        agg.feed(rec)
    return agg.report()


def _fingerprint(expectations: list[Any]) -> str:
    """Which expectations a saved aggregate was judged with (an edited scenario is judged again)."""
    return hashlib.sha256(repr(list(expectations)).encode("utf-8")).hexdigest()


def _files(directory: str) -> list[str]:
    return [os.path.join(directory, name) for name in (OLDER_JOURNAL, JOURNAL)]  # (the one before the last rotation first)


def _identity(fd: int) -> str:
    """A journal file's identity: its inode and first line's start (an inode number alone can be
    reused once the file it named is gone)."""
    head = os.pread(fd, 160, 0).split(b"\n", 1)[0]
    return f"{os.fstat(fd).st_ino}:{head.decode('latin-1')}"


def _read_from(path: str, offsets: dict[str, int], agg: Aggregate) -> tuple[str, int] | None:
    """Feed ``agg`` the records of ``path`` past where ``offsets`` says the last verdict stopped;
    (identity, the offset now) or ``None`` when there is no such file."""
    try:
        fd = open_file(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:  # none (or a link, which is never followed)
        return None
    try:
        ident = _identity(fd)
        start = offsets.get(ident, 0)
        size = os.fstat(fd).st_size
        data = os.pread(fd, size - start, start) if size > start else b""
    except OSError:  # not a regular file (start-up refuses that; put there since)
        return None
    finally:
        os.close(fd)
    end = data.rfind(b"\n") + 1  # (a line still being written is read by the next verdict)
    for line in data[:end].splitlines():
        rec = record_of(line)
        if rec is not None:  # (None: torn by a killed writer, or not a record at all)
            agg.feed(rec)
    return ident, start + end


def _regular(path: str) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def judged_offset(directory: str) -> int:
    """How far into the current ``journal.jsonl`` the saved verdict has read (0 if not at all)."""
    saved = _saved(directory)
    offsets = saved["offsets"] if saved is not None else {}
    try:
        fd = open_file(os.path.join(directory, JOURNAL), os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return 0
    try:
        got = offsets.get(_identity(fd), 0)
    except OSError:
        return 0
    finally:
        os.close(fd)
    return got if type(got) is int else 0


def _saved(directory: str) -> dict[str, Any] | None:
    """``judged.json`` if it has the shape ``carry_on`` writes (else ``None``: judged again)."""
    try:
        saved = json.loads(read_file(os.path.join(directory, JUDGED)))
    except (OSError, ValueError, RecursionError):
        return None
    if type(saved) is not dict or type(saved.get("offsets")) is not dict or type(saved.get("aggregate")) is not dict:
        return None
    if not all(type(v) is int and v >= 0 for v in saved["offsets"].values()):
        return None
    return saved


def _restorable(agg: dict[str, Any], n: int) -> bool:
    """Is ``agg`` what ``Aggregate.export`` writes for ``n`` expectations? (Types all the way
    down: a verdict is computed from it after it is restored, where a wrong type would raise.)"""
    tracker, counts = agg.get("tracker"), agg.get("counts")
    if type(tracker) is not dict or type(counts) is not dict:
        return False
    seen, per = tracker.get("seen"), tracker.get("counts")
    if type(tracker.get("sequence")) is not int or type(seen) is not list or type(per) is not list:
        return False
    if len(seen) != n or len(per) != n or not all(type(c) is int and c >= 0 for c in per):
        return False
    if not all(type(s) is list and all(type(x) is list and len(x) == 2 and type(x[0]) is int for x in s) for s in seen):
        return False
    if set(counts) != {"requests", "notifications"} or not all(type(c) is int for c in counts.values()):
        return False
    findings, by_check, pids = agg.get("findings"), agg.get("byCheck"), agg.get("pids")
    if type(findings) is not list or not all(type(f) is dict for f in findings) or len(findings) > MAX_FINDINGS:
        return False
    if type(by_check) is not dict or not all(type(c) is int for c in by_check.values()):
        return False
    return type(pids) is list and all(type(p) is int for p in pids)


def carry_on(directory: str, expectations: list[Any]) -> tuple[Aggregate, dict[str, Any]]:
    """The session's aggregate: the saved one (when judged with these expectations) fed what was
    journalled since; and the state to save (aggregate and offsets)."""
    agg = Aggregate(expectations)
    fingerprint = _fingerprint(expectations)
    offsets: dict[str, int] = {}
    saved = _saved(directory)  # (none yet, or unusable: judge what the journal holds)
    if saved is not None and saved.get("expectations") == fingerprint and _restorable(saved["aggregate"], len(expectations)):
        agg.restore(saved["aggregate"])
        offsets = dict(saved["offsets"])
    now: dict[str, int] = {}
    for path in _files(directory):
        got = _read_from(path, offsets, agg)
        if got is not None:
            now[got[0]] = got[1]
    return agg, {"mockmcp": 1, "expectations": fingerprint, "offsets": now, "aggregate": agg.export()}


@contextlib.contextmanager
def _locked(directory: str) -> Iterator[None]:
    import fcntl

    fd = open_file(os.path.join(directory, "lock"), os.O_RDWR | os.O_CREAT | os.O_NONBLOCK)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # (closing releases the lock)


def save_judged(directory: str, state: dict[str, Any]) -> None:
    """Write where the verdict stopped (the session's lock is held), aside then renamed over."""
    text = json.dumps(state, ensure_ascii=False, separators=(",", ":"))
    write_aside(os.path.join(directory, JUDGED), text.encode("utf-8", "surrogatepass"))


class SavedVerdict:
    """The verdict so far in ``judged.json``, as a session directory's journal rotation keeps it
    (``sessiondir.rotation.VerdictKeeper``: the directory is a layer below the verdict)."""

    def judged_offset(self, directory: str) -> int:
        return judged_offset(directory)

    def carry_on(self, directory: str, expectations: list[Expectation]) -> Mapping[str, object]:
        return carry_on(directory, list(expectations))[1]

    def save(self, directory: str, state: Mapping[str, object]) -> None:
        save_judged(directory, dict(state))


def session_report(directory: str, expectations: list[Any], *, per_process: bool = False, save: bool = False) -> dict[str, Any]:
    """The session's verdict. Carried on from the last one (so its cost is what was journalled
    since, not the session's history); ``save`` (a process's exit, under the session's lock)
    records where it stopped. ``per_process`` judges each process from the journal it kept."""
    if save:
        with _locked(directory):  # (two processes ending at once: each carries on from the other's)
            agg, state = carry_on(directory, expectations)
            save_judged(directory, state)
    else:
        agg, _ = carry_on(directory, expectations)
    report = {"session": os.path.abspath(directory), **agg.report()}
    if per_process:
        records: list[dict[str, Any]] = []
        for path in _files(directory):
            if _regular(path):  # (never through a link; a folder or a FIFO there is left out)
                records.extend(read_journal(path))
        report["perProcess"] = {
            str(pid): judge([r for r in records if r.get("pid") == pid], expectations) for pid in report["processes"]
        }
    return report


def report_command(directory: str, *, per_process: bool, as_json: bool) -> int:
    """``mockmcp report DIR``: print the session's verdict; status 0 when ok, 1 when not, 2 when unusable."""
    import sys

    from mockmcp.scenario.loadcache import load_cached
    from mockmcp.scenario.problems import LoadError

    try:
        ref = session_scenario(directory)
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as exc:
        print(f"mockmcp: {directory}: not a readable session directory ({exc})", file=sys.stderr)
        return 2
    hit = load_cached(ref, allow_absolute=True)
    if hit is None:
        from mockmcp.scenario.loader import load

        try:
            hit = load(ref, allow_absolute=True)
        except LoadError as exc:
            for problem in exc.problems:
                print(problem, file=sys.stderr)
            return 2
    scenario, _ = hit
    report = session_report(directory, scenario.expectations, per_process=per_process)
    if as_json:
        print(report_text(report))
    else:
        c = report["counts"]
        f, e = c["findings"], c["expectations"]
        print(printable(f"session {report['session']}: {len(report['processes'])} process(es), {c['requests']} requests; "
                        f"findings: {f['error']} errors, {f['warning']} warnings, {f['note']} notes; "
                        f"expectations: {e['passed']} passed, {e['failed']} failed -> {'ok' if report['ok'] else 'NOT ok'}"))
        for v in report["expectations"]:
            if v["verdict"] == "failed":
                print(printable(f"  failed: {v['expectation']} ({v['request']}): {v.get('why', '')}"))
        for x in report["findings"][:20]:
            if x.get("level") != "note":
                print(printable(f"  {x.get('level')} {x.get('check')} (pid {x.get('pid')}): {x.get('text')}"))
        for pid, sub in (report.get("perProcess") or {}).items():
            se = sub["counts"]["expectations"]
            print(f"  process {pid}: {sub['counts']['requests']} requests; expectations {se['passed']} passed, {se['failed']} failed -> {'ok' if sub['ok'] else 'NOT ok'}")
    return 0 if report["ok"] else 1
