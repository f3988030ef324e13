"""Every message the mock writes, checked against the official JSON Schemas, read in place from
``../shared`` (never copied into the project): revision 2026-07-28's, and the Tasks extension's
(``io.modelcontextprotocol/tasks``, which moved on after the revision: its own generated schema).

``checker()`` is the one ``SchemaChecker`` of a test process (the ``schema`` fixture hands it out;
helpers that drive the mock, such as ``support.taskcore``, use it directly).
"""

from __future__ import annotations

import json
from typing import Any

from support.paths import SCHEMA_PATH, TASKS_SCHEMA_PATH

# Result shape by request method, for schema validation of responses.
RESULT_DEF = {
    "server/discover": "DiscoverResult",
    "tools/list": "ListToolsResult",
    "tools/call": "CallToolResult",
    "prompts/list": "ListPromptsResult",
    "prompts/get": "GetPromptResult",
    "resources/list": "ListResourcesResult",
    "resources/read": "ReadResourceResult",
    "resources/templates/list": "ListResourceTemplatesResult",
    "completion/complete": "CompleteResult",
    "subscriptions/listen": "SubscriptionsListenResult",
}
NOTIFICATION_DEF = {
    "notifications/progress": "ProgressNotification",
    "notifications/message": "LoggingMessageNotification",
    "notifications/cancelled": "CancelledNotification",
    "notifications/tools/list_changed": "ToolListChangedNotification",
    "notifications/prompts/list_changed": "PromptListChangedNotification",
    "notifications/resources/list_changed": "ResourceListChangedNotification",
    "notifications/resources/updated": "ResourceUpdatedNotification",
    "notifications/subscriptions/acknowledged": "SubscriptionsAcknowledgedNotification",
}
# The Tasks extension's shapes, checked against its own schema.
TASK_RESULT_DEF = {
    "tasks/get": "GetTaskResult",
    "tasks/update": "UpdateTaskResult",
    "tasks/cancel": "CancelTaskResult",
}
TASK_NOTIFICATION_DEF = {"notifications/tasks": "TaskStatusNotification"}


class SchemaChecker:
    """Validates server output against the official JSON Schemas (the revision's, the Tasks extension's)."""

    def __init__(self) -> None:
        import jsonschema

        self.schema = json.loads(SCHEMA_PATH.read_text())
        self._tasks_schema: dict[str, Any] | None = None  # read when a task message is first checked
        self._validators: dict[tuple[str, str], Any] = {}
        self._jsonschema = jsonschema

    def _validator(self, which: str, name: str) -> Any:
        v = self._validators.get((which, name))
        if v is None:
            if which == "tasks" and self._tasks_schema is None:
                self._tasks_schema = json.loads(TASKS_SCHEMA_PATH.read_text())
            doc = self.schema if which == "base" else self._tasks_schema
            assert doc is not None
            schema = {"$schema": doc["$schema"], "$defs": doc["$defs"], "$ref": f"#/$defs/{name}"}
            cls = self._jsonschema.validators.validator_for(schema)
            v = self._validators[(which, name)] = cls(schema)
        return v

    def validator(self, name: str) -> Any:
        """The validator of the revision's definition ``name``."""
        return self._validator("base", name)

    def tasks_validator(self, name: str) -> Any:
        """The validator of the Tasks extension's definition ``name``."""
        return self._validator("tasks", name)

    def check(self, message: Any, method: str | None = None) -> None:
        """Raise if ``message`` (a parsed server message) is not valid for this revision, and, for a
        message of the Tasks extension (``resultType: task``, ``tasks/*`` results, ``notifications/tasks``),
        for the extension's schema too."""
        self.validator("JSONRPCMessage").validate(message)
        assert isinstance(message, dict)
        if "method" in message:
            assert "id" not in message, f"the server sent a request: {message}"
            task_name = TASK_NOTIFICATION_DEF.get(message["method"])
            if task_name:
                self.tasks_validator(task_name).validate(message)
                return
            name = NOTIFICATION_DEF.get(message["method"])
            assert name, f"unknown server notification {message['method']}"
            self.validator(name).validate(message)
        elif "result" in message:
            result = message["result"]
            assert "resultType" in result, f"result without resultType: {message}"
            if result["resultType"] == "input_required":
                self.validator("InputRequiredResult").validate(result)
                assert "inputRequests" in result or "requestState" in result
            elif result["resultType"] == "task":
                assert method in (None, "tools/call"), f"a task handle answers {method}, which the extension does not augment"
                self.tasks_validator("CreateTaskResult").validate(result)
            elif method in TASK_RESULT_DEF:
                assert result["resultType"] == "complete", f"{method} answered with resultType {result['resultType']!r}"
                self.tasks_validator(TASK_RESULT_DEF[method]).validate(result)
            elif method in RESULT_DEF:
                self.validator(RESULT_DEF[method]).validate(result)
        else:
            self.validator("JSONRPCErrorResponse").validate(message)

    def check_line(self, line: bytes, method: str | None = None) -> dict[str, Any]:
        assert line.endswith(b"\n") and b"\n" not in line[:-1], f"not one line: {line!r}"
        message = json.loads(line)
        self.check(message, method)
        return message


_checker: SchemaChecker | None = None


def checker() -> SchemaChecker:
    """The test process's one checker (its validators are built once, when first used)."""
    global _checker
    if _checker is None:
        _checker = SchemaChecker()
    return _checker


def check_journal(path: Any) -> list[dict[str, Any]]:
    """Check every message a run wrote, as its ``--journal`` recorded it (each answer against the
    shape of the request it answers); the messages, in order."""
    methods: dict[Any, str] = {}
    out = []
    with open(path, encoding="utf-8") as f:
        for text in f:
            record = json.loads(text)
            message = record.get("message")
            if type(message) is not dict:
                continue
            if record.get("dir") == "in" and "method" in message and "id" in message:
                methods[json.dumps(message["id"])] = message["method"]
            elif record.get("dir") == "out":
                rid = message.get("id") if "method" not in message else None
                checker().check(message, methods.get(json.dumps(rid)))
                out.append(message)
    return out
