import { AgentLockError } from './errors.js';
import { validateAgentId } from './identity.js';

export type BackendName = 'file' | 'redis';

export interface Config {
  readonly staleMs: number;
  /** Default lease in seconds, or null for none. */
  readonly defaultTtlSeconds: number | null;
  readonly mutexTimeoutMs: number;
  readonly backend: BackendName | null;
  readonly tree: string | null;
  readonly storeDir: string | null;
  readonly redisUrl: string | null;
}

type Env = Readonly<Record<string, string | undefined>>;

/** The longest lease or wait accepted, in seconds (one year): beyond it a number is a typo. */
export const MAX_SECONDS = 365 * 24 * 60 * 60;

function bad(variable: string, value: string, want: string): AgentLockError {
  return new AgentLockError('E_ENV_INVALID', `${variable} must be ${want} (got ${JSON.stringify(value)})`, {
    hint: `fix or unset ${variable}`,
  });
}

function positiveNumber(env: Env, variable: string, fallback: number, allowZero = false): number {
  const raw = env[variable];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw.trim());
  const ok =
    /^\d+(\.\d+)?$/.test(raw.trim()) && Number.isFinite(value) && (allowZero ? value >= 0 : value > 0);
  if (!ok || value > MAX_SECONDS * 60)
    throw bad(variable, raw, allowZero ? 'a number, 0 or more' : 'a positive number');
  return value;
}

/** Reads and validates every AGENT_LOCK_* variable: a bad value is an error, never a silent default. */
export function readConfig(env: Env): Config {
  const staleMinutes = positiveNumber(env, 'AGENT_LOCK_STALE_MINUTES', 120);
  const ttlRaw = env.AGENT_LOCK_TTL_SECONDS;
  let defaultTtlSeconds: number | null = null;
  if (ttlRaw !== undefined && ttlRaw !== '') {
    if (!/^\d+$/.test(ttlRaw.trim()) || Number(ttlRaw) > MAX_SECONDS) {
      throw bad('AGENT_LOCK_TTL_SECONDS', ttlRaw, `whole seconds from 0 (no lease) to ${MAX_SECONDS}`);
    }
    defaultTtlSeconds = Number(ttlRaw) === 0 ? null : Number(ttlRaw);
  }
  const mutexSeconds = positiveNumber(env, 'AGENT_LOCK_MUTEX_TIMEOUT', 15);
  const backendRaw = env.AGENT_LOCK_BACKEND;
  let backend: BackendName | null = null;
  if (backendRaw !== undefined && backendRaw !== '') {
    if (backendRaw !== 'file' && backendRaw !== 'redis')
      throw bad('AGENT_LOCK_BACKEND', backendRaw, 'file or redis');
    backend = backendRaw;
  }
  const treeRaw = env.AGENT_LOCK_TREE;
  const tree = treeRaw === undefined || treeRaw === '' ? null : validateAgentId(treeRaw, 'AGENT_LOCK_TREE');
  if (env.AGENT_ID !== undefined && env.AGENT_ID.trim() !== '')
    validateAgentId(env.AGENT_ID.trim(), 'AGENT_ID');
  if (env.AGENT_PARENT_ID !== undefined && env.AGENT_PARENT_ID.trim() !== '') {
    validateAgentId(env.AGENT_PARENT_ID.trim(), 'AGENT_PARENT_ID');
  }
  const redisUrl = env.AGENT_LOCK_REDIS_URL || env.REDIS_URL || null;
  if (redisUrl !== null && !/^rediss?:\/\//.test(redisUrl)) {
    const variable = env.AGENT_LOCK_REDIS_URL ? 'AGENT_LOCK_REDIS_URL' : 'REDIS_URL';
    throw new AgentLockError('E_ENV_INVALID', `${variable} must be a redis:// or rediss:// URL`, {
      hint: `fix or unset ${variable}`,
    });
  }
  return {
    staleMs: staleMinutes * 60_000,
    defaultTtlSeconds,
    mutexTimeoutMs: mutexSeconds * 1000,
    backend,
    tree,
    storeDir: env.AGENT_LOCK_DIR || null,
    redisUrl,
  };
}

/** `--ttl` and friends: whole seconds, at least 1, at most a year. */
export function parseSeconds(raw: string, flag: string): number {
  const text = raw.trim();
  if (!/^\d+$/.test(text) || Number(text) < 1 || Number(text) > MAX_SECONDS) {
    throw new AgentLockError(
      'E_TTL_INVALID',
      `${flag} must be whole seconds from 1 to ${MAX_SECONDS} (got ${JSON.stringify(raw)})`,
      { hint: `for example ${flag} 30` },
    );
  }
  return Number(text);
}
