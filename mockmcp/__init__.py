"""mockmcp: a stdio mock server and client verifier for MCP revision 2026-07-28."""

__version__ = "0.1.0"
