/**
 * Stable error codes. Exceptions are for misuse and broken infrastructure only;
 * contention (held, expired, not_found, ...) is always a result, never an exception.
 */
export type ErrorCode =
  | 'E_USAGE'
  | 'E_SCOPE_EMPTY'
  | 'E_SCOPE_INVALID'
  | 'E_SCOPE_OUTSIDE_TREE'
  | 'E_RESOURCE_INVALID'
  | 'E_TTL_INVALID'
  | 'E_ENV_INVALID'
  | 'E_IDENTITY_INVALID'
  | 'E_BACKEND_MISMATCH'
  | 'E_BACKEND_UNAVAILABLE'
  | 'E_STORE_UNREADABLE'
  | 'E_STORE_UNSAFE'
  | 'E_STORE_BUSY'
  | 'E_CLOSED'
  | 'E_INTERNAL';

export class AgentLockError extends Error {
  override readonly name = 'AgentLockError';
  readonly code: ErrorCode;
  /** What the user can do about it, shown after the message by the CLI. */
  readonly hint: string | undefined;

  constructor(code: ErrorCode, message: string, options: { cause?: unknown; hint?: string } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.hint = options.hint;
  }
}

export function isAgentLockError(error: unknown): error is AgentLockError {
  return error instanceof AgentLockError;
}
