"""What validating tools/call arguments costs, against the same mock unvalidated.

Pipelined: 20,000 ``tools/call`` of the default scenario's ``echo`` (its inputSchema
has a required string property), written at once; once with the scenario as it is
(validated, the default) and once with ``protocol.validateInput: false``. Rounds
alternate and each keeps its best (noise only slows a round down); nine rounds, since a
single pipelined round on the shared machine ranged from 33,000 to 83,000 req/s for the
same program (five rounds gave 0.74x in one run and 1.36x in the next). Import: what
``import mockmcp.scenario.jsonschema.validator`` adds to a process that has the engine loaded, beside
what ``import jsonschema`` (the package it replaces) would add, median of 5 fresh
interpreters each.
"""

from __future__ import annotations

import re
import subprocess
import sys

from _common import PY, ROOT, call, median, mock_cmd, request, scenario_file
from bench_throughput import PIPELINED, pipelined_once

ROUNDS = 9


def unvalidated_default() -> str:
    text = (ROOT / "scenarios" / "default.yaml").read_text()
    assert "\nprotocol:" not in text  # the default scenario sets no protocol block to merge with
    return scenario_file("default-unvalidated.yaml", text + "\nprotocol: {validateInput: false}\n")


def import_ms(module: str) -> float:
    """Cumulative import time of ``module`` after the engine, in a fresh interpreter (ms)."""
    runs = []
    for _ in range(5):
        proc = subprocess.run([PY, "-X", "importtime", "-c", f"import mockmcp.core.engine; import {module}"],
                              capture_output=True, text=True, cwd=ROOT, check=True)
        line = [ln for ln in proc.stderr.splitlines() if re.search(rf"\|\s+{re.escape(module)}$", ln)][-1]
        runs.append(int(line.split("|")[1]) / 1000)
    return median(runs)


def bench() -> list[dict]:
    data = b"".join(call(i, "echo", {"text": f"hello {i}"}) for i in range(PIPELINED))
    validated, plain = mock_cmd("default"), mock_cmd(unvalidated_default())
    on, off = [], []
    for _ in range(ROUNDS):
        on.append(pipelined_once(validated, data))
        off.append(pipelined_once(plain, data))
    rate_on, rate_off = max(on), max(off)
    # For reference (no target): each validated round against the unvalidated round beside it,
    # median of the rounds; when the VM slows for a while, best-of can keep a slow round of one side.
    paired = median([a / b for a, b in zip(on, off)])
    ours, theirs = import_ms("mockmcp.scenario.jsonschema.validator"), import_ms("jsonschema")
    return [
        dict(name="pipelined tools/call echo, validateInput: false", value=rate_off, unit="req/s"),
        dict(name="pipelined tools/call echo, validated (default)", value=rate_on, unit="req/s", ratio=rate_on / rate_off,
             target=">= 0.9x unvalidated", ok=rate_on / rate_off >= 0.9),
        dict(name="  validated, median of the per-round ratios", value=paired, unit="x"),
        dict(name="import mockmcp.scenario.jsonschema.validator after the engine", value=ours, unit="ms", target="< 5 ms", ok=ours < 5),
        dict(name="import jsonschema after the engine (not used)", value=theirs, unit="ms"),
    ]


if __name__ == "__main__":
    for row in bench():
        print(row)
    sys.exit(0)
