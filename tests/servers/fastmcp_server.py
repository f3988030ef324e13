"""A small server written with fastmcp (fastmcp==4.1.6, a test extra), to record and proxy.

Nobody on this project wrote fastmcp: it is the second real implementation the
recorder is proven on (tests/record/test_record_servers.py). Tools (one with progress, one
that fails), a prompt, a static resource and a resource template.
"""

from __future__ import annotations

from fastmcp import Context, FastMCP

mcp = FastMCP("fastmcp-fixture", instructions="A fastmcp fixture server.")


@mcp.tool
def shout(text: str) -> str:
    """Upper-case the text"""
    return text.upper()


@mcp.tool
def multiply(a: int, b: int) -> int:
    """Multiply two numbers"""
    return a * b


@mcp.tool
async def steps(n: int, ctx: Context) -> str:
    """Report n progress steps"""
    for i in range(1, n + 1):
        await ctx.report_progress(i, n)
    return f"{n} steps done"


@mcp.tool
def broken() -> str:
    """Always fails"""
    raise ValueError("this tool is broken")


@mcp.prompt
def summarize(text: str) -> str:
    """Summarize a text"""
    return f"Summarize this: {text}"


@mcp.resource("fastmcp://about", mime_type="text/plain")
def about() -> str:
    """About this server"""
    return "fastmcp fixture"


@mcp.resource("fastmcp://users/{user_id}")
def user(user_id: str) -> str:
    """A user"""
    return f"user {user_id}"


if __name__ == "__main__":
    mcp.run(show_banner=False)
