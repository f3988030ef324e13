"""JSON-RPC 2.0 decoding and encoding, with the revision's stricter id rules.

``decode`` turns one line into a ``Request``, ``Notification`` or
``ClientResponse`` or raises the ``ClientError`` that says why it cannot.
``encode`` produces one compact line; JSON escapes every control character, so
an encoded message can never contain a raw newline.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any, Callable

from mockmcp.wire.lazyre import LazyPattern
from mockmcp.wire import errors
from mockmcp.wire import protocol as p


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


MAX_DEPTH = 64
"""The deepest nesting a message may have (the message object itself is level 1).

Enforced when a line is decoded, far below the depth at which Python's JSON
encoder (replies, ``requestState``, the journal) or decoder would recurse too
deep, so no value taken from a client can break an encoder later.
"""


OUT_OF_RANGE_REASON = "a number is out of range (beyond a double, or an integer of more than 4300 digits)"


class _NotJson(ValueError):
    """``NaN``, ``Infinity``: Python's decoder takes them, JSON has no such values."""


class _OutOfRange(ValueError):
    """A number JSON allows but no double holds (``1e400``)."""


def _reject_constant(name: str) -> Any:
    raise _NotJson(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (_INF, -_INF):
        raise _OutOfRange(text)
    return value


_INF = float("inf")
_JSON_SPACE = " \t\n\r"  # the only whitespace JSON allows between tokens (RFC 8259)
_decoder = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)
# (the C scanner: raw_decode's body without its frame; typeshed does not declare the attribute)
_scan: Callable[[str, int], tuple[Any, int]] = _decoder.scan_once  # type: ignore[attr-defined]
# A JSON string (or an unterminated one running to the end), matched in linear time.
_STRING = LazyPattern(r'"(?:[^"\\]++|\\.)*+(?:"|\\?\Z)', re.S)
_NOT_BRACKET = LazyPattern(r"[^\[\]{}]+")
# A bracket outside strings, with the text before it (strings and all) consumed.
_NEXT_BRACKET = LazyPattern(r'(?:[^"\[\]{}]++|"(?:[^"\\]++|\\.)*+(?:"|\\?\Z))*+([\[\]{}])', re.S)
_DELTA = {"[": 1, "{": 1, "]": -1, "}": -1}


def parse(line: bytes) -> Any:
    """Parse one line of JSON or raise the ``ClientError`` that says why not.

    Invalid JSON is -32700. Valid JSON beyond the limits (deeper than
    ``MAX_DEPTH``, a number no double holds, an integer past the interpreter's
    4300-digit limit) is answered with the request's id where it can be read.
    """
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise errors.ParseError(f"Parse error: invalid UTF-8 at byte {exc.start}") from None
    if text.count("{") + text.count("[") > MAX_DEPTH:  # cheap: only such lines can be too deep
        shallow = _cut_below(text, MAX_DEPTH)
        if shallow is not None:
            raise _beyond_limits(shallow, f"nested deeper than {MAX_DEPTH} levels")
    try:
        # The decoder's C scanner itself, not decode() or raw_decode(): the same scan without
        # decode()'s two whitespace regexes and both Python frames (a third of the time);
        # JSON's whitespace around the value is handled here, as is raw_decode's StopIteration.
        start = len(text) - len(text.lstrip(_JSON_SPACE)) if text[:1] in _JSON_SPACE else 0
        try:
            value, end = _scan(text, start)
        except StopIteration as stop:
            raise json.JSONDecodeError("Expecting value", text, stop.value) from None
        if end != len(text):
            rest = text[end:].lstrip(_JSON_SPACE)
            if rest:
                raise json.JSONDecodeError("Extra data", text, len(text) - len(rest))
        return value
    except (json.JSONDecodeError, _NotJson) as exc:
        raise errors.ParseError(f"Parse error: {exc}") from None
    except ValueError:  # _OutOfRange, or an integer past the digit limit: valid JSON grammar
        raise _beyond_limits(text, OUT_OF_RANGE_REASON) from None


class JsonRefused(ValueError):
    """A text ``strict_loads`` refuses; ``reason`` says why, ready for an error message."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def strict_loads(text: str) -> Any:
    """One JSON value read as strictly as a client's line, for JSON a client sends outside
    JSON-RPC (an OAuth registration body): RFC 8259 only (no ``NaN``/``Infinity``), no number
    beyond a double or the interpreter's digit limit, and nested at most ``MAX_DEPTH`` levels,
    so whatever is read can be encoded again (an encoder recurses per level). ``JsonRefused``
    otherwise, whose reason names which rule the text broke."""
    if text.count("{") + text.count("[") > MAX_DEPTH and _depths(text)[0] > MAX_DEPTH:
        raise JsonRefused(f"nested deeper than {MAX_DEPTH} levels")
    try:
        return _decoder.decode(text)
    except _NotJson as exc:
        raise JsonRefused(str(exc)) from None
    except json.JSONDecodeError as exc:
        raise JsonRefused(f"not JSON ({exc})") from None
    except ValueError:  # _OutOfRange, or an integer past the digit limit: valid JSON grammar
        raise JsonRefused(OUT_OF_RANGE_REASON) from None


def _depths(text: str) -> tuple[int, int]:
    """How deep ``text`` nests and how deep it still is at its end (strings skipped), in
    C-speed steps and without recursion."""
    brackets = _NOT_BRACKET.get().sub("", _STRING.get().sub("", text))
    deepest = max(accumulate(map(_DELTA.__getitem__, brackets)), default=0)
    return deepest, brackets.count("[") + brackets.count("{") - brackets.count("]") - brackets.count("}")


def _cut_below(text: str, limit: int) -> str | None:
    """``text`` with every value deeper than ``limit`` replaced by ``null``; ``None`` if none is.

    Linear and never recursive: strings are skipped whole, so brackets inside
    them do not count.
    """
    deepest, end = _depths(text)
    if deepest <= limit:
        return None
    if end > limit:  # known without the walk below, a Python step per bracket
        raise errors.ParseError(f"Parse error: a value nested deeper than {limit} levels is never closed")
    depth, cut_at, pieces, pos = 0, 0, [], 0
    for m in _NEXT_BRACKET.get().finditer(text):
        if m.group(1) in "[{":
            depth += 1
            if depth == limit + 1:
                cut_at = m.start(1)
        else:
            if depth == limit + 1:
                pieces += [text[pos:cut_at], "null"]
                pos = m.end()
            depth -= 1
    if depth > limit:  # a deep value never closed: the line is not JSON
        raise errors.ParseError(f"Parse error: a value nested deeper than {limit} levels is never closed")
    pieces.append(text[pos:])
    return "".join(pieces)


def _beyond_limits(text: str, why: str) -> errors.ClientError:
    """The error for valid JSON past a limit, with the request's id if the rest can be read.

    ``text`` is the line with the values past the limits made readable (deep
    values cut, out-of-range numbers read leniently); if even that is not JSON,
    the line is a parse error after all.
    """
    try:
        obj = _lenient.decode(text)
    except (json.JSONDecodeError, _NotJson) as exc:
        return errors.ParseError(f"Parse error: {exc}")
    if type(obj) is dict and obj.get("id") is _OUT_OF_RANGE:
        return errors.InvalidRequest('Invalid Request: "id" is out of range')
    msg = classify(obj)  # raises for what is not a request at all
    if type(msg) is Request:
        return errors.InvalidParams(f"Invalid params: {why}", request_id=msg.id)
    if type(msg) is Notification:
        return errors.InvalidParams(f"Invalid params: {why}", notification=True)
    return errors.InvalidRequest(f"Invalid Request: {why}")


_OUT_OF_RANGE: Any = object()  # what the lenient decoder reads for a number past the limits


def _lenient_float(text: str) -> Any:
    value = float(text)
    return _OUT_OF_RANGE if value in (_INF, -_INF) else value


def _lenient_int(text: str) -> Any:
    try:
        return int(text)
    except ValueError:  # past the interpreter's digit limit (4300 by default)
        return _OUT_OF_RANGE


_lenient = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_lenient_float, parse_int=_lenient_int)


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
    # (one lookup per member, and valid_id written out: this runs for every line)
    rid = obj.get("id", _ABSENT)
    has_id = rid is not _ABSENT
    id_ok = type(rid) is str or type(rid) is int  # valid_id; the sentinel is neither
    answer_to = rid if id_ok else errors.ABSENT  # the id an error can be answered with
    if obj.get("jsonrpc") != p.JSONRPC_VERSION:
        raise errors.InvalidRequest('Invalid Request: "jsonrpc" must be "2.0"', request_id=answer_to)
    method = obj.get("method", _ABSENT)
    if method is _ABSENT:
        if "result" in obj or "error" in obj:
            return ClientResponse(None if rid is _ABSENT else rid, obj)
        raise errors.InvalidRequest('Invalid Request: missing "method"', request_id=answer_to)
    if type(method) is not str:
        raise errors.InvalidRequest('Invalid Request: "method" must be a string', request_id=answer_to)
    if has_id and not id_ok:
        kind = "null" if rid is None else type(rid).__name__
        raise errors.InvalidRequest(f'Invalid Request: "id" must be a string or an integer, not {kind}')
    params = obj.get("params", _EMPTY)
    if type(params) is not dict:
        if has_id:
            raise errors.InvalidParams('Invalid params: "params" must be an object', request_id=answer_to)
        params = _EMPTY
    if has_id:
        return Request(rid, method, params, obj)
    return Notification(method, params, obj)


_EMPTY: dict[str, Any] = {}
_ABSENT: Any = object()  # a member the message does not have

# check_circular=False: messages are trees built from parsed JSON and the scenario.
_encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False, check_circular=False)
_ascii_encoder = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False)


# The C encoder that ``_encoder.encode`` builds anew on every call (with exactly these
# arguments), built once: that construction (the encoder's Python frames, the C encoder's
# argument parsing) was two fifths of encoding a small message, and every answer and control
# response is encoded here. ``None`` without json's C accelerator: ``_encoder.encode`` then.
_make_c_encoder: Any = getattr(json.encoder, "c_make_encoder", None)
_c_encode: Callable[[Any, int], Any] | None = (
    None
    if _make_c_encoder is None
    else _make_c_encoder(None, _encoder.default, json.encoder.encode_basestring, None, ":", ",", False, False, False)
)


def _encode_text(value: Any) -> str:
    if _c_encode is None:
        return _encoder.encode(value)
    return "".join(_c_encode(value, 0))


def encode(message: Any) -> bytes:
    """One compact JSON line, newline-terminated, always valid UTF-8."""
    text = _encode_text(message)
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


def encode_text(value: Any) -> str:
    """``value`` as compact JSON text, by the very encoder ``encode`` uses (compiled replies
    encode their holes with it, so both paths write the same bytes)."""
    return _encode_text(value)
