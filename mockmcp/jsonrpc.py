"""JSON-RPC 2.0 decoding and encoding, with the revision's stricter id rules.

``decode`` turns one line into a ``Request``, ``Notification`` or
``ClientResponse`` or raises the ``ClientError`` that says why it cannot.
``encode`` produces one compact line; JSON escapes every control character, so
an encoded message can never contain a raw newline.
"""

from __future__ import annotations

import json
from typing import Any

from . import errors, protocol as p


class Request:
    __slots__ = ("id", "method", "params", "message")

    def __init__(self, id: Any, method: str, params: dict[str, Any], message: dict[str, Any]) -> None:
        self.id = id
        self.method = method
        self.params = params
        self.message = message

    def __repr__(self) -> str:
        return f"Request(id={self.id!r}, method={self.method!r})"


class Notification:
    __slots__ = ("method", "params", "message")

    def __init__(self, method: str, params: dict[str, Any], message: dict[str, Any]) -> None:
        self.method = method
        self.params = params
        self.message = message

    def __repr__(self) -> str:
        return f"Notification(method={self.method!r})"


class ClientResponse:
    """A response sent *by the client*: never valid in this revision on stdio."""

    __slots__ = ("id", "message")

    def __init__(self, id: Any, message: dict[str, Any]) -> None:
        self.id = id
        self.message = message


Message = Request | Notification | ClientResponse


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (_INF, -_INF):  # 1e400: valid JSON grammar, but no double holds it
        raise ValueError(f"number {text[:40]} is out of range")
    return value


_INF = float("inf")
_decoder = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)
_scan_once = _decoder.scan_once


def parse(line: bytes) -> Any:
    """Parse one line of JSON or raise ``ParseError``."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise errors.ParseError(f"Parse error: invalid UTF-8 at byte {exc.start}") from None
    try:
        if text[:1] == "{" and text[-1:] == "}":
            # The usual line: one object, no surrounding blanks. The scanner alone parses it;
            # a value that ends early (trailing data) falls through to the full decoder.
            value, end = _scan_once(text, 0)
            if end == len(text):
                return value
        return _decoder.decode(text)
    except StopIteration:  # the scanner's "no JSON value here": let the decoder explain
        return _decoder.decode(text)
    except RecursionError:
        raise errors.ParseError("Parse error: JSON nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, NaN/Infinity, too many digits
        raise errors.ParseError(f"Parse error: {exc}") from None


def valid_id(value: Any) -> bool:
    """Request ids are strings or integers; never null, booleans or floats."""
    return type(value) is str or type(value) is int


def decode(line: bytes) -> Message:
    return classify(parse(line))


def classify(obj: Any) -> Message:
    """Classify a parsed JSON value as a JSON-RPC message or raise."""
    if type(obj) is not dict:
        if type(obj) is list:
            raise errors.InvalidRequest("Invalid Request: batch arrays are not supported")
        raise errors.InvalidRequest("Invalid Request: a message must be a JSON object")
    has_id = "id" in obj
    rid = obj.get("id")
    id_ok = has_id and valid_id(rid)
    kw = {"request_id": rid} if id_ok else {}
    if obj.get("jsonrpc") != p.JSONRPC_VERSION:
        raise errors.InvalidRequest('Invalid Request: "jsonrpc" must be "2.0"', **kw)
    if "method" not in obj:
        if "result" in obj or "error" in obj:
            return ClientResponse(rid, obj)
        raise errors.InvalidRequest('Invalid Request: missing "method"', **kw)
    method = obj["method"]
    if type(method) is not str:
        raise errors.InvalidRequest('Invalid Request: "method" must be a string', **kw)
    if has_id and not id_ok:
        kind = "null" if rid is None else type(rid).__name__
        raise errors.InvalidRequest(f'Invalid Request: "id" must be a string or an integer, not {kind}')
    params = obj.get("params", _EMPTY)
    if type(params) is not dict:
        if has_id:
            raise errors.InvalidParams('Invalid params: "params" must be an object', **kw)
        params = _EMPTY
    if has_id:
        return Request(rid, method, params, obj)
    return Notification(method, params, obj)


_EMPTY: dict[str, Any] = {}

# check_circular=False: messages are trees built from parsed JSON and the scenario.
_encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False, check_circular=False)
_ascii_encoder = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False)


def encode(message: Any) -> bytes:
    """One compact JSON line, newline-terminated, always valid UTF-8."""
    text = _encoder.encode(message)
    try:
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate echoed from the client: escape it
        return (_ascii_encoder.encode(message) + "\n").encode("ascii")


def result_response(request_id: Any, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": p.JSONRPC_VERSION, "id": request_id, "result": result}


def notification(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": p.JSONRPC_VERSION, "method": method}
    if params is not None:
        msg["params"] = params
    return msg
