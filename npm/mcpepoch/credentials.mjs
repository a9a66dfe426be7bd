// mcpepoch/credentials: ask the mcpepoch host for a secret, from inside an
// MCP server that `mcpepoch host` launched. No dependencies.
//
//   import { getCredential } from "mcpepoch/credentials";
//   const token = await getCredential("inventory-api-staging");
//
// The host hands a secret only to a call a person approved, on the epoch
// they approved: call getCredential while handling the tools/call that needs
// it, and do not keep the value past that call.
//
// Protocol (the same as the Go package github.com/mcpepoch/mcpepoch/credentials):
// the host sets MCPEPOCH_CREDENTIALS_SOCKET (the path of a unix stream
// socket) and MCPEPOCH_CREDENTIALS_TOKEN (a random token of the epoch) in the
// server's environment. getCredential connects, writes one JSON line and
// reads one JSON line back:
//
//   → {"v":1,"scope":"NAME","token":"…"}
//   ← {"v":1,"secret":"…"}
//   ← {"v":1,"error":{"code":"…","message":"…"}}

import { createConnection } from "node:net";

/** Name of the variable holding the broker socket's path. */
export const ENV_SOCKET = "MCPEPOCH_CREDENTIALS_SOCKET";
/** Name of the variable holding the epoch's token. */
export const ENV_TOKEN = "MCPEPOCH_CREDENTIALS_TOKEN";
/** Protocol version: the "v" of every line. */
export const VERSION = 1;

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
 * The process was not launched by mcpepoch host with credential delivery:
 * MCPEPOCH_CREDENTIALS_SOCKET or MCPEPOCH_CREDENTIALS_TOKEN is unset.
 * `code` is NOT_UNDER_HOST; `message` is "credential SCOPE: not_under_host:
 * …", as CredentialError's and as the Go package's.
 */
export class NotUnderHostError extends Error {
  constructor(scope) {
    const message =
      `not running under mcpepoch host: ${ENV_SOCKET} and ${ENV_TOKEN} are not set ` +
      "(run the server with `mcpepoch host -- CMD…`, and declare the scope under [credentials.NAME] in mcpepoch.toml)";
    super(`credential ${scope}: ${NOT_UNDER_HOST}: ${message}`);
    this.name = "NotUnderHostError";
    this.scope = scope;
    this.code = NOT_UNDER_HOST;
    this.hostMessage = message;
  }
}

/**
 * Returns the secret of the credential scope `scope` (a [credentials.NAME]
 * table of the project's mcpepoch.toml) from the host that launched this
 * process.
 *
 * Rejects with NotUnderHostError when the environment lacks the socket or
 * the token; with CredentialError when the host refused; otherwise with an
 * Error naming the socket when it cannot be reached or its answer is not one
 * protocol line (never quoting the answer). `options.signal` aborts the
 * request; `options.timeoutMs` bounds it (default 30000).
 *
 * @param {string} scope
 * @param {{signal?: AbortSignal, timeoutMs?: number}} [options]
 * @returns {Promise<string>}
 */
export function getCredential(scope, options = {}) {
  const socket = process.env[ENV_SOCKET];
  const token = process.env[ENV_TOKEN];
  if (!socket || !token) return Promise.reject(new NotUnderHostError(scope));
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
      conn.write(JSON.stringify({ v: VERSION, scope, token }) + "\n");
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
