import { AgentLockError } from './errors.js';
import { saysNoParent, validateAgentId } from './identity.js';
import { parseRedisUrl, RedisUrlError } from './redis-url.js';

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
  /** Keys of the Redis store live under `{prefix}:`; null when AGENT_LOCK_REDIS_PREFIX is unset. */
  readonly redisPrefix: string | null;
  /** How long a Redis command or connection may take before the store counts as unavailable. */
  readonly redisTimeoutMs: number;
  /** Where a new store with nothing configured looks for a Redis server (null: it does not). */
  readonly redisProbe: { readonly host: string; readonly port: number } | null;
  /** AGENT_LOCK_WORKTREES: what an overlap with a lock of another worktree of the repository does. */
  readonly worktrees: 'warn' | 'block' | 'off';
}

/** A Redis key prefix: short, printable, no braces (it becomes the hash tag `{prefix}`). */
export const REDIS_PREFIX = /^[A-Za-z0-9._:/-]{1,64}$/;

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
    throw bad(
      variable,
      raw,
      `${allowZero ? 'a number, 0 or more' : 'a positive number'}, at most ${MAX_SECONDS * 60}`,
    );
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
  // Set and empty is refused, not read as unset: one agent with `AGENT_LOCK_TREE=` beside one
  // with a name would key the same files differently and never see each other's locks.
  if (treeRaw !== undefined && treeRaw.trim() === '')
    throw bad('AGENT_LOCK_TREE', treeRaw, 'a name the clones that share locks all set');
  const tree = treeRaw === undefined ? null : validateAgentId(treeRaw, 'AGENT_LOCK_TREE');
  const dirRaw = env.AGENT_LOCK_DIR;
  // A relative store folder would be a different store for each agent that reads it differently.
  if (dirRaw !== undefined && dirRaw !== '' && !/^(\/|[A-Za-z]:[\\/]|\\\\)/.test(dirRaw))
    throw bad('AGENT_LOCK_DIR', dirRaw, 'an absolute path');
  if (env.AGENT_ID !== undefined && env.AGENT_ID.trim() !== '')
    validateAgentId(env.AGENT_ID.trim(), 'AGENT_ID');
  if (env.AGENT_PARENT_ID !== undefined && !saysNoParent(env.AGENT_PARENT_ID)) {
    validateAgentId(env.AGENT_PARENT_ID.trim(), 'AGENT_PARENT_ID');
  }
  const redisUrl = env.AGENT_LOCK_REDIS_URL || env.REDIS_URL || null;
  if (redisUrl !== null) {
    const variable = env.AGENT_LOCK_REDIS_URL ? 'AGENT_LOCK_REDIS_URL' : 'REDIS_URL';
    try {
      parseRedisUrl(redisUrl);
    } catch (error) {
      if (!(error instanceof RedisUrlError)) throw error;
      throw new AgentLockError('E_ENV_INVALID', `${variable}: ${error.message}`, {
        hint: `fix or unset ${variable}`,
      });
    }
  }
  const probeRaw = env.AGENT_LOCK_REDIS_PROBE;
  let redisProbe: Config['redisProbe'] = { host: '127.0.0.1', port: 6379 };
  if (probeRaw !== undefined && probeRaw !== '') {
    const match = /^([A-Za-z0-9._-]+):(\d{1,5})$/.exec(probeRaw.trim());
    if (probeRaw.trim() === 'off') redisProbe = null;
    else if (match && Number(match[2]) >= 1 && Number(match[2]) <= 65535)
      redisProbe = { host: match[1]!, port: Number(match[2]) };
    else throw bad('AGENT_LOCK_REDIS_PROBE', probeRaw, 'host:port or off');
  }
  const prefixRaw = env.AGENT_LOCK_REDIS_PREFIX;
  let redisPrefix: string | null = null;
  if (prefixRaw !== undefined && prefixRaw !== '') {
    if (!REDIS_PREFIX.test(prefixRaw))
      throw bad('AGENT_LOCK_REDIS_PREFIX', prefixRaw, '1 to 64 letters, digits or . _ : / -');
    redisPrefix = prefixRaw;
  }
  const redisSeconds = positiveNumber(env, 'AGENT_LOCK_REDIS_TIMEOUT', 5);
  const worktreesRaw = env.AGENT_LOCK_WORKTREES;
  let worktrees: Config['worktrees'] = 'warn';
  if (worktreesRaw !== undefined && worktreesRaw !== '') {
    const value = worktreesRaw.trim();
    if (value !== 'warn' && value !== 'block' && value !== 'off')
      throw bad('AGENT_LOCK_WORKTREES', worktreesRaw, 'warn, block or off');
    worktrees = value;
  }
  return {
    staleMs: staleMinutes * 60_000,
    defaultTtlSeconds,
    mutexTimeoutMs: mutexSeconds * 1000,
    backend,
    tree,
    storeDir: env.AGENT_LOCK_DIR || null,
    redisUrl,
    redisPrefix,
    redisTimeoutMs: redisSeconds * 1000,
    redisProbe,
    worktrees,
  };
}

/** `--ttl` and friends: whole seconds, at least 1, at most a year. */
export function parseSeconds(raw: string, flag: string): number {
  // No trimming: `--ttl ' 5'` is a quoting slip, and a slip must not pass as a lease length.
  const text = raw;
  if (!/^\d+$/.test(text) || Number(text) < 1 || Number(text) > MAX_SECONDS) {
    throw new AgentLockError(
      'E_TTL_INVALID',
      `${flag} must be whole seconds from 1 to ${MAX_SECONDS} (got ${JSON.stringify(raw)})`,
      { hint: `for example ${flag} 30` },
    );
  }
  return Number(text);
}
