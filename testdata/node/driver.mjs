// driver.mjs is a scripted MCP client for tests, built on the TypeScript SDK
// (@modelcontextprotocol/sdk Client + StdioClientTransport).
//
// Usage:
//
//	node driver.mjs -- CMD ARGS...
//
// It launches CMD ARGS as a stdio MCP server (the driver's environment is
// passed through unchanged, the server's stderr goes to the driver's stderr),
// runs the initialize handshake, then reads one JSON command per line on
// stdin and writes one JSON result line per command on stdout. Stdout carries
// result lines only; diagnostics go to stderr. If the handshake fails the
// driver prints the error on stderr and exits 1.
//
// Commands run concurrently: a command is started as soon as its line is read,
// and its result is written when it completes, so results arrive in
// completion order. Any command may carry "id" (any JSON value); its result
// then carries the same "id". A failed command answers
// {"ok":false,"error":{"code":C,"message":M,"data":D}}, where C is the JSON-RPC
// error code (null when the failure is not a JSON-RPC error, such as a bad
// command line) and M is the error's message without the SDK's
// "MCP error C: " prefix.
//
//	{"op":"list"}
//	    tools/list, following nextCursor to the end.
//	    -> {"ok":true,"tools":[...]}
//	{"op":"call","name":N,"arguments":{...},"id":TAG,"timeoutMs":T,
//	 "progress":B,"resetTimeoutOnProgress":R}
//	    tools/call; "timeoutMs" (default 60000) bounds the wait for the
//	    response. The result is passed on as received, without checking it
//	    against the tool's outputSchema. With "progress" true the request
//	    carries a progressToken (the SDK's onprogress option) and the
//	    notifications/progress received for it are listed, in order, in
//	    "progress" of the answer, failed or not; with "resetTimeoutOnProgress"
//	    true each of them restarts the timeout (the SDK's option of that
//	    name, off by default).
//	    -> {"ok":true,"id":TAG,"result":{...},"progress":[{progress,total,message},...]}
//	{"op":"events"}
//	    -> {"ok":true,"listChanged":N,"errors":[...],"closed":B,
//	        "serverCapabilities":{...},"serverVersion":{...},"instructions":S}
//	    listChanged counts notifications/tools/list_changed received; errors
//	    lists the messages the SDK reported through Client.onerror, in order
//	    (a response for an unknown or already answered request id shows up as
//	    "Received a response for an unknown message ID: ..."); closed tells
//	    whether the connection to the server has closed.
//	{"op":"waitListChanged","count":N,"timeoutMs":T}
//	    Waits until at least N list_changed notifications have arrived in
//	    total (default T 10000).
//	    -> {"ok":true,"listChanged":M}
//	{"op":"close"}
//	    Closes the client (which ends the server), answers, and exits 0.
//	    -> {"ok":true}
//
//	{"op":"elicitations"}
//	    -> {"ok":true,"elicitations":[{"n":N,"params":{...},"answered":B},...],
//	        "complete":[ID,...]}
//	    The elicitation/create requests received so far, in order, and the
//	    elicitationIds of notifications/elicitation/complete received.
//	{"op":"answer","n":N,"action":"accept","content":{...}}
//	    Answers elicitation N with that ElicitResult.
//	    -> {"ok":true}
//
// MCPEPOCH_DRIVER_ELICITATION=url (or form) in the driver's environment
// declares the elicitation capability {url: {}} (or {form: {}}); each
// elicitation/create then waits until an "answer" command answers it.
//
// End of input on stdin also closes the client and exits 0.

import { createInterface } from "node:readline";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  CallToolResultSchema,
  ElicitationCompleteNotificationSchema,
  ElicitRequestSchema,
  ListToolsResultSchema,
  McpError,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

const argv = process.argv.slice(2);
if (argv[0] !== "--" || argv.length < 2) {
  process.stderr.write("usage: node driver.mjs -- CMD ARGS...\n");
  process.exit(2);
}
const [command, ...args] = argv.slice(1);

const env = {};
for (const [k, v] of Object.entries(process.env)) {
  if (v !== undefined) env[k] = v;
}

let listChanged = 0;
let closed = false;
const errors = [];
let waiters = []; // {count, resolve}

const elicitMode = process.env.MCPEPOCH_DRIVER_ELICITATION;
const capabilities = elicitMode ? { elicitation: { [elicitMode]: {} } } : {};
const client = new Client({ name: "mcpepoch-test-driver", version: "0.1.0" }, { capabilities });
const elicitations = []; // {n, params, answered}
const answerers = new Map(); // n -> resolve
const completed = [];
if (elicitMode) {
  client.setRequestHandler(
    ElicitRequestSchema,
    (req) =>
      new Promise((resolve) => {
        const n = elicitations.length;
        elicitations.push({ n, params: req.params, answered: false });
        answerers.set(n, resolve);
      }),
  );
  client.setNotificationHandler(ElicitationCompleteNotificationSchema, (note) => {
    completed.push(note.params.elicitationId);
  });
}
client.onerror = (err) => {
  errors.push(err instanceof Error ? err.message : String(err));
};
client.onclose = () => {
  closed = true;
};
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
  listChanged++;
  waiters = waiters.filter((w) => {
    if (listChanged >= w.count) {
      w.resolve();
      return false;
    }
    return true;
  });
});

const transport = new StdioClientTransport({ command, args, env, stderr: "inherit" });
try {
  await client.connect(transport);
} catch (err) {
  process.stderr.write(`driver: connect to ${JSON.stringify([command, ...args])}: ${err?.message ?? err}\n`);
  process.exit(1);
}

function write(obj) {
  process.stdout.write(JSON.stringify(obj) + "\n");
}

function errorObject(err) {
  if (err instanceof McpError) {
    const prefix = `MCP error ${err.code}: `;
    const message = err.message.startsWith(prefix) ? err.message.slice(prefix.length) : err.message;
    return { code: err.code, message, data: err.data ?? null };
  }
  return { code: null, message: err instanceof Error ? err.message : String(err), data: null };
}

async function listTools() {
  const tools = [];
  let cursor;
  for (;;) {
    const params = cursor === undefined ? {} : { cursor };
    const page = await client.request({ method: "tools/list", params }, ListToolsResultSchema);
    tools.push(...page.tools);
    if (!page.nextCursor) return tools;
    cursor = page.nextCursor;
  }
}

function waitListChanged(count, timeoutMs) {
  if (listChanged >= count) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const w = {
      count,
      resolve: () => {
        clearTimeout(timer);
        resolve();
      },
      reject: (err) => {
        clearTimeout(timer);
        reject(err);
      },
    };
    const timer = setTimeout(() => {
      waiters = waiters.filter((x) => x !== w);
      reject(new Error(`timeout after ${timeoutMs}ms waiting for ${count} list_changed notifications (got ${listChanged})`));
    }, timeoutMs);
    waiters.push(w);
  });
}

// inflight holds the promises of the commands being handled.
const inflight = new Set();
let closing;

// shutdown closes the client once; requests still pending fail with a
// "Connection closed" error and waits for list_changed fail.
function shutdown() {
  closing ??= (async () => {
    try {
      await client.close();
    } catch (err) {
      process.stderr.write(`driver: close: ${err?.message ?? err}\n`);
    }
    for (const w of waiters) w.reject(new Error("client closed"));
    waiters = [];
  })();
  return closing;
}

// exit exits 0 once everything written to stdout has been flushed.
function exit() {
  process.stdout.write("", () => process.exit(0));
}

async function run(cmd, others) {
  switch (cmd.op) {
    case "list":
      return { tools: await listTools() };
    case "call": {
      if (typeof cmd.name !== "string") throw new Error(`call: "name" must be a string`);
      const params = { name: cmd.name, arguments: cmd.arguments ?? {} };
      const progress = [];
      const options = { timeout: cmd.timeoutMs ?? 60000, resetTimeoutOnProgress: cmd.resetTimeoutOnProgress === true };
      if (cmd.progress === true) options.onprogress = (p) => progress.push(p);
      try {
        const result = await client.request({ method: "tools/call", params }, CallToolResultSchema, options);
        return cmd.progress === true ? { result, progress } : { result };
      } catch (err) {
        if (cmd.progress === true) err.progress = progress;
        throw err;
      }
    }
    case "events":
      return {
        listChanged,
        errors: [...errors],
        closed,
        serverCapabilities: client.getServerCapabilities() ?? null,
        serverVersion: client.getServerVersion() ?? null,
        instructions: client.getInstructions() ?? null,
      };
    case "waitListChanged":
      if (!Number.isInteger(cmd.count)) throw new Error(`waitListChanged: "count" must be an integer`);
      await waitListChanged(cmd.count, cmd.timeoutMs ?? 10000);
      return { listChanged };
    case "elicitations":
      return { elicitations, complete: completed };
    case "answer": {
      const resolve = answerers.get(cmd.n);
      if (!resolve) throw new Error(`answer: no unanswered elicitation ${cmd.n}`);
      answerers.delete(cmd.n);
      elicitations[cmd.n].answered = true;
      resolve(cmd.content === undefined ? { action: cmd.action } : { action: cmd.action, content: cmd.content });
      return {};
    }
    case "close":
      // Let the other commands answer first, so this is the last line.
      await shutdown();
      await Promise.allSettled(others);
      return {};
    default:
      throw new Error(`unknown op ${JSON.stringify(cmd.op)}`);
  }
}

async function handle(line) {
  const others = [...inflight];
  let cmd;
  try {
    cmd = JSON.parse(line);
    if (cmd === null || typeof cmd !== "object" || Array.isArray(cmd)) throw new Error("want a JSON object");
  } catch (err) {
    write({ ok: false, error: { code: null, message: `bad command line: ${err.message}`, data: null } });
    return;
  }
  const tag = "id" in cmd ? { id: cmd.id } : {};
  try {
    const out = await run(cmd, others);
    write({ ok: true, ...tag, ...out });
  } catch (err) {
    const progress = Array.isArray(err?.progress) ? { progress: err.progress } : {};
    write({ ok: false, ...tag, error: errorObject(err), ...progress });
  }
  if (cmd.op === "close") exit();
}

const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on("line", (line) => {
  if (line.trim() === "") return;
  const p = handle(line);
  inflight.add(p);
  void p.finally(() => inflight.delete(p));
});
rl.on("close", async () => {
  const others = [...inflight];
  await shutdown();
  await Promise.allSettled(others);
  exit();
});
