"""The MCP surface: tool declarations, their handlers, the direct tools/call path, the App resource."""
