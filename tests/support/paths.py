"""Where the tests find the checkout, the bundled scenarios and the shared specification data."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def find_shared() -> Path:
    """``$MOCKMCP_SHARED``, else ``shared/`` beside this checkout, else beside the repository
    it was cloned from (a throwaway ``git clone`` into a temporary folder still finds it)."""
    if os.environ.get("MOCKMCP_SHARED"):
        return Path(os.environ["MOCKMCP_SHARED"])
    candidates = [ROOT.parent / "shared"]
    try:
        origin = subprocess.run(
            ["git", "-C", str(ROOT), "config", "--get", "remote.origin.url"], capture_output=True, text=True
        ).stdout.strip()
    except OSError:
        origin = ""
    if origin and "://" not in origin and not origin.startswith("git@"):
        candidates.append((ROOT / origin).resolve().parent / "shared")
    for candidate in candidates:
        if (candidate / "spec").is_dir():
            return candidate
    return candidates[0]


SHARED = find_shared()
SCHEMA_PATH = SHARED / "spec" / "2026-07-28" / "schema.json"
EXAMPLES = SHARED / "spec" / "2026-07-28" / "examples"
SCENARIOS = ROOT / "scenarios"
TASKS_SCHEMA_PATH = SHARED / "spec" / "ext-tasks" / "schema.json"  # the Tasks extension's generated schema
