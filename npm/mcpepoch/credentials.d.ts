// Types of mcpepoch/credentials (credentials.mjs): ask the mcpepoch host for
// a secret from inside an MCP server that `mcpepoch host` launched.

/** Name of the variable holding the broker socket's path. */
export declare const ENV_SOCKET: "MCPEPOCH_CREDENTIALS_SOCKET";
/** The member of a tools/call request's params._meta holding the call's token. */
export declare const META_KEY: "dev.mcpepoch/call";
/** Protocol version: the "v" of every line. */
export declare const VERSION: 2;

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

/** The code of the CredentialError for a meta without a call token (the Go package's CodeNoCall). */
export declare const NO_CALL: "no_call_token";

/** The process was not launched by mcpepoch host with credential delivery. */
export declare class NotUnderHostError extends Error {
  readonly name: "NotUnderHostError";
  readonly scope: string;
  /** Always NOT_UNDER_HOST. */
  readonly code: "not_under_host";
  /** Why, without the "credential SCOPE: not_under_host: " prefix. */
  readonly hostMessage: string;
}

/** The call token the host put in a tools/call request's params._meta, or "". */
export declare function callToken(meta: Record<string, unknown> | undefined): string;

/**
 * Returns the secret of the credential scope `scope` from the host that
 * launched this process, for the tools/call whose params._meta is `meta`
 * (the TypeScript SDK's `extra._meta` in a tool handler). Rejects with
 * NotUnderHostError, CredentialError (code NO_CALL when meta holds no call
 * token), or an Error naming the socket; `signal` aborts, `timeoutMs`
 * bounds the request (default 30000).
 */
export declare function getCredential(
  scope: string,
  meta: Record<string, unknown> | undefined,
  options?: { signal?: AbortSignal; timeoutMs?: number },
): Promise<string>;

/** getCredential for the call whose token (callToken) is `call`. */
export declare function getCredentialForCall(
  scope: string,
  call: string,
  options?: { signal?: AbortSignal; timeoutMs?: number },
): Promise<string>;
