"""Node-side interop clients (TypeScript MCP SDK, MCP conformance suite) and their Python launcher."""
