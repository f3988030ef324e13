"""The Tasks extension on the engine's side: the task table and each task's scripted life.

``TaskTable`` (``table``) is what the engine, the step expander and the control channel use;
its parts are each task's scripted life (``script``), the records it holds for the session
store (``records``; one record, plain JSON: ``record``), the wire shapes (``shapes``) and the
streams watching tasks (``watchers``); whether a client may use the extension is ``extension``.
Sans-I/O: the shell hands in the clock, and the session store keeps the records.
"""

from __future__ import annotations

from mockmcp.core.tasks.extension import REQUIRED_CAPABILITY, has_extension, missing_extension
from mockmcp.core.tasks.record import MAX_RECORDS, STATUSES, TERMINAL, CorruptRecord, TaskRecord, seen_key
from mockmcp.core.tasks.shapes import iso
from mockmcp.core.tasks.table import TaskTable

__all__ = [
    "MAX_RECORDS", "REQUIRED_CAPABILITY", "STATUSES", "TERMINAL", "CorruptRecord", "TaskRecord", "TaskTable",
    "has_extension", "iso", "missing_extension", "seen_key",
]
