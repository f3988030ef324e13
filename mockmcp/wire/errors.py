"""Client mistakes as exceptions that carry the JSON-RPC error to send back.

In the spirit of wsproto: code anywhere in the core raises a ``ClientError``
subclass when the *client* did something wrong; exactly one boundary
(``Connection.handle_line``) turns it into an error response. Any other
exception is a bug in mockmcp and is allowed to surface.

``error_response`` is the one builder of a JSON-RPC error response: the
boundary uses it for raised errors, and the step expander for the errors a
scenario scripts (``error:`` steps), so both have one shape.
"""

from __future__ import annotations

from typing import Any, Final

from mockmcp.wire import protocol as p


class _Absent:
    """The marker for "no such member" (``data`` or ``id`` left out), distinct from ``None``."""

    _instance: _Absent | None = None

    def __new__(cls) -> _Absent:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ABSENT"

    def __reduce__(self) -> str:
        return "ABSENT"


ABSENT: Final = _Absent()

DEFAULT_MESSAGES: Final = {
    p.PARSE_ERROR: "Parse error",
    p.INVALID_REQUEST: "Invalid Request",
    p.METHOD_NOT_FOUND: "Method not found",
    p.INVALID_PARAMS: "Invalid params",
    p.INTERNAL_ERROR: "Internal error",
    p.MISSING_REQUIRED_CLIENT_CAPABILITY: "Missing required client capability",
    p.UNSUPPORTED_PROTOCOL_VERSION: "Unsupported protocol version",
}


def error_response(request_id: Any, code: int, message: str | None, data: Any = ABSENT) -> dict[str, Any]:
    """The one builder of a JSON-RPC error response.

    ``request_id`` may be ``ABSENT`` (the id could not be read: the member is
    left out); ``message`` ``None`` takes the standard text for ``code``.
    """
    error: dict[str, Any] = {"code": code, "message": DEFAULT_MESSAGES.get(code, "Error") if message is None else message}
    if data is not ABSENT:
        error["data"] = data
    msg: dict[str, Any] = {"jsonrpc": p.JSONRPC_VERSION}
    if request_id is not ABSENT:
        msg["id"] = request_id
    msg["error"] = error
    return msg


class ClientError(Exception):
    """The client sent something we must answer with a JSON-RPC error."""

    code: int = p.INTERNAL_ERROR

    def __init__(self, message: str, *, data: Any = ABSENT, request_id: Any = ABSENT, notification: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.data = data
        self.request_id = request_id
        # The mistake is in a notification (found before it was decoded as one): never answered.
        self.notification = notification

    def response(self) -> dict[str, Any]:
        """The error response; without ``id`` when the id could not be read."""
        return error_response(self.request_id, self.code, self.message, self.data)

    @property
    def has_id(self) -> bool:
        return self.request_id is not ABSENT


class ParseError(ClientError):
    code = p.PARSE_ERROR


class InvalidRequest(ClientError):
    code = p.INVALID_REQUEST


class MethodNotFound(ClientError):
    code = p.METHOD_NOT_FOUND


class InvalidParams(ClientError):
    code = p.INVALID_PARAMS


class MissingClientCapability(ClientError):
    code = p.MISSING_REQUIRED_CLIENT_CAPABILITY


class UnsupportedVersion(ClientError):
    code = p.UNSUPPORTED_PROTOCOL_VERSION


class NoRuleMatched(ClientError):
    """No rule of a tool, prompt or resource matched: the scenario has no answer for this request.

    Answered ``-32603`` with the closest rule (the near miss) in ``data``, so
    a test author sees at once which condition failed.
    """

    code = p.INTERNAL_ERROR

    def __init__(self, what: str, near_miss: dict[str, Any] | None, *, request_id: Any) -> None:
        reason = f" ({near_miss['reason']})" if near_miss else ""
        super().__init__(
            f"mockmcp: no rule of {what} matched this request{reason}",
            data={"nearMiss": near_miss} if near_miss else ABSENT,
            request_id=request_id,
        )
        self.what = what
        self.near_miss = near_miss
