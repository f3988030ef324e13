"""Client mistakes as exceptions that carry the JSON-RPC error to send back.

In the spirit of wsproto: code anywhere in the core raises a ``ClientError``
subclass when the *client* did something wrong; exactly one boundary
(``Connection._handle_line``) turns it into an error response. Any other
exception is a bug in mockmcp and is allowed to surface.
"""

from __future__ import annotations

from typing import Any

from . import protocol as p

_ABSENT: Any = object()


class ClientError(Exception):
    """The client sent something we must answer with a JSON-RPC error."""

    code = p.INTERNAL_ERROR

    def __init__(self, message: str, *, data: Any = _ABSENT, request_id: Any = _ABSENT) -> None:
        super().__init__(message)
        self.message = message
        self.data = data
        self.request_id = request_id

    def error_object(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not _ABSENT:
            error["data"] = self.data
        return error

    def response(self) -> dict[str, Any]:
        """The error response; without ``id`` when the id could not be read."""
        msg: dict[str, Any] = {"jsonrpc": p.JSONRPC_VERSION}
        if self.request_id is not _ABSENT:
            msg["id"] = self.request_id
        msg["error"] = self.error_object()
        return msg

    @property
    def has_id(self) -> bool:
        return self.request_id is not _ABSENT


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


class ScriptedError(ClientError):
    """An error the scenario chose to send (any code, message and data)."""

    def __init__(self, code: int, message: str, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.code = code
