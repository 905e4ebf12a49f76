"""JSON shapes of the library's typed results, shared by the MCP tools and the REST API.

Both surfaces send the same fields (SPEC §9: the API returns "the tool's shape"), so each shape
is written once here; the readable text of a tool result stays in the MCP layer.
"""
