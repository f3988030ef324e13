"""A small server written with the official Python SDK (mcp==2.3.0 ``MCPServer``), to record.

Nobody on this project wrote the SDK: recording this script proves ``mockmcp record``
against a real implementation of both eras (the SDK serves ``server/discover`` and the
``initialize`` handshake alike). It has tools (one plain, one with progress, one that
asks the user through an elicitation round, one that fails, one that returns a secret),
a prompt (whose argument completes), a static resource and a resource template.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import Completion
from mcp.server.mcpserver.resolve import Elicit, Resolve

server = MCPServer("sdk-fixture", version="1.2.3", instructions="A fixture server for recording tests.")


class Name(BaseModel):
    name: str


@server.tool(description="Echo the text back")
def echo(text: str) -> str:
    return f"echo: {text}"


@server.tool(description="Add two numbers")
def add(a: int, b: int) -> int:
    return a + b


@server.tool(description="Count to n, reporting progress")
async def count(n: int, ctx: Context) -> str:
    for i in range(1, n + 1):
        await ctx.report_progress(i, n, f"step {i}")
    return f"counted to {n}"


def ask_name() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


@server.tool(description="Greet someone whose name is asked for")
def greet(who: Annotated[Name, Resolve(ask_name)]) -> str:
    return f"Hello, {who.name}!"


@server.tool(description="Always fails")
def fail(reason: str) -> str:
    raise ValueError(f"failed: {reason}")


@server.tool(description="Log in with a password and get a session token")
def login(user: str, password: str) -> dict[str, str]:
    return {"user": user, "token": "srv-secret-token-9f8e7d", "note": "welcome"}


@server.prompt(description="Review some code")
def review(code: str) -> str:
    return f"Please review this code:\n{code}"


@server.resource("fixture://readme", name="readme", mime_type="text/plain", description="The readme")
def readme() -> str:
    return "This is the readme."


@server.resource("fixture://items/{item}", name="item", mime_type="text/plain")
def item(item: str) -> str:
    return f"item {item}"


@server.completion()
async def complete(ref: object, argument: object, context: object) -> Completion:
    value = getattr(argument, "value", "")
    return Completion(values=[w for w in ("print", "pass", "property") if w.startswith(value)])


if __name__ == "__main__":
    server.run("stdio")
