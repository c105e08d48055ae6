/**
 * Choosing and opening a store's backend. The store folder keeps a marker naming the backend at
 * first use; every later process follows it, so two agents never silently split across backends.
 */
import { existsSync, renameSync } from 'node:fs';
import path from 'node:path';
import { REDIS_PREFIX } from '../core/config.js';
import { AgentLockError, isAgentLockError } from '../core/errors.js';
import type { Holder } from '../core/lock.js';
import type { Backend, BackendKind } from './backend.js';
import { parseRedisUrl } from '../core/redis-url.js';
import { FileStore } from './file/file-store.js';
import { noteProbedStore } from './probe-notices.js';
import { redisAnswers } from './redis/probe.js';
import { ensureStoreDir, readPrivate, writeAtomic } from './file/safe-fs.js';

export interface Marker {
  readonly schema: 'agent-lock/store-v1';
  readonly backend: Exclude<BackendKind, 'memory'>;
  readonly created_at: string;
  /** For a Redis store: its URL (credentials included: the marker is 0600) and key prefix. */
  readonly redis?: { readonly url: string; readonly prefix: string };
  /**
   * A file store's log was written before this marker: a missing log is then damage. Markers of
   * older versions lack it (they were written by read-only commands before any log existed).
   */
  readonly log?: true;
}

export interface OpenBackendOptions {
  readonly storeDir: string;
  readonly requested: Exclude<BackendKind, 'memory'> | null;
  /** This process: it owns the store's internal mutex while deciding (see FileStoreOptions.self). */
  readonly self: Holder;
  readonly mutexTimeoutMs: number;
  readonly processAlive: (pid: number, started: string) => boolean;
  readonly now: () => number;
  /** From the caller or the environment (AGENT_LOCK_REDIS_URL, else REDIS_URL); already valid. */
  readonly redisUrl: string | null;
  /** redisUrl came from the caller (`init --redis-url`), not the environment: a new password in it
   *  is recorded in the marker. One from the environment never is (it is kept out of the file). */
  readonly redisUrlGiven?: boolean;
  readonly redisPrefix: string | null;
  /** The prefix a new Redis store takes when none is set: the repository's own (tree.ts). */
  readonly repositoryPrefix: () => string;
  readonly redisTimeoutMs: number;
  readonly redisProbe: { readonly host: string; readonly port: number } | null;
  readonly staleMs: number;
  /**
   * `init --backend file --force`: a Redis store whose server no longer answers is left for a new
   * file store, its marker kept aside. Never one that answers: that one must be empty, as always.
   */
  readonly leaveUnreachable?: boolean;
}

const MARKER = 'backend.json';
const PROBE_MS = 150;

export function readMarker(storeDir: string): Marker | null {
  const file = path.join(storeDir, MARKER);
  const data = readPrivate(file);
  if (data === null) return null;
  try {
    const marker = JSON.parse(data.toString('utf8')) as Marker;
    if (marker.backend === 'file') return marker;
    // A hand-edited URL that does not parse, or a prefix the setting would refuse, is an unreadable
    // marker like any other, not an internal error later on.
    if (
      marker.backend === 'redis' &&
      typeof marker.redis?.url === 'string' &&
      typeof marker.redis.prefix === 'string' &&
      REDIS_PREFIX.test(marker.redis.prefix) &&
      parseRedisUrl(marker.redis.url)
    )
      return marker;
  } catch {
    // Reported below.
  }
  throw new AgentLockError('E_STORE_UNREADABLE', `the store marker ${file} is unreadable`, {
    hint: 'restore it, or remove it once no agent holds a lock in this store',
  });
}

function writeMarker(storeDir: string, target: StoreTarget, now: number): void {
  const marker: Marker = {
    schema: 'agent-lock/store-v1',
    backend: target.backend,
    created_at: new Date(now).toISOString(),
    ...(target.redis ? { redis: target.redis } : { log: true }),
  };
  writeAtomic(path.join(storeDir, MARKER), `${JSON.stringify(marker)}\n`);
}

/** Which store a process means: a backend and, for Redis, the server and prefix. */
interface StoreTarget {
  readonly backend: Exclude<BackendKind, 'memory'>;
  readonly redis?: { readonly url: string; readonly prefix: string };
  readonly log?: true;
}

function describe(target: StoreTarget): string {
  if (!target.redis) return 'the file backend';
  return `redis at ${parseRedisUrl(target.redis.url).display} with prefix ${target.redis.prefix}`;
}

/** Same store? The password may differ (rotated, or given by the environment), nothing else. */
function sameStore(a: StoreTarget, b: StoreTarget): boolean {
  if (a.backend !== b.backend) return false;
  if (!a.redis || !b.redis) return true;
  return (
    parseRedisUrl(a.redis.url).display === parseRedisUrl(b.redis.url).display &&
    a.redis.prefix === b.redis.prefix
  );
}

/**
 * The same server, with another password than the marker's: it was rotated, and the new one has
 * just been let in (the store answered), so the marker takes it when the caller gave it (init). A
 * marker kept without a password (the user gives it by the environment) is never given one.
 */
function rotatedPassword(recorded: StoreTarget, wanted: StoreTarget): boolean {
  if (recorded.redis === undefined || wanted.redis === undefined) return false;
  const was = parseRedisUrl(recorded.redis.url).password;
  const now = parseRedisUrl(wanted.redis.url).password;
  return was !== undefined && now !== undefined && was !== now;
}

/** The configured URL, but the marker's when that is the same server and only it has the password. */
function redisUrl(configured: string | null, recorded: string | undefined): string | null {
  if (configured === null || recorded === undefined) return configured ?? recorded ?? null;
  const a = parseRedisUrl(configured);
  const b = parseRedisUrl(recorded);
  return a.display === b.display && a.password === undefined && b.password !== undefined
    ? recorded
    : configured;
}

async function storeIsEmpty(backend: Backend): Promise<boolean> {
  return backend.transact((state) => ({
    result: state.locks.size === 0,
    changes: { put: [], del: [], fence: state.fence, tombstones: null, events: [] },
  }));
}

async function openTarget(
  target: StoreTarget,
  options: OpenBackendOptions,
  fresh: boolean,
): Promise<Backend> {
  if (target.backend === 'file') {
    return new FileStore({ ...options, dir: options.storeDir, fresh, logExpected: target.log === true });
  }
  // Loaded only for Redis stores: ioredis stays out of every file-store process.
  const { RedisStore } = await import('./redis/redis-store.js');
  return new RedisStore({
    url: target.redis!.url,
    prefix: target.redis!.prefix,
    timeoutMs: options.redisTimeoutMs,
    busyTimeoutMs: options.mutexTimeoutMs,
    staleMs: options.staleMs,
  });
}

export async function openBackend(options: OpenBackendOptions): Promise<Backend> {
  const { storeDir } = options;
  ensureStoreDir(storeDir);
  // A store from before markers existed is a file store.
  const recorded = readMarker(storeDir);
  const marker: StoreTarget | null =
    recorded ?? (existsSync(path.join(storeDir, 'locks.log')) ? { backend: 'file' } : null);
  const fresh = marker === null;

  let backend = options.requested ?? marker?.backend ?? null;
  let probed: string | null = null;
  if (backend === null) {
    const probe = options.redisProbe;
    if (options.redisUrl !== null) backend = 'redis';
    else if (probe !== null && (await redisAnswers(probe.host, probe.port, PROBE_MS))) {
      backend = 'redis';
      probed = `redis://${probe.host}:${probe.port}`;
    } else backend = 'file';
  }
  const wanted: StoreTarget =
    backend === 'file'
      ? { backend }
      : {
          backend,
          redis: {
            // Asked for Redis with no URL anywhere: the server the probe would look for.
            url:
              redisUrl(options.redisUrl, marker?.redis?.url) ??
              probed ??
              `redis://${options.redisProbe?.host ?? '127.0.0.1'}:${options.redisProbe?.port ?? 6379}`,
            prefix: options.redisPrefix ?? marker?.redis?.prefix ?? options.repositoryPrefix(),
          },
        };

  if (marker !== null && !sameStore(marker, wanted)) {
    // Moving a store elsewhere is allowed only while it holds nothing.
    let empty: boolean;
    try {
      const old = await openTarget(marker, options, false);
      try {
        empty = await storeIsEmpty(old);
      } finally {
        await old.close();
      }
    } catch (error) {
      // By its code: the Redis store is a bundle of its own, with its own copy of the error class.
      if (!marker.redis || wanted.backend !== 'file' || !isAgentLockError(error)) throw error;
      if (error.code !== 'E_BACKEND_UNAVAILABLE') throw error;
      // Its server is gone: nobody can tell whether it still holds locks. Left only when asked.
      if (options.leaveUnreachable !== true) {
        throw new AgentLockError('E_BACKEND_UNAVAILABLE', error.message, {
          cause: error,
          hint: 'if that Redis store is gone for good, alock init --backend file --force goes back to a file store (its marker is kept aside)',
        });
      }
      const stamp = new Date(options.now()).toISOString().replace(/[:.]/g, '-');
      renameSync(path.join(storeDir, MARKER), path.join(storeDir, `${MARKER}.redis-gone.${stamp}`));
      empty = true;
    }
    if (!empty) {
      throw new AgentLockError(
        'E_BACKEND_MISMATCH',
        `the store ${storeDir} uses ${describe(marker)}, not ${describe(wanted)}`,
        {
          hint: 'release its locks first, then run init with the new backend; or drop --backend, AGENT_LOCK_BACKEND and the Redis settings that differ',
        },
      );
    }
  }
  const opened = await openTarget(
    recorded?.log === true && wanted.backend === 'file' ? { ...wanted, log: true } : wanted,
    options,
    fresh,
  );
  const rotated = options.redisUrlGiven === true && recorded !== null && rotatedPassword(recorded, wanted);
  // A file store marked by an older version gets `log` once its log reads whole, so that a log
  // removed from then on is seen as damage.
  const unmarkedLog = recorded?.backend === 'file' && recorded.log !== true && wanted.backend === 'file';
  if (recorded === null || !sameStore(recorded, wanted) || rotated || unmarkedLog) {
    // A store is recorded as Redis only once its server has answered: a typo'd URL changes nothing.
    // A file store's marker is written only beside a readable log, made first (fences from 1): a
    // read-only first command no longer leaves a marker whose store seeds fences from the clock.
    try {
      await storeIsEmpty(opened);
    } catch (error) {
      if (!wanted.redis && error instanceof AgentLockError && error.code === 'E_STORE_UNREADABLE') {
        // A damaged log without a marker: no marker over it, but the store opens, for `repair`.
        return opened;
      }
      await opened.close();
      throw error;
    }
    writeMarker(storeDir, wanted, options.now());
    if (probed !== null && recorded === null) {
      noteProbedStore({
        code: 'W_REDIS_PROBED',
        message: `this new store is a Redis store at ${probed}, where a server answered the probe; for a file store instead, release its locks and run alock init --backend file (AGENT_LOCK_REDIS_PROBE=off keeps new stores on files)`,
        store: probed,
      });
    }
  }
  return opened;
}
