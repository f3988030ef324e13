"""Run every benchmark and print each figure beside the floor measured in the same run.

Usage: ``.venv/bin/python tests/bench/run.py [spawn throughput hang delays load ...]``
(no argument: all of them). Prints one table; the exit status is 1 when a target
was missed, so the command can gate a release. Not part of ``pytest`` (timing is
not pass/fail there); see docs/performance.md for the latest figures.
"""

from __future__ import annotations

import importlib
import os
import platform
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

ALL = ["spawn", "throughput", "hang", "delays", "load", "listen", "nonreader", "inflight", "control", "proxy", "record", "validation", "tasks", "http", "warm", "auth"]


def machine() -> str:
    cpu = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{os.cpu_count()} CPUs ({cpu}), Python {platform.python_version()}, {platform.system()} {platform.release()}"


def fmt(v: float) -> str:
    return f"{v:,.0f}" if v >= 100 else f"{v:,.2f}"


def compile_package() -> None:
    """Bring the package's bytecode up to date first: an installed mockmcp has it (pip compiles on
    install), but in a checkout a module edited since its last import has none that is current,
    and with ``PYTHONDONTWRITEBYTECODE`` set every spawn would compile it again (a stale
    ``cli/main.py`` alone made the spawn figure 1.20x instead of 1.12x)."""
    import compileall

    compileall.compile_dir(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "mockmcp"), quiet=2)


def main(argv: list[str]) -> int:
    names = argv or ALL
    compile_package()
    print(f"mockmcp benchmarks on {machine()}")
    print(f"{'figure':<58} {'value':>12} {'unit':<6} {'ratio':>7}  target")
    missed = 0
    for name in names:
        mod = importlib.import_module(f"bench_{name}")
        t = time.perf_counter()
        rows = mod.bench()
        for r in rows:
            ratio = f"{r['ratio']:.2f}x" if "ratio" in r else ""
            verdict = ""
            if "ok" in r:
                verdict = "met" if r["ok"] else "MISSED"
                missed += not r["ok"]
            target = f"{r.get('target', '')} {verdict}".strip()
            print(f"{r['name']:<58} {fmt(r['value']):>12} {r['unit']:<6} {ratio:>7}  {target}", flush=True)
        print(f"  ({name}: {time.perf_counter() - t:.1f} s)", flush=True)
    print("all targets met" if not missed else f"{missed} target(s) missed")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
