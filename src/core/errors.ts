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
  /** A held lease was lost (LeaseLostError, the reason of a lease's aborted signal). */
  | 'E_LEASE_LOST'
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

/**
 * Recognises our errors by shape as well as by class: the CLI's lazily loaded commands are separate
 * bundles, each with its own copy of this class, so `instanceof` alone would miss theirs.
 */
export function isAgentLockError(error: unknown): error is AgentLockError {
  if (error instanceof AgentLockError) return true;
  const e = error as { name?: unknown; code?: unknown } | null;
  return typeof e === 'object' && e !== null && e.name === 'AgentLockError' && typeof e.code === 'string';
}

/**
 * Any thrown value as an AgentLockError: ours pass through, a system call's error (ENOENT, EACCES,
 * ...) is an unreadable store, anything else an internal error. Edges print these, never a stack.
 */
export function asAgentLockError(error: unknown): AgentLockError {
  if (isAgentLockError(error)) return error;
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : String(error);
  if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) {
    return new AgentLockError('E_STORE_UNREADABLE', message, {
      cause: error,
      hint: 'check the store folder and its permissions',
    });
  }
  return new AgentLockError('E_INTERNAL', `internal error: ${message}`, {
    cause: error,
    hint: 'please report it',
  });
}
