"""URI references and JSON pointers as ``$id``, ``$ref`` and ``$dynamicRef`` write them.

Pure text functions (no urllib): RFC 3986 section 5.2 resolution that treats every
scheme alike (``urn:`` included, which ``urljoin`` does not), ``%XX`` decoding of a
fragment, and the ``~0``/``~1`` escapes of a JSON pointer step. Imported only for
a schema that has an ``$id``, a ``$ref`` or a ``$dynamicRef`` (most tool schemas have none).
"""

from __future__ import annotations

import re

from mockmcp.wire.lazyre import LazyPattern

_URI = LazyPattern(r"(?:([^:/?#]+):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?\Z", re.S)


def join(base: str, ref: str) -> str:
    """``ref`` resolved against the URI ``base`` (RFC 3986 section 5.2)."""
    r = _URI.get().match(ref)
    b = _URI.get().match(base)
    assert r is not None and b is not None  # every string matches (each part is optional)
    scheme, authority, path, query, frag = r.groups()
    if scheme is None:
        bscheme, bauthority, bpath, bquery, _ = b.groups()
        scheme = bscheme
        if authority is None:
            authority = bauthority
            if not path:
                path = bpath
                query = query if query is not None else bquery
            elif not path.startswith("/"):
                if bauthority is not None and not bpath:
                    path = "/" + path
                else:
                    path = bpath[: bpath.rfind("/") + 1] + path
    out = f"{scheme}:" if scheme is not None else ""
    if authority is not None:
        out += f"//{authority}"
    out += remove_dots(path)
    if query is not None:
        out += f"?{query}"
    return out if frag is None else f"{out}#{frag}"


def remove_dots(path: str) -> str:
    """``path`` without its ``.`` and ``..`` segments (RFC 3986 section 5.2.4)."""
    if "." not in path:
        return path
    out: list[str] = []
    segments = path.split("/")
    for i, seg in enumerate(segments):
        last = i == len(segments) - 1
        if seg == ".":
            if last:
                out.append("")
        elif seg == "..":
            if len(out) > 1 or (out and out[0] != ""):
                out.pop()
            if last:
                out.append("")
        else:
            out.append(seg)
    return "/".join(out)


def percent_decode(text: str) -> str:
    """``%XX`` escapes of a URI fragment."""
    if "%" not in text:
        return text
    out = bytearray()
    i = 0
    raw = text.encode()
    while i < len(raw):
        pair = raw[i + 1 : i + 3]
        if raw[i] == 0x25 and len(pair) == 2 and all(c in b"0123456789abcdefABCDEF" for c in pair):
            out.append(int(pair, 16))
            i += 3
        else:
            out.append(raw[i])
            i += 1
    return out.decode("utf-8", "replace")


def unescape_step(part: str) -> str:
    """One step of a JSON pointer as the property name it stands for."""
    return part.replace("~1", "/").replace("~0", "~")
