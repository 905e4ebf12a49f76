"""Thoughtline: durable sequential thinking for MCP clients."""

__version__ = "0.1.0"
