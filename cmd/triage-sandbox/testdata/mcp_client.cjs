// An MCP client nobody here wrote (the TypeScript SDK's), driving the real
// `triage-sandbox mcp` over stdio. It only observes: it prints one JSON line
// per step ({"step": ..., ...}) and the Go test (mcp_test.go) judges them.
//
// usage: node mcp_client.cjs SDK_DIR BINARY WORKSPACE SCENARIO [TOKEN]
//   SCENARIO main: list tools, run, deny, timeout, session reuse
//   SCENARIO kill: start a long command in a session and in a reproducer,
//                  print the server's pid, and wait (the test kills the server)
//   SCENARIO bound: print the server's pid, start sessions a, b and c at
//                  once, then wait for a line on stdin; end a live one and
//                  run the refused name again, then wait for a line again
"use strict";
const { createRequire } = require("module");
const path = require("path");

const [sdkDir, binary, workspace, scenario, token] = process.argv.slice(2);
const sdk = createRequire(path.join(sdkDir, "node_modules") + path.sep);
const { Client } = sdk("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = sdk("@modelcontextprotocol/sdk/client/stdio.js");

function emit(step, value) {
  process.stdout.write(JSON.stringify({ step, ...value }) + "\n");
}

function textOf(res) {
  return (res.content || []).filter((c) => c.type === "text").map((c) => c.text).join("");
}

async function call(client, args) {
  const res = await client.callTool({ name: "run", arguments: args });
  return { isError: !!res.isError, text: textOf(res), result: res.structuredContent || null };
}

async function main(client) {
  const tools = await client.listTools();
  emit("tools", { tools: tools.tools.map((t) => ({ name: t.name, input: t.inputSchema })) });
  emit("python", await call(client, { argv: ["python3", "-c", "print(1)"], role: "reproducer" }));
  emit("push", await call(client, { command: "git push origin main" }));
  emit("timeout", await call(client, { argv: ["sleep", "30"], timeout_seconds: 1 }));
  emit("write", await call(client, { command: 'echo kept-in-home > "$HOME/note"', session: "s1" }));
  emit("read", await call(client, { command: 'cat "$HOME/note"', session: "s1" }));
  emit("other", await call(client, { command: 'cat "$HOME/note"', session: "s2" }));
  const end = await client.callTool({ name: "end_session", arguments: { session: "s1" } });
  emit("end", { isError: !!end.isError, result: end.structuredContent || null });
  emit("after", await call(client, { command: 'cat "$HOME/note"', session: "s1" }));
}

async function kill(client, transport) {
  const long = "sleep 300 & setsid sleep 301 & sleep 302; : " + token;
  // Neither call returns: the server is killed under them.
  client.callTool({ name: "run", arguments: { command: long, session: "k" } }, undefined, { timeout: 600000 }).catch(() => {});
  client.callTool({ name: "run", arguments: { command: long, role: "reproducer" } }, undefined, { timeout: 600000 }).catch(() => {});
  emit("server", { pid: transport.pid });
  await new Promise((resolve) => { client.onclose = resolve; });
}

// line resolves with the next line on stdin (the test says go on).
const lines = [];
let waiting = null;
let buffered = "";
process.stdin.on("data", (chunk) => {
  buffered += chunk;
  let i;
  while ((i = buffered.indexOf("\n")) >= 0) {
    lines.push(buffered.slice(0, i));
    buffered = buffered.slice(i + 1);
  }
  if (waiting && lines.length) {
    const w = waiting;
    waiting = null;
    w(lines.shift());
  }
});
function line() {
  if (lines.length) return Promise.resolve(lines.shift());
  return new Promise((resolve) => { waiting = resolve; });
}

async function bound(client, transport) {
  emit("server", { pid: transport.pid });
  const names = ["a", "b", "c"];
  const results = await Promise.all(names.map((n) => call(client, { command: "true", session: n })));
  let live = null;
  let refused = null;
  names.forEach((n, i) => {
    emit("start-" + n, results[i]);
    if (results[i].isError) refused = n; else live = n;
  });
  emit("started", {});
  await line();
  const end = await client.callTool({ name: "end_session", arguments: { session: live } });
  emit("end", { isError: !!end.isError, text: textOf(end), result: end.structuredContent || null });
  emit("retry", await call(client, { command: "true", session: refused || "d" }));
  await line();
}

(async () => {
  const transport = new StdioClientTransport({
    command: binary, args: ["mcp"], cwd: workspace, env: { ...process.env }, stderr: "inherit",
  });
  const client = new Client({ name: "triage-sandbox-test", version: "1.0.0" });
  await client.connect(transport);
  if (scenario === "kill") {
    await kill(client, transport);
  } else if (scenario === "bound") {
    await bound(client, transport);
    await client.close();
    process.stdin.destroy();
  } else {
    await main(client);
    await client.close();
  }
  emit("done", {});
})().catch((err) => {
  emit("error", { message: String(err && err.stack || err) });
  process.exit(1);
});
