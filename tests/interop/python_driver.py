"""Drive the official Python SDK client (mcp==2.3.0) through a plan of operations.

Usage: ``python python_driver.py --backend asyncio|trio PLAN.json`` (or the plan
on stdin). Prints one JSON object on stdout: how the connection went and, per
operation, what the client got (``ok`` with a trimmed result, ``error`` with the
JSON-RPC code, ``timeout``, or ``client-error`` with the exception type). The plan
format is shared with ``ts/driver.mjs``::

    {"command": ["python", "-m", "mockmcp", "run", "default"],
     "timeoutMs": 5000, "connectTimeoutMs": 10000, "stopAfterBreak": false,
     "mode": "auto",  # Python only: "legacy" forces the initialize handshake
     "ops": [{"op": "listTools"}, {"op": "callTool", "name": "echo", "arguments": {...}},
             {"op": "listPrompts"}, {"op": "getPrompt", "name": "p", "arguments": {...}},
             {"op": "listResources"}, {"op": "listResourceTemplates"},
             {"op": "readResource", "uri": "..."}, {"op": "complete", "ref": {...}, "argument": {...}},
             {"op": "listen", "filter": {"toolsListChanged": true, ...}, "ms": 1500}]}

With ``--serve`` the driver reads batches from stdin, one per line: a batch
``{"plans": [PLAN, ...], "jobs": N}`` runs every plan, N sessions at once, and prints
``{"results": [RESULT, ...]}`` (in the plans' order) as one line; at the end of its input the
driver exits. The interop matrix keeps one driver per client for all its rounds (``matrix.Driver``),
so it pays for one interpreter and one import of the SDK per client and run, not one per cell or
round. Each plan still spawns its own mock.

With ``"transport": "http"`` the driver spawns ``command`` itself (it must serve Streamable
HTTP, e.g. ``mockmcp run ... --http 0``), reads the endpoint URL from its first stdout
line, connects the client's Streamable HTTP transport to it, and closes the server's
stdin at the end (EOF stops it).

With ``"auth"`` (the interop matrix sets it for a scenario with an ``auth`` section) the
HTTP session authorizes: an ``OAuthClientProvider`` on the transport's HTTP client, the
user's browser played by the driver (``python_auth.py``, which says what ``auth`` holds);
the result's ``auth`` lists each authorization request's scope and each response's
outcome. ``--client fastmcp`` runs the plan (over HTTP) with fastmcp's client instead,
its ``OAuth`` helper in the OAuth mode, its ``*_mcp`` methods for the operations.

``connectTimeoutMs`` is for ``ts/driver.mjs`` (its connect, probe included); the
Python client has one read timeout for every request, ``timeoutMs``. An operation's own
``timeoutMs`` replaces the plan's for it (in Python for ``callTool`` only, the one call
the SDK times on its own): a test can give a call that hangs a short timeout and every
other operation a generous one, so a busy machine does not turn them into timeouts too.

The client has the elicitation, sampling and roots callbacks set (they accept
with example answers), so ``input_required`` rounds can complete. With
``stopAfterBreak`` the driver stops after a timeout or a lost connection. Catching every
exception per operation is the point here: the driver records what the client
did; it does not judge it (the tests and the matrix do).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from typing import Any

import anyio

MAX_TEXT = 400
MAX_PAGES = 50
SDK = "mcp"  # or "fastmcp" (--client)


def trim(value: Any) -> Any:
    if isinstance(value, str):
        return value if len(value) <= MAX_TEXT else value[:MAX_TEXT] + f"...(+{len(value) - MAX_TEXT})"
    if isinstance(value, list):
        return [trim(v) for v in value]
    if isinstance(value, dict):
        return {k: trim(v) for k, v in value.items()}
    return value


def dump(model: Any) -> Any:
    return trim(model.model_dump(mode="json", by_alias=True, exclude_none=True))


def example_from_schema(schema: Any) -> Any:
    """A value for a simple JSON Schema: its first ``examples`` entry, ``default``, ``const`` or
    first ``enum`` value, else one built from ``type`` (tool arguments, elicitation answers)."""
    if not isinstance(schema, dict):
        return None
    if isinstance(schema.get("examples"), list) and schema["examples"]:
        return schema["examples"][0]
    if "default" in schema:
        return schema["default"]
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    if schema.get("oneOf") and isinstance(schema["oneOf"][0], dict) and "const" in schema["oneOf"][0]:
        return schema["oneOf"][0]["const"]
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), "string")
    if t == "object":
        props = schema.get("properties") or {}
        return {k: example_from_schema(v) for k, v in props.items()}
    if t == "array":
        items = schema.get("items") or {}
        if isinstance(items, dict) and items.get("anyOf"):
            return [items["anyOf"][0].get("const", "a")]
        if isinstance(items, dict) and items.get("enum"):
            return [items["enum"][0]]
        return []
    if t == "integer":
        return max(1, int(schema.get("minimum", 1)))
    if t == "number":
        return float(schema.get("minimum", 1))
    if t == "boolean":
        return True
    if schema.get("format") == "email":
        return "ada@example.com"
    return "example"


def leaf(exc: BaseException) -> BaseException:
    """The first real exception inside nested ExceptionGroups (connect errors arrive wrapped)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def describe(exc: BaseException) -> dict[str, Any]:
    from mcp.shared.exceptions import MCPError

    exc = leaf(exc)
    if isinstance(exc, TimeoutError) or (isinstance(exc, MCPError) and exc.error.code == -32001):
        return {"status": "timeout", "message": str(exc)[:MAX_TEXT]}
    if isinstance(exc, MCPError):
        out: dict[str, Any] = {"status": "error", "code": exc.error.code, "message": exc.error.message}
        if exc.error.data is not None:
            out["data"] = trim(exc.error.data)
        return out
    return {"status": "client-error", "type": type(exc).__name__, "message": str(exc)[:MAX_TEXT]}


def breaks_session(record: dict[str, Any]) -> bool:
    """A timeout or a lost connection (the matrix then runs the rest in a new session)."""
    if record["status"] == "timeout":
        return True
    return record["status"] == "error" and record.get("code") == -32000 and "closed" in record["message"].lower()


async def run_plan(plan: dict[str, Any]) -> dict[str, Any]:
    from mcp import StdioServerParameters, types

    notes: dict[str, list[Any]] = {"elicitation": [], "sampling": [], "roots": [], "log": []}

    async def elicit(context: Any, params: Any) -> Any:
        mode = getattr(params, "mode", None) or "form"
        notes["elicitation"].append(mode)
        if mode == "url":
            return types.ElicitResult(action="accept")
        schema = params.requested_schema if hasattr(params, "requested_schema") else {}
        if not isinstance(schema, dict):
            schema = schema.model_dump(mode="json", by_alias=True, exclude_none=True)
        return types.ElicitResult(action="accept", content=example_from_schema(schema) or {})

    async def sample(context: Any, params: Any) -> Any:
        notes["sampling"].append(len(params.messages))
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="sampled answer"), model="mock-model"
        )

    async def roots(context: Any) -> Any:
        notes["roots"].append(1)
        return types.ListRootsResult(roots=[types.Root.model_validate({"uri": "file:///project", "name": "project"})])

    async def log(params: Any) -> None:
        notes["log"].append(params.level)

    timeout = plan.get("timeoutMs", 5000) / 1000
    argv = plan["command"]
    out: dict[str, Any] = {"client": "python", "ops": []}
    if plan.get("transport") == "http":
        auth_log = None
        try:
            async with _http_server(argv, timeout) as url:
                if SDK == "fastmcp" or plan.get("auth"):
                    from python_auth import AuthLog

                    auth_log = AuthLog()
                if SDK == "fastmcp":
                    await _fastmcp_session(url, plan, timeout, out, auth_log, notes)
                elif plan.get("auth"):
                    from python_auth import oauth_transport

                    async with oauth_transport(url, plan["auth"], auth_log) as transport:
                        await _session(transport, plan, timeout, out, elicit, sample, roots, log)
                else:
                    await _session(url, plan, timeout, out, elicit, sample, roots, log)
        except Exception as exc:  # the server did not start or print its URL: a failed connect
            if "connect" not in out:
                out["connect"] = describe(exc)
        if plan.get("auth") and auth_log is not None:
            out["auth"] = auth_log.summary()
    elif SDK == "fastmcp":  # the matrix runs it over HTTP only
        out["connect"] = {"status": "client-error", "type": "driver", "message": "fastmcp runs over HTTP only"}
    else:
        server = StdioServerParameters(command=argv[0], args=argv[1:], env=plan.get("env"))
        await _session(server, plan, timeout, out, elicit, sample, roots, log)
    out["callbacks"] = {k: v for k, v in notes.items() if v}
    return out


@contextlib.asynccontextmanager
async def _http_server(argv: list[str], timeout: float) -> Any:
    """Spawn a server that prints its URL first; yield the URL; close its stdin, then wait."""
    import subprocess

    proc = await anyio.open_process(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None)
    try:
        assert proc.stdout is not None and proc.stdin is not None
        line = b""
        with anyio.fail_after(max(10.0, timeout)):
            while not line.endswith(b"\n"):
                chunk = await proc.stdout.receive(1)
                line += chunk
        yield line.decode().strip()
    finally:
        with anyio.move_on_after(5, shield=True):
            if proc.stdin is not None:
                await proc.stdin.aclose()
            await proc.wait()
        if proc.returncode is None:
            proc.kill()
            with anyio.move_on_after(5, shield=True):
                await proc.wait()


async def _session(server: Any, plan: dict[str, Any], timeout: float, out: dict[str, Any],
                   elicit: Any, sample: Any, roots: Any, log: Any) -> None:
    from mcp import Client

    t0 = time.monotonic()
    try:
        async with Client(
            server,
            mode=plan.get("mode", "auto"),
            read_timeout_seconds=timeout,
            elicitation_callback=elicit,
            sampling_callback=sample,
            list_roots_callback=roots,
            logging_callback=log,
        ) as client:
            out["connect"] = {"status": "ok", "protocolVersion": client.protocol_version,
                              "ms": round((time.monotonic() - t0) * 1000)}
            await _run_ops(client, plan, timeout, out)
    except Exception as exc:  # connect or shutdown failed: recorded as the connection outcome
        d = describe(exc)
        if "connect" not in out:
            out["connect"] = d
        else:
            out["shutdown"] = d


async def _run_ops(client: Any, plan: dict[str, Any], timeout: float, out: dict[str, Any]) -> None:
    for op in plan["ops"]:
        progress: list[float] = []
        record: dict[str, Any] = {"op": op["op"]}
        for k in ("name", "uri"):
            if k in op:
                record[k] = op[k]
        op_timeout = op["timeoutMs"] / 1000 if "timeoutMs" in op else timeout
        try:
            with anyio.fail_after(op_timeout + 2):
                record.update(status="ok", result=await _one(client, op, op_timeout, progress))
        except Exception as exc:  # recorded, not hidden: the cell says what happened
            record.update(describe(exc))
        if progress:
            record["progress"] = len(progress)
        out["ops"].append(record)
        if plan.get("stopAfterBreak") and breaks_session(record):
            break


async def _fastmcp_session(url: str, plan: dict[str, Any], timeout: float, out: dict[str, Any],
                           auth_log: Any, notes: dict[str, list[Any]]) -> None:
    """The plan on fastmcp's client (``Client(url, auth=OAuth(...))`` in the OAuth mode)."""
    from fastmcp import Client

    from python_auth import FastmcpOps, fastmcp_auth

    async def sample(messages: Any, params: Any, context: Any) -> str:
        notes["sampling"].append(len(messages))
        return "sampled answer"

    async def elicit(message: str, response_type: Any, params: Any, context: Any) -> Any:
        notes["elicitation"].append(getattr(params, "mode", None) or "form")
        schema = getattr(params, "requested_schema", None) or {}
        if not isinstance(schema, dict):
            schema = schema.model_dump(mode="json", by_alias=True, exclude_none=True)
        return example_from_schema(schema) or {}

    auth = fastmcp_auth(plan["auth"], auth_log) if plan.get("auth") else None
    t0 = time.monotonic()
    try:
        # its connect (the whole authorization in the OAuth mode) gets the plan's connectTimeoutMs,
        # as ts/driver.mjs's does
        async with Client(url, auth=auth, mode=plan.get("mode", "auto"), timeout=timeout,
                          init_timeout=plan.get("connectTimeoutMs", timeout * 1000) / 1000,
                          sampling_handler=sample, elicitation_handler=elicit,
                          roots=["file:///project"]) as client:
            out["connect"] = {"status": "ok", "protocolVersion": client.protocol_version,
                              "ms": round((time.monotonic() - t0) * 1000)}
            await _run_ops(FastmcpOps(client), plan, timeout, out)
    except Exception as exc:  # connect or shutdown failed: recorded as the connection outcome
        d = describe(exc)
        if "connect" not in out:
            out["connect"] = d
        else:
            out["shutdown"] = d


async def _one(client: Any, op: dict[str, Any], timeout: float, progress: list[float]) -> Any:
    kind = op["op"]

    async def on_progress(p: float, total: float | None, message: str | None) -> None:
        progress.append(p)

    if kind == "callTool":
        r = await client.call_tool(op["name"], op.get("arguments") or {}, read_timeout_seconds=timeout,
                                   progress_callback=on_progress)
        return dump(r)
    if kind == "getPrompt":
        return dump(await client.get_prompt(op["name"], op.get("arguments") or {}))
    if kind == "readResource":
        return dump(await client.read_resource(op["uri"]))
    if kind == "complete":
        from mcp import types

        ref = op["ref"]
        ref_model = (types.PromptReference(type="ref/prompt", name=ref["name"]) if ref["type"] == "ref/prompt"
                     else types.ResourceTemplateReference(type="ref/resource", uri=ref["uri"]))
        return dump(await client.complete(ref_model, op["argument"]))
    if kind == "listen":
        f = op.get("filter", {})
        events: list[str] = []
        async with client.listen(
            tools_list_changed=f.get("toolsListChanged", False),
            prompts_list_changed=f.get("promptsListChanged", False),
            resources_list_changed=f.get("resourcesListChanged", False),
            resource_subscriptions=f.get("resourceSubscriptions", ()),
        ) as sub:
            honored = sub.honored.model_dump(mode="json", by_alias=True, exclude_none=True)
            with anyio.move_on_after(op.get("ms", 1500) / 1000):
                async for event in sub:
                    events.append(type(event).__name__)
        return {"honored": honored, "events": len(events), "kinds": sorted(set(events))}
    lists = {
        "listTools": ("list_tools", "tools", "name"),
        "listPrompts": ("list_prompts", "prompts", "name"),
        "listResources": ("list_resources", "resources", "uri"),
        "listResourceTemplates": ("list_resource_templates", "resourceTemplates", "uriTemplate"),
    }
    if kind in lists:
        method, key, ident = lists[kind]
        items: list[Any] = []
        cursor = None
        for _ in range(MAX_PAGES):
            page = dump(await getattr(client, method)(cursor=cursor))
            items.extend(page.get(key, []))
            cursor = page.get("nextCursor")
            if not cursor:
                break
        return {key: [i[ident] for i in items], "items": items}
    raise ValueError(f"unknown op {kind!r}")


async def run_batch(batch: dict[str, Any]) -> dict[str, Any]:
    """Every plan of a batch, ``jobs`` sessions at once; results in the plans' order."""
    plans = batch["plans"]
    results: list[dict[str, Any]] = [{} for _ in plans]
    limiter = anyio.CapacityLimiter(max(1, int(batch.get("jobs", 4))))

    async def one(i: int) -> None:
        async with limiter:
            results[i] = await run_plan(plans[i])

    async with anyio.create_task_group() as tg:
        for i in range(len(plans)):
            tg.start_soon(one, i)
    return {"results": results}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    ap.add_argument("--client", choices=["mcp", "fastmcp"], default="mcp",
                    help="the official client (default), or fastmcp's (over HTTP only)")
    ap.add_argument("--serve", action="store_true", help="read batches from stdin, a line each; a result line per batch")
    ap.add_argument("plan", nargs="?", help="plan JSON file (default: stdin)")
    args = ap.parse_args()
    global SDK
    SDK = args.client
    if args.serve:
        for line in sys.stdin:
            result = anyio.run(run_batch, json.loads(line), backend=args.backend)
            for one in result["results"]:
                one["backend"] = args.backend
            _write(result)
        return 0
    plan = json.loads(open(args.plan).read() if args.plan else sys.stdin.read())
    result = anyio.run(run_plan, plan, backend=args.backend)
    result["backend"] = args.backend
    _write(result)
    return 0


def _write(result: dict[str, Any]) -> None:
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
