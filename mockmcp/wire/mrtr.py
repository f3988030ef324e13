"""Multi round-trip requests: the stateless ``requestState`` and the input checks.

The server keeps nothing between rounds. What it needs travels in
``requestState``: the round, the keys it asked for, and a digest of the
originating request (method, tool/prompt name or URI, arguments). The state is
HMAC-SHA256 protected with a per-process random key (or the scenario's
``protocol.stateKey`` for reproducible tests), so a tampered or foreign state
is rejected rather than trusted.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from typing import Any

from mockmcp.wire import protocol as p
from mockmcp.wire.lazyre import LazyPattern


class StateError(ValueError):
    """A requestState that is malformed or fails verification."""


def origin(method: str, ctx: dict[str, Any]) -> str:
    """A digest of what identifies the originating request."""
    target = ctx.get("name") if method != p.RESOURCES_READ else ctx.get("uri")
    args = json.dumps(ctx.get("arguments") or {}, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    digest = hashlib.sha256(args.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{method}|{target}|{digest}"


class DecodedState:
    """What a verified ``requestState`` carries.

    ``requests`` are the input requests of the round that issued it (so a retry
    that lacks an answer can be asked again without server memory) and
    ``answers`` the answers already given in earlier retries of that round.
    """

    __slots__ = ("origin", "round", "asked", "user", "requests", "answers")

    def __init__(
        self,
        origin: str,
        round: int,
        asked: dict[str, str],
        user: Any,
        requests: dict[str, Any] | None = None,
        answers: dict[str, Any] | None = None,
    ) -> None:
        self.origin = origin
        self.round = round
        self.asked = asked
        self.user = user
        self.requests = requests or {}
        self.answers = answers or {}

    def describe_origin(self) -> str:
        method, target, _ = (self.origin.split("|") + ["", ""])[:3]
        return f"{method} of {target!r}"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


_CANONICAL_PART = LazyPattern(r"[A-Za-z0-9_-]*")  # (rarely needed: compiled on first use, not at every spawn)


def _unb64(text: str) -> bytes:
    """The bytes of one part, only if ``text`` is exactly how ``_b64`` writes them.

    base64 decoders forgive: padding, whitespace, the ``+/`` alphabet, and the
    unused low bits of the last character (``...A`` and ``...B`` can decode to
    the same bytes). A state is an opaque token echoed byte for byte, so a
    client that alters it must be told, whatever the bytes decode to.
    """
    if not _CANONICAL_PART.get().fullmatch(text):
        raise StateError("malformed (not unpadded base64url)")
    try:
        data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except binascii.Error:  # a length no base64 text has
        raise StateError("malformed (not base64)") from None
    if _b64(data) != text:
        raise StateError("malformed (not the canonical base64url text)")
    return data


class StateCodec:
    def __init__(self, key: bytes) -> None:
        self.key = key  # handed in by the shell (a random per-process key) or the scenario

    def _mac(self, payload: bytes) -> bytes:
        return hmac.new(self.key, payload, hashlib.sha256).digest()[:16]

    def issue(
        self,
        origin: str,
        round: int,
        asked: dict[str, str],
        user: Any = None,
        requests: dict[str, Any] | None = None,
        answers: dict[str, Any] | None = None,
    ) -> str:
        body: dict[str, Any] = {"v": 1, "o": origin, "r": round, "a": asked}
        if user is not None:
            body["u"] = user
        if requests:
            body["q"] = requests
        if answers:
            body["p"] = answers
        payload = json.dumps(body, separators=(",", ":"), sort_keys=True).encode()
        return f"{_b64(payload)}.{_b64(self._mac(payload))}"

    def verify(self, token: str) -> DecodedState:
        parts = token.split(".")
        if len(parts) != 2:
            raise StateError("malformed (not issued by this server)")
        payload, mac = _unb64(parts[0]), _unb64(parts[1])
        if not hmac.compare_digest(mac, self._mac(payload)):
            raise StateError("integrity check failed (tampered, or issued by another server process)")
        try:
            body = json.loads(payload)
            return DecodedState(
                body["o"], int(body["r"]), dict(body["a"]), body.get("u"), body.get("q"), body.get("p")
            )
        except (ValueError, KeyError, TypeError):  # pragma: no cover - we signed it ourselves
            raise StateError("malformed payload") from None


def missing_capabilities(requests: dict[str, Any], caps: dict[str, Any]) -> dict[str, Any]:
    """The client capabilities these input requests need and the client lacks."""
    missing: dict[str, Any] = {}
    for req in requests.values():
        method = req.get("method") if isinstance(req, dict) else None
        params = (req.get("params") if isinstance(req, dict) else None) or {}
        if method == p.ELICIT:
            mode = params.get("mode", "form") if isinstance(params, dict) else "form"
            have = caps.get("elicitation")
            if mode == "url":
                if not isinstance(have, dict) or "url" not in have:
                    missing.setdefault("elicitation", {})["url"] = {}
            else:
                # An empty elicitation object means form mode (the revision's backwards-compatible default).
                if not isinstance(have, dict) or (have and "form" not in have):
                    missing.setdefault("elicitation", {})["form"] = {}
        elif method == p.SAMPLE:
            lacking = _sampling_lacks(params if isinstance(params, dict) else {}, caps.get("sampling"))
            if lacking is not None:
                missing.setdefault("sampling", {}).update(lacking)
        elif method == p.LIST_ROOTS:
            if not isinstance(caps.get("roots"), dict):
                missing["roots"] = {}
    return missing


def _sampling_lacks(params: dict[str, Any], have: Any) -> dict[str, Any] | None:
    """What of ``sampling`` a createMessage request needs and the client lacks (``None``: nothing).

    Tool use (``tools`` or ``toolChoice``) needs ``sampling.tools`` and an
    ``includeContext`` other than ``none`` needs ``sampling.context``
    (client/sampling: servers MUST NOT / SHOULD NOT send them otherwise).
    """
    have = have if isinstance(have, dict) else None
    lacks: dict[str, Any] = {}
    if ("tools" in params or "toolChoice" in params) and not (have is not None and isinstance(have.get("tools"), dict)):
        lacks["tools"] = {}
    if params.get("includeContext", "none") != "none" and not (have is not None and isinstance(have.get("context"), dict)):
        lacks["context"] = {}
    return lacks if lacks or have is None else None


def describe_capabilities(missing: dict[str, Any]) -> list[str]:
    out = []
    for cap, sub in missing.items():
        if sub:
            out += [f"{cap}.{k}" for k in sub]
        else:
            out.append(cap)
    return out


def check_response(kind: str, value: Any) -> str | None:
    """Why ``value`` is not a valid answer to an input request of ``kind``."""
    if type(value) is not dict:
        return "it must be an object"
    if kind == p.ELICIT:
        if value.get("action") not in ("accept", "decline", "cancel"):
            return "'action' must be accept, decline or cancel"
        content = value.get("content")
        if content is not None and type(content) is not dict:
            return "'content' must be an object"
    elif kind == p.SAMPLE:
        if value.get("role") not in ("user", "assistant"):
            return "'role' must be user or assistant"
        if type(value.get("model")) is not str:
            return "'model' must be a string"
        if type(value.get("content")) not in (dict, list):
            return "'content' must be a content block or a list of them"
    elif kind == p.LIST_ROOTS:
        roots = value.get("roots")
        if type(roots) is not list or any(type(r) is not dict or type(r.get("uri")) is not str for r in roots):
            return "'roots' must be a list of objects with a 'uri'"
    return None
