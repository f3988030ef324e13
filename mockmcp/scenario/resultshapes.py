"""The shapes of the complete results a ``result`` step writes, as the revision's schema gives them.

A ``result`` step is how a scenario says "a valid answer": ``check`` refuses one that is not
(a deliberately wrong answer is a ``raw`` step), and the recorder writes a server's answer as a
``result`` step only when these rules take it, otherwise as the ``raw`` message it was. One
module for both, so a recorded cassette always passes ``check``.

The rules are the schema's for ``tools/call``, ``prompts/get`` and ``resources/read`` results:
required members, and the JSON type of every member the schema defines (content blocks,
annotations, icons, resource contents; ``structuredContent`` may be any JSON value in this
revision). Members it does not define are left alone (results may
carry more; ``nearmisses`` warns for a typo). Sans-I/O.
"""

from __future__ import annotations

from typing import Any, Callable

from mockmcp.wire import protocol as p

Path_ = tuple[Any, ...]
Problem = tuple[Path_, str]

_KINDS: dict[str, Callable[[Any], bool]] = {
    "a string": lambda v: type(v) is str,
    "a boolean": lambda v: type(v) is bool,
    "an integer": lambda v: type(v) is int or (type(v) is float and v.is_integer()),
    "a number": lambda v: type(v) in (int, float),
    "an object": lambda v: type(v) is dict,
    "a list of strings": lambda v: type(v) is list and all(type(x) is str for x in v),
}

# Each content block's members: (member, kind, required).
_BLOCKS: dict[str, tuple[tuple[str, str, bool], ...]] = {
    "text": (("text", "a string", True),),
    "image": (("data", "a string", True), ("mimeType", "a string", True)),
    "audio": (("data", "a string", True), ("mimeType", "a string", True)),
    "resource_link": (("uri", "a string", True), ("name", "a string", True), ("title", "a string", False),
                      ("description", "a string", False), ("mimeType", "a string", False), ("size", "an integer", False)),
    "resource": (),  # its `resource` is resource contents, below
}
_COMMON = (("_meta", "an object", False),)
# Every member the schema defines, by result and for a content block (``nearmisses`` warns for
# a name one typo from one of these).
RESULT_MEMBERS: dict[str, frozenset[str]] = {
    p.TOOLS_CALL: frozenset({"_meta", "content", "isError", "resultType", "structuredContent"}),
    p.PROMPTS_GET: frozenset({"_meta", "description", "messages", "resultType"}),
    p.RESOURCES_READ: frozenset({"_meta", "cacheScope", "contents", "resultType", "ttlMs"}),
    p.COMPLETE: frozenset({"_meta", "completion", "resultType"}),
}
CONTENT_MEMBERS = frozenset({"type", "annotations", "resource", "icons", *(key for members in _BLOCKS.values() for key, _, _ in members),
                             *(key for key, _, _ in _COMMON)})
_CONTENTS = (("uri", "a string", True), ("mimeType", "a string", False), ("_meta", "an object", False))
_ROLES = ("user", "assistant")


def _members(value: dict[str, Any], members: tuple[tuple[str, str, bool], ...], what: str) -> list[Problem]:
    out: list[Problem] = []
    for key, kind, required in members:
        if key not in value:
            if required:
                out.append(((), f"{what} needs {key!r}"))
        elif not _KINDS[kind](value[key]):
            out.append(((key,), f"{key} must be {kind}"))
    return out


def _annotations(value: Any) -> list[Problem]:
    if type(value) is not dict:
        return [((), "annotations must be an object")]
    out: list[Problem] = []
    audience = value.get("audience")
    if "audience" in value and (type(audience) is not list or any(a not in _ROLES for a in audience)):
        out.append((("audience",), "audience must be a list of user and assistant"))
    priority = value.get("priority")
    if "priority" in value and not (isinstance(priority, (int, float)) and type(priority) is not bool
                                    and 0 <= priority <= 1):
        out.append((("priority",), "priority must be a number from 0 to 1"))
    if "lastModified" in value and type(value["lastModified"]) is not str:
        out.append((("lastModified",), "lastModified must be a string (ISO 8601)"))
    return out


def _icons(value: Any) -> list[Problem]:
    if type(value) is not list:
        return [((), "icons must be a list")]
    out: list[Problem] = []
    for i, icon in enumerate(value):
        if type(icon) is not dict:
            out.append(((i,), "an icon must be an object with 'src'"))
            continue
        members = (("src", "a string", True), ("mimeType", "a string", False), ("sizes", "a list of strings", False))
        out += [((i, *sub), msg) for sub, msg in _members(icon, members, "an icon")]
    return out


def _resource_contents(value: Any) -> list[Problem]:
    if type(value) is not dict:
        return [((), "resource contents must be an object with 'uri' and 'text' or 'blob'")]
    out = _members(value, _CONTENTS, "each resource contents entry")
    if "text" not in value and "blob" not in value:
        out.append(((), "resource contents need 'text' or 'blob'"))
    for key in ("text", "blob"):
        if key in value and type(value[key]) is not str:
            out.append(((key,), f"{key} must be a string"))
    return out


def content_problems(block: Any) -> list[Problem]:
    """What makes ``block`` not a content block of the schema (by path within it)."""
    if type(block) is not dict:
        return [((), "a content block must be a mapping")]
    kind = block.get("type")
    if type(kind) is not str or kind not in _BLOCKS:
        return [((), f"content type must be one of {', '.join(_BLOCKS)}, got {kind!r}")]
    out = _members(block, _BLOCKS[kind] + _COMMON, f"a {kind} content block")
    if kind == "resource":
        if "resource" not in block:
            out.append(((), "a resource content block needs 'resource'"))
        else:
            out += [(("resource", *sub), msg) for sub, msg in _resource_contents(block["resource"])]
    if "annotations" in block:
        out += [(("annotations", *sub), msg) for sub, msg in _annotations(block["annotations"])]
    if kind == "resource_link" and "icons" in block:
        out += [(("icons", *sub), msg) for sub, msg in _icons(block["icons"])]
    return out


def _each(items: Any, name: str, what: str, check: Callable[[Any], list[Problem]]) -> list[Problem]:
    if type(items) is not list:
        return [((), f"{what} needs a {name!r} list")]
    return [((name, i, *sub), msg) for i, item in enumerate(items) for sub, msg in check(item)]


def _message(m: Any) -> list[Problem]:
    if type(m) is not dict or m.get("role") not in _ROLES:
        return [((), "a prompt message needs role user or assistant")]
    if "content" not in m:
        return [((), "a prompt message needs 'content'")]
    return [(("content", *sub), msg) for sub, msg in content_problems(m["content"])]


def result_problems(method: str, result: dict[str, Any]) -> list[Problem]:
    """What makes ``result`` not a complete result of ``method`` (by path within it); nothing for
    a method whose results the scenario writes freely (``methods:`` overrides, completions)."""
    out: list[Problem] = []
    if result.get("resultType", "complete") != "complete":
        out.append((("resultType",), "a result step is complete; use inputRequired, or raw for other resultTypes"))
    if "_meta" in result and type(result["_meta"]) is not dict:
        out.append((("_meta",), "_meta must be an object"))
    if method == p.TOOLS_CALL:
        out += _each(result.get("content"), "content", "a tools/call result", content_problems)
        if "isError" in result and type(result["isError"]) is not bool:
            out.append((("isError",), "isError must be a boolean"))
    elif method == p.PROMPTS_GET:
        out += _each(result.get("messages"), "messages", "a prompts/get result", _message)
        if "description" in result and type(result["description"]) is not str:
            out.append((("description",), "description must be a string"))
    elif method == p.RESOURCES_READ:
        out += _each(result.get("contents"), "contents", "a resources/read result", _resource_contents)
    return out
