"""One verdict per session: the expectations and client checks of every process of a session directory.

``mockmcp report DIR`` (and ``--report``/``--strict`` with ``--session``)
judges the session from its journal, ``DIR/journal.jsonl``, which every
process appends to: the scenario's expectations count the requests of all
processes, in the order they arrived, and the client-check findings each
process recorded are gathered. So a client that probes with one process and
works in a second (the TypeScript client) is judged on what it did, not on
what one of its processes saw. ``per_process=True`` gives each process's own
verdict as well.
"""

from __future__ import annotations

import json
import os
from typing import Any

from .checks import CHECKS
from .expectations import ExpectationTracker
from .journal import read_journal

MAX_FINDINGS = 1000


def session_scenario(directory: str) -> str:
    with open(os.path.join(directory, "session.json"), encoding="utf-8") as fh:
        return str(json.load(fh)["scenario"])


def judge(records: list[dict[str, Any]], expectations: list[Any]) -> dict[str, Any]:
    """A report (the shape ``mockmcp run --report`` writes) over these journal records."""
    tracker = ExpectationTracker(expectations)
    findings: list[dict[str, Any]] = []
    by_check: dict[str, int] = {}
    counts = {"requests": 0, "notifications": 0}
    pids: dict[int, None] = {}
    for rec in records:
        pids[rec.get("pid", 0)] = None
        kind = rec.get("dir")
        if kind == "in":
            msg = rec.get("message")
            if type(msg) is not dict or type(msg.get("method")) is not str:
                continue
            raw = msg.get("params")
            params: dict[str, Any] = raw if type(raw) is dict else {}
            hdrs = rec.get("headers")  # an HTTP request's headers (``mockmcp run --http``)
            headers = hdrs if type(hdrs) is dict else None
            if "id" in msg:
                counts["requests"] += 1
                tracker.observe(msg["id"], msg["method"], params, headers)
            else:
                counts["notifications"] += 1
                tracker.observe(None, msg["method"], params, headers)
        elif kind == "finding":
            finding = rec.get("finding") or {}
            check = finding.get("check", "?")
            by_check[check] = by_check.get(check, 0) + 1
            if len(findings) < MAX_FINDINGS:
                findings.append({**finding, "pid": rec.get("pid")})
    levels = {"error": 0, "warning": 0, "note": 0}
    for check, n in by_check.items():
        levels[CHECKS[check][0] if check in CHECKS else "error"] += n
    verdicts = tracker.verdicts()
    failed = sum(1 for v in verdicts if v["verdict"] == "failed")
    return {
        "mockmcp": 1,
        "processes": list(pids),
        "ok": failed == 0 and levels["error"] == 0,
        "counts": {
            **counts,
            "findings": levels,
            "byCheck": dict(sorted(by_check.items())),
            "expectations": {"passed": len(verdicts) - failed, "failed": failed},
        },
        "expectations": verdicts,
        "findings": findings,
    }


def session_report(directory: str, expectations: list[Any], *, per_process: bool = False) -> dict[str, Any]:
    journal = os.path.join(directory, "journal.jsonl")
    records = read_journal(journal) if os.path.exists(journal) else []
    report = {"session": os.path.abspath(directory), **judge(records, expectations)}
    if per_process:
        report["perProcess"] = {
            str(pid): judge([r for r in records if r.get("pid") == pid], expectations) for pid in report["processes"]
        }
    return report


def report_command(directory: str, *, per_process: bool, as_json: bool) -> int:
    """``mockmcp report DIR``: print the session's verdict; status 0 when ok, 1 when not, 2 when unusable."""
    import sys

    from .loadcache import load_cached
    from .problems import LoadError

    try:
        ref = session_scenario(directory)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"mockmcp: {directory}: not a readable session directory ({exc})", file=sys.stderr)
        return 2
    hit = load_cached(ref, allow_absolute=True)
    if hit is None:
        from .loader import load

        try:
            hit = load(ref, allow_absolute=True)
        except LoadError as exc:
            for problem in exc.problems:
                print(problem, file=sys.stderr)
            return 2
    scenario, _ = hit
    report = session_report(directory, scenario.expectations, per_process=per_process)
    if as_json:
        print(json.dumps(report, indent=2, ensure_ascii=False, default=repr))
    else:
        c = report["counts"]
        f, e = c["findings"], c["expectations"]
        print(f"session {report['session']}: {len(report['processes'])} process(es), {c['requests']} requests; "
              f"findings: {f['error']} errors, {f['warning']} warnings, {f['note']} notes; "
              f"expectations: {e['passed']} passed, {e['failed']} failed -> {'ok' if report['ok'] else 'NOT ok'}")
        for v in report["expectations"]:
            if v["verdict"] == "failed":
                print(f"  failed: {v['expectation']} ({v['request']}): {v.get('why', '')}")
        for x in report["findings"][:20]:
            if x.get("level") != "note":
                print(f"  {x.get('level')} {x.get('check')} (pid {x.get('pid')}): {x.get('text')}")
        for pid, sub in (report.get("perProcess") or {}).items():
            se = sub["counts"]["expectations"]
            print(f"  process {pid}: {sub['counts']['requests']} requests; expectations {se['passed']} passed, {se['failed']} failed -> {'ok' if sub['ok'] else 'NOT ok'}")
    return 0 if report["ok"] else 1
