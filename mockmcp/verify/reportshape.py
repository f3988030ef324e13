"""The report's shape: what ``--report`` writes, for one process or for a whole session.

Apart from both writers (the verifier of one process, ``verify.report``'s session judge),
so neither imports the other for it.
"""

from __future__ import annotations

import json
from typing import Any

from mockmcp.verify.checks import CHECKS
from mockmcp.verify.journal import printable


def report_of(who: dict[str, Any], counts: dict[str, Any], by_check: dict[str, int],
              verdicts: list[dict[str, Any]], findings: list[dict[str, Any]]) -> dict[str, Any]:
    """The report ``--report`` writes, of one process (``who``: its pid) or of a whole session
    (``verify.report``: its processes): the one place its shape is written."""
    levels = {"error": 0, "warning": 0, "note": 0}
    for check, n in by_check.items():
        levels[CHECKS[check][0] if check in CHECKS else "error"] += n  # (a check from another version: an error)
    failed = sum(1 for v in verdicts if v["verdict"] == "failed")
    return {
        "mockmcp": 1,
        **who,
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


def report_text(report: dict[str, Any]) -> str:
    """The report as the JSON text both writers write: indented, other scripts kept as they are,
    ``printable`` (a finding quotes the client's request, a lone surrogate and all: before,
    writing it failed with UnicodeEncodeError and the mock died at exit without its report)."""
    return printable(json.dumps(report, indent=2, ensure_ascii=False, default=repr))


__all__ = ["report_of", "report_text"]

