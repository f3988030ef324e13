"""The Tasks extension on the engine's side: the task table and each task's scripted life.

``TaskTable`` (``table``) is what the engine, the step expander and the control channel use;
it also says whether a request may use the extension (``has_extension``). Its parts are each
task's scripted life (``script``), the records (one task's state as plain JSON, and those the
table holds for the session store: ``records``), the wire shapes (``shapes``) and the streams
watching tasks (``watchers``).
Sans-I/O: the shell hands in the clock, and the session store keeps the records.
"""

from __future__ import annotations

from mockmcp.core.tasks.records import MAX_RECORDS, STATUSES, TERMINAL, CorruptRecord, TaskRecord, seen_key
from mockmcp.core.tasks.shapes import iso
from mockmcp.core.tasks.table import REQUIRED_CAPABILITY, TaskTable, has_extension, missing_extension

__all__ = [
    "MAX_RECORDS", "REQUIRED_CAPABILITY", "STATUSES", "TERMINAL", "CorruptRecord", "TaskRecord", "TaskTable",
    "has_extension", "iso", "missing_extension", "seen_key",
]
