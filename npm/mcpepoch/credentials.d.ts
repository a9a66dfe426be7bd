// Types of mcpepoch/credentials (credentials.mjs): ask the mcpepoch host for
// a secret from inside an MCP server that `mcpepoch host` launched.

/** Name of the variable holding the broker socket's path. */
export declare const ENV_SOCKET: "MCPEPOCH_CREDENTIALS_SOCKET";
/** Name of the variable holding the epoch's token. */
export declare const ENV_TOKEN: "MCPEPOCH_CREDENTIALS_TOKEN";
/** Protocol version: the "v" of every line. */
export declare const VERSION: 1;

/** The host refused the request; `code` names which condition failed. */
export declare class CredentialError extends Error {
  readonly name: "CredentialError";
  /** The scope asked for. */
  readonly scope: string;
  /** The host's error code, as sent. */
  readonly code: string;
  /** The host's own message, without the "credential SCOPE: CODE: " prefix. */
  readonly hostMessage: string;
}

/** The code of NotUnderHostError (the Go package's CodeNotUnderHost). */
export declare const NOT_UNDER_HOST: "not_under_host";

/** The process was not launched by mcpepoch host with credential delivery. */
export declare class NotUnderHostError extends Error {
  readonly name: "NotUnderHostError";
  readonly scope: string;
  /** Always NOT_UNDER_HOST. */
  readonly code: "not_under_host";
  /** Why, without the "credential SCOPE: not_under_host: " prefix. */
  readonly hostMessage: string;
}

/**
 * Returns the secret of the credential scope `scope` from the host that
 * launched this process. Rejects with NotUnderHostError, CredentialError,
 * or an Error naming the socket; `signal` aborts, `timeoutMs` bounds the
 * request (default 30000).
 */
export declare function getCredential(
  scope: string,
  options?: { signal?: AbortSignal; timeoutMs?: number },
): Promise<string>;
