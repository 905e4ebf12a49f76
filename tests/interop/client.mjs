// A TypeScript-SDK MCP client that walks one thinking session against a Thoughtline server.
//
// Usage: node client.mjs <mode> <endpoint-url>
//   mode "session":   list tools and resources, write a sequence (new, continue, branch, revision,
//                     final), read its history back; prints a JSON summary of what the SDK saw.
//   mode "bad-token": try to connect and print the error the SDK raised.
// The bearer token comes from THOUGHTLINE_TOKEN (kept out of argv, which other users can read).
// Exit code 0 means the script ran to the end; the pytest side judges the JSON.

import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [mode, endpoint] = process.argv.slice(2);
const token = process.env.THOUGHTLINE_TOKEN ?? "";
const sdkVersion = JSON.parse(
  readFileSync(new URL("./node_modules/@modelcontextprotocol/sdk/package.json", import.meta.url), "utf8"),
).version;

function connect() {
  const transport = new StreamableHTTPClientTransport(new URL(endpoint), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: "thoughtline-interop", version: "1.0.0" });
  return { client, transport };
}

function describeError(error) {
  return {
    name: error?.constructor?.name ?? typeof error,
    code: typeof error?.code === "number" ? error.code : null,
    message: String(error?.message ?? error),
  };
}

// Every tool result keeps what the SDK handed back: the error flag, the text, the structured part.
function summarise(label, result) {
  return {
    label,
    isError: result.isError === true,
    text: result.content?.find((block) => block.type === "text")?.text ?? null,
    structured: result.structuredContent ?? null,
  };
}

async function session() {
  const { client, transport } = connect();
  await client.connect(transport);
  const out = {
    sdkVersion,
    protocolVersion: transport.protocolVersion ?? null,
    server: client.getServerVersion() ?? null,
    capabilities: client.getServerCapabilities() ?? null,
  };

  // Listing tools also makes the SDK cache each outputSchema and validate later structuredContent.
  const { tools } = await client.listTools();
  out.tools = tools.map((tool) => ({
    name: tool.name,
    hasOutputSchema: Boolean(tool.outputSchema),
    annotations: tool.annotations ?? null,
    meta: tool._meta ?? null,
  }));

  const calls = [];
  const think = async (label, args) => {
    const result = await client.callTool({ name: "sequentialthinking", arguments: args });
    calls.push(summarise(label, result));
    return result.structuredContent ?? {};
  };
  const first = await think("new", {
    thought: "Interop: the TypeScript client opens a sequence.",
    nextThoughtNeeded: true,
    thoughtNumber: 1,
    totalThoughts: 3,
  });
  const sequenceId = first.sequenceId;
  await think("continue", {
    sequenceId,
    thought: "Second step on the main path.",
    nextThoughtNeeded: true,
    thoughtNumber: 2,
    totalThoughts: 3,
  });
  await think("branch", {
    sequenceId,
    thought: "An alternative forked from thought 1.",
    nextThoughtNeeded: true,
    thoughtNumber: 2,
    totalThoughts: 3,
    branchId: "alt",
    branchFromThought: 1,
  });
  await think("revision", {
    sequenceId,
    thought: "Revising thought 1 with what the branch showed.",
    nextThoughtNeeded: true,
    thoughtNumber: 3,
    totalThoughts: 4,
    isRevision: true,
    revisesThought: 1,
  });
  await think("final", {
    sequenceId,
    thought: "Conclusion: both paths agree.",
    nextThoughtNeeded: false,
    thoughtNumber: 4,
    totalThoughts: 4,
  });
  out.calls = calls;

  const history = await client.callTool({ name: "get_thought_history", arguments: { sequenceId } });
  out.history = summarise("history", history);

  const { resources } = await client.listResources();
  out.resources = resources.map((resource) => ({ uri: resource.uri, mimeType: resource.mimeType ?? null }));
  const app = resources.find((resource) => resource.uri.startsWith("ui://"));
  if (app) {
    const read = await client.readResource({ uri: app.uri });
    out.appResource = read.contents.map((item) => ({
      uri: item.uri,
      mimeType: item.mimeType ?? null,
      textLength: typeof item.text === "string" ? item.text.length : null,
    }));
  }
  try {
    await client.readResource({ uri: "thoughtline://no-such-resource" });
    out.unknownResource = { error: null };
  } catch (error) {
    out.unknownResource = { error: describeError(error) };
  }

  await client.close();
  return out;
}

async function badToken() {
  const { client, transport } = connect();
  try {
    await client.connect(transport);
    await client.close();
    return { connected: true, error: null };
  } catch (error) {
    return { connected: false, error: describeError(error) };
  }
}

const modes = { session, "bad-token": badToken };
if (!modes[mode] || !endpoint) {
  console.error("usage: node client.mjs session|bad-token <endpoint-url>");
  process.exit(2);
}
process.stdout.write(JSON.stringify(await modes[mode]()) + "\n");
