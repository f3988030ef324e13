"""The control protocol's errors and its parameter readers, shared by every group of operations.

A control client's mistake is a ``ClientError`` raised where it is found (here, for a parameter
of the wrong shape); ``Control.handle_line`` turns it into its error response. The codes beyond
JSON-RPC's own are in the range JSON-RPC leaves to implementations. Sans-I/O.
"""

from __future__ import annotations

from typing import Any

from mockmcp.wire import errors
from mockmcp.wire import jsonrpc

NOT_FOUND = -32004  # the tool, prompt, resource, template or armed reply named does not exist
TIMED_OUT = -32008  # waitFor: no matching request in time (data.nearMiss: the closest one)

MAX_WAIT_SECONDS = 3_600.0  # a pause or a wait lasts at most this long

# A control ``when``: the scenario's ``when`` (the rest), and the method, name and uri it is for.
When = tuple[dict[str, Any], str | None, str | None, str | None]


class NotFound(errors.ClientError):
    code = NOT_FOUND


class TimedOut(errors.ClientError):
    code = TIMED_OUT


def ok(rid: Any, result: dict[str, Any]) -> dict[str, Any]:
    return jsonrpc.result_response(rid, result)


def str_param(params: dict[str, Any], key: str, rid: Any, *, required: bool = True) -> Any:
    value = params.get(key)
    if value is None:
        if required:
            raise errors.InvalidParams(f"Invalid params: missing {key!r}", request_id=rid)
        return None
    if type(value) is not str:
        raise errors.InvalidParams(f"Invalid params: {key!r} must be a string", request_id=rid)
    return value


def int_param(params: dict[str, Any], key: str, rid: Any, *, default: int | None = None,
              minimum: int | None = None) -> int:
    value = params.get(key)
    if value is None:
        if default is None:
            raise errors.InvalidParams(f"Invalid params: missing {key!r}", request_id=rid)
        return default
    if type(value) is not int:
        raise errors.InvalidParams(f"Invalid params: {key!r} must be an integer", request_id=rid)
    if minimum is not None and value < minimum:
        raise errors.InvalidParams(f"Invalid params: {key!r} must be {minimum} or more, got {value}", request_id=rid)
    return value


def number_param(params: dict[str, Any], key: str, rid: Any) -> float | None:
    value = params.get(key)
    if value is None:
        return None
    if type(value) not in (int, float):
        raise errors.InvalidParams(f"Invalid params: {key!r} must be a number of seconds", request_id=rid)
    return float(value)


def bool_param(params: dict[str, Any], key: str, rid: Any, *, default: bool) -> bool:
    value = params.get(key, default)
    if type(value) is not bool:
        raise errors.InvalidParams(f"Invalid params: {key!r} must be true or false", request_id=rid)
    return value


def when_param(params: dict[str, Any], rid: Any, *, method_required: bool) -> When:
    """``params.when`` split into the scenario's ``when`` and the method, name and uri it is for."""
    when = params.get("when")
    if type(when) is not dict:
        need = " (with at least 'method')" if method_required else " ({} matches any request)"
        raise errors.InvalidParams(f"Invalid params: 'when' must be an object{need}", request_id=rid)
    rest = dict(when)
    found: dict[str, str | None] = {}
    for key in ("method", "name", "uri"):
        value = rest.pop(key, None)
        if value is not None and type(value) is not str:
            raise errors.InvalidParams(f"Invalid params: when.{key} must be a string", request_id=rid)
        found[key] = value
    if method_required and found["method"] is None:
        raise errors.InvalidParams("Invalid params: missing when.method", request_id=rid)
    return rest, found["method"], found["name"], found["uri"]
