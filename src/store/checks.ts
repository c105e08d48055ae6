/**
 * What the library checks of a caller's arguments before any decision: text, TTLs, waits, Redis
 * settings. Errors name the library's options; the CLI words its own flags.
 */
import { REDIS_PREFIX } from '../core/config.js';
import { AgentLockError } from '../core/errors.js';
import type { Mode } from '../core/lock.js';
import { parseRedisUrl, RedisUrlError } from '../core/redis-url.js';

export const MAX_INTENT = 500;
export const MAX_NOTE = 2000;
/** A request to a holder, or its answer: read by an agent as added context, so kept short. */
export const MAX_ASK = 1000;
/** Undelivered messages one lock keeps at most: a stuck holder is not flooded. */
export const MAX_ASKS_WAITING = 8;
/** More files than this under enforce needs force: a typo'd scope should not freeze a tree. */
export const MAX_FROZEN = 500;

export function text(value: string | undefined, what: string, max: number, required: boolean): string | null {
  if (value === undefined) return null;
  const trimmed = value.trim();
  if (trimmed === '') {
    if (required)
      throw new AgentLockError('E_USAGE', `${what} is empty`, { hint: `give the ${what} some text` });
    return null;
  }
  if (trimmed.length > max)
    throw new AgentLockError('E_USAGE', `${what} is longer than ${max} characters`, {
      hint: 'say it shorter',
    });
  if (/[\p{Cc}]/u.test(trimmed.replace(/\n/g, ' '))) {
    throw new AgentLockError('E_USAGE', `${what} contains a control character`, {
      hint: 'use printable text (newlines are allowed)',
    });
  }
  return trimmed;
}

export function checkedRedisUrl(url: string): string {
  try {
    parseRedisUrl(url);
  } catch (error) {
    if (error instanceof RedisUrlError)
      throw new AgentLockError('E_USAGE', error.message, { hint: 'for example redis://127.0.0.1:6379' });
    throw error;
  }
  return url;
}

export function checkedPrefix(prefix: string): string {
  if (!REDIS_PREFIX.test(prefix)) {
    throw new AgentLockError('E_USAGE', `the Redis namespace ${JSON.stringify(prefix)} is not valid`, {
      hint: 'use 1 to 64 letters, digits or . _ : / -',
    });
  }
  return prefix;
}

export function checkedTtl(ttl: number | undefined, fallback: number | null): number | null {
  if (ttl === undefined) return fallback;
  if (!Number.isInteger(ttl) || ttl < 1 || ttl > 365 * 24 * 3600) {
    throw new AgentLockError('E_TTL_INVALID', `ttl must be whole seconds from 1 to 31536000 (got ${ttl})`, {
      hint: 'whole seconds, for example 30',
    });
  }
  return ttl;
}

export function checkedWait(wait: number | undefined): number {
  if (wait === undefined) return 0;
  if (typeof wait !== 'number' || Number.isNaN(wait) || wait < 0) {
    throw new AgentLockError('E_USAGE', `wait must be seconds, 0 or more (got ${wait})`, {
      hint: 'for example wait: 30',
    });
  }
  return wait;
}

export const mode = (shared: boolean | undefined): Mode => (shared ? 'shared' : 'exclusive');
