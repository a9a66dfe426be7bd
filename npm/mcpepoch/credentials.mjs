// mcpepoch/credentials: ask the mcpepoch host for a secret, from inside an
// MCP server that `mcpepoch host` launched. No dependencies.
//
//   import { getCredential } from "mcpepoch/credentials";
//   server.registerTool("order", { … }, async (args, extra) => {
//     const token = await getCredential("inventory-api-staging", extra._meta);
//     …
//   });
//
// The host hands a secret only to a call a person approved, on the epoch
// they approved: call getCredential while handling the tools/call that needs
// it, with that request's _meta (the TypeScript SDK's extra._meta), and do
// not keep the value past that call. The host puts a token of each
// tools/call it forwards in the request's params._meta under META_KEY, and
// hands a scope's secret only to the token of a call in flight whose grant
// names the scope.
//
// Protocol (the same as the Go package github.com/mcpepoch/mcpepoch/credentials):
// the host sets MCPEPOCH_CREDENTIALS_SOCKET (the path of a unix stream
// socket) in the server's environment. getCredential connects, writes one
// JSON line naming the scope and the call's token, and reads one JSON line
// back:
//
//   → {"v":2,"scope":"NAME","call":"…"}
//   ← {"v":2,"secret":"…"}
//   ← {"v":2,"error":{"code":"…","message":"…"}}

import { createConnection } from "node:net";

/** Name of the variable holding the broker socket's path. */
export const ENV_SOCKET = "MCPEPOCH_CREDENTIALS_SOCKET";
/** The member of a tools/call request's params._meta holding the call's token. */
export const META_KEY = "dev.mcpepoch/call";
/** Protocol version: the "v" of every line. */
export const VERSION = 2;

const MAX_ANSWER = 1 << 20; // bytes of the answer line
const DEFAULT_TIMEOUT_MS = 30_000;

/**
 * The host refused the request. `code` is the host's code, naming which
 * condition failed; `message` is "credential SCOPE: CODE: MESSAGE". Neither
 * carries a secret.
 */
export class CredentialError extends Error {
  constructor(scope, code, message) {
    super(message ? `credential ${scope}: ${code}: ${message}` : `credential ${scope}: ${code}`);
    this.name = "CredentialError";
    this.scope = scope;
    this.code = code;
    this.hostMessage = message ?? "";
  }
}

/** The code of NotUnderHostError (the Go package's CodeNotUnderHost). */
export const NOT_UNDER_HOST = "not_under_host";

/**
 * The code of the CredentialError getCredential rejects with, without
 * asking the host, when meta holds no call token (the Go package's
 * CodeNoCall).
 */
export const NO_CALL = "no_call_token";

/**
 * The process was not launched by mcpepoch host with credential delivery:
 * MCPEPOCH_CREDENTIALS_SOCKET is unset.
 * `code` is NOT_UNDER_HOST; `message` is "credential SCOPE: not_under_host:
 * …", as CredentialError's and as the Go package's.
 */
export class NotUnderHostError extends Error {
  constructor(scope) {
    const message =
      `not running under mcpepoch host: ${ENV_SOCKET} is not set ` +
      "(run the server with `mcpepoch host -- CMD…`, and declare the scope under [credentials.NAME] in mcpepoch.toml)";
    super(`credential ${scope}: ${NOT_UNDER_HOST}: ${message}`);
    this.name = "NotUnderHostError";
    this.scope = scope;
    this.code = NOT_UNDER_HOST;
    this.hostMessage = message;
  }
}

/**
 * Returns the call token the host put in a tools/call request's
 * params._meta (`meta`), or "" when there is none. It is a capability of
 * that call while it runs: never log it.
 *
 * @param {Record<string, unknown> | undefined} meta
 * @returns {string}
 */
export function callToken(meta) {
  const tok = meta?.[META_KEY];
  return typeof tok === "string" ? tok : "";
}

/**
 * Returns the secret of the credential scope `scope` (a [credentials.NAME]
 * table of the project's mcpepoch.toml) from the host that launched this
 * process, for the tools/call whose params._meta is `meta` (the TypeScript
 * SDK's extra._meta in a tool handler).
 *
 * Rejects with NotUnderHostError when the environment lacks the socket;
 * with a CredentialError of code NO_CALL when meta holds no call token;
 * with CredentialError when the host refused; otherwise with an Error
 * naming the socket when it cannot be reached or its answer is not one
 * protocol line (never quoting the answer). `options.signal` aborts the
 * request; `options.timeoutMs` bounds it (default 30000).
 *
 * @param {string} scope
 * @param {Record<string, unknown> | undefined} meta
 * @param {{signal?: AbortSignal, timeoutMs?: number}} [options]
 * @returns {Promise<string>}
 */
export function getCredential(scope, meta, options = {}) {
  return getCredentialForCall(scope, callToken(meta), options);
}

/**
 * getCredential for the call whose token (callToken) is `call`: for code
 * that works for a call outside its handler, a helper process say, given
 * the token by the handler.
 *
 * @param {string} scope
 * @param {string} call
 * @param {{signal?: AbortSignal, timeoutMs?: number}} [options]
 * @returns {Promise<string>}
 */
export function getCredentialForCall(scope, call, options = {}) {
  const socket = process.env[ENV_SOCKET];
  if (!socket) return Promise.reject(new NotUnderHostError(scope));
  if (!call) {
    return Promise.reject(
      new CredentialError(
        scope,
        NO_CALL,
        `no call token: pass the _meta of the tools/call being handled (TypeScript SDK: extra._meta), where the host puts it under "${META_KEY}"`,
      ),
    );
  }
  const { signal, timeoutMs = DEFAULT_TIMEOUT_MS } = options;
  const where = `credential ${scope}: host broker ${socket}`;
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const conn = createConnection({ path: socket });
    let chunks = [];
    let size = 0;
    let settled = false;
    const finish = (err, value) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      conn.destroy();
      chunks = [];
      if (err) reject(err);
      else resolve(value);
    };
    const onAbort = () => finish(signal.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    const timer = setTimeout(() => finish(new Error(`${where}: no answer within ${timeoutMs} ms`)), timeoutMs);
    conn.on("error", (err) => finish(new Error(`${where}: ${err.message}`, { cause: err })));
    conn.on("connect", () => {
      conn.write(JSON.stringify({ v: VERSION, scope, call }) + "\n");
    });
    conn.on("data", (chunk) => {
      const nl = chunk.indexOf(0x0a);
      chunks.push(nl < 0 ? chunk : chunk.subarray(0, nl));
      size += nl < 0 ? chunk.length : nl;
      if (size > MAX_ANSWER) return finish(new Error(`${where}: answer longer than ${MAX_ANSWER} bytes`));
      if (nl < 0) return;
      finish(...parse(scope, where, Buffer.concat(chunks).toString("utf8")));
    });
    conn.on("end", () => finish(new Error(`${where}: connection closed before a complete answer line`)));
  });
}

// parse turns an answer line into finish's arguments.
function parse(scope, where, line) {
  let a;
  try {
    a = JSON.parse(line);
  } catch {
    // The line may hold a secret: never quote it.
    return [new Error(`${where}: answer is not a JSON protocol line`)];
  }
  if (a === null || typeof a !== "object" || Array.isArray(a)) {
    return [new Error(`${where}: answer is not a JSON protocol line`)];
  }
  if (a.v !== VERSION) {
    return [new Error(`${where}: answer is not of protocol version ${VERSION}`)];
  }
  if (a.error != null) {
    const code = typeof a.error.code === "string" ? a.error.code : "";
    const message = typeof a.error.message === "string" ? a.error.message : "";
    return [new CredentialError(scope, code, message)];
  }
  if (typeof a.secret !== "string") {
    return [new Error(`${where}: answer has neither secret nor error`)];
  }
  return [null, a.secret];
}
