/**
 * The commit script on its own, called through ioredis against a real redis-server: the harness of
 * the script-*.test.ts suites, which check what it stores (read back with HGETALL/LRANGE) and what
 * it answers, for every branch its header documents.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { COMMIT_LUA } from '../../../src/backends/redis/commit-script.js';
import { commitArgv } from '../../../src/backends/redis/commit.js';
import { describeRedis, type RedisServer, startRedis } from './server.js';

export interface CommitArgs {
  epoch: string;
  version: string;
  /** ARGV[3..5]: '1' checks at <= server time < until; then 'm' (MERGE) or 'r' and agents (REBASE). */
  check?: string;
  at?: number;
  until?: number;
  fence: number | string;
  tombstones?: string;
  /** ARGV[9]: the commit's id (default: a fresh one; '' validates only). */
  id?: string;
  puts?: [string, string][];
  dels?: string[];
  /** Channels of waiters the commit names: each hears the commit, watched or not. */
  wake?: string[];
  events?: string;
  /** DOMAINS: the domain version keys read, with the version known; the keys moved (default none). */
  reads?: [string, string][];
  writes?: string[];
  /** FENCES: the fence the decision started from (default: none, its fences never move). */
  seenFence?: number;
}

export interface Store {
  readonly prefix: string;
  readonly keys: { store: string; changes: string; events: string; channel: string; domains: string };
  commit(args: CommitArgs): Promise<string[]>;
  /** A first call without a snapshot: the full sync (and the epoch of a new store). */
  sync(): Promise<string[]>;
  state(): Promise<{
    /** The store hash's lock fields. */
    locks: Record<string, string>;
    /** The store hash's '#' fields, without the '#' (and without #watch, which no commit writes). */
    meta: Record<string, string>;
    /** Each entry of the changes list as its words: version, previous version, ids touched (the commit id left out). */
    changes: string[][];
    events: string[];
  }>;
}

type Commit = (...args: string[]) => Promise<string[]>;

let server: RedisServer;
const clients: Redis[] = [];

export function client(url = server.url): Redis {
  const redis = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 1 });
  redis.defineCommand('agentLockCommit', { numberOfKeys: 4, lua: COMMIT_LUA });
  clients.push(redis);
  return redis;
}

/** Marks the store as listened to for a minute (what RedisStore.watch does): commits then publish. */
export async function watching(redis: Redis, s: Store): Promise<void> {
  const [seconds] = await redis.time();
  await redis.hset(s.keys.store, '#watch', String((Number(seconds) + 60) * 1000));
}

/** The server's clock in microseconds. */
export async function serverMicros(redis: Redis): Promise<number> {
  const [s, us] = await redis.time();
  return Number(s) * 1_000_000 + Number(us);
}

export function store(redis: Redis, prefix = `script-${randomBytes(6).toString('hex')}`): Store {
  const tag = `{${prefix}}`;
  const keys = {
    store: `${tag}:store`,
    changes: `${tag}:changes`,
    events: `${tag}:history`,
    channel: `${tag}:changed`,
    domains: `${tag}:domains`,
  };
  const call = (redis as unknown as { agentLockCommit: Commit }).agentLockCommit.bind(redis);
  const commit = (a: CommitArgs) => {
    const check = a.check ?? '0';
    return call(
      ...commitArgv({
        keys: { store: keys.store, changes: keys.changes, history: keys.events, domains: keys.domains },
        epoch: a.epoch,
        version: a.version,
        checkTime: check.startsWith('1'),
        how: check.slice(1),
        now: a.at ?? 0,
        validUntil: a.until ?? 0,
        fence: a.fence as number,
        seenFence: a.seenFence ?? null,
        tombstones: a.tombstones ?? '',
        channel: keys.channel,
        commitId: a.id ?? randomBytes(6).toString('hex'),
        reads: (a.reads ?? []).map(([key, known]) => [key, Number(known)] as const),
        writes: a.writes ?? [],
        put: a.puts ?? [],
        del: a.dels ?? [],
        notify: a.wake ?? [],
        events: a.events ?? null,
      }),
    );
  };
  return {
    prefix,
    keys,
    commit,
    sync: () => commit({ epoch: '', version: '', fence: 0 }),
    async state() {
      const [all, changes, events] = await Promise.all([
        redis.hgetall(keys.store),
        redis.lrange(keys.changes, 0, -1),
        redis.xrange(keys.events, '-', '+'),
      ]);
      const locks: Record<string, string> = {};
      const meta: Record<string, string> = {};
      for (const [field, value] of Object.entries(all)) {
        if (!field.startsWith('#')) locks[field] = value;
        // #dv and #floor are the domains' (test/backends/redis/domains.test.ts).
        else if (field !== '#watch' && field !== '#dv' && field !== '#floor') meta[field.slice(1)] = value;
      }
      return {
        locks,
        meta,
        changes: changes.map((entry) => words(entry).filter((_, i) => i !== 2)),
        // One stream entry per commit: its field 'e' holds the commit's events.
        events: events.map(([, fields]) => fields[1]!),
      };
    },
  };
}

/** The pairs after the 7 header fields of a sync answer, as a map. */
export function listed(answer: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 7; i < answer.length; i += 2) out[answer[i]!] = answer[i + 1]!;
  expect((answer.length - 7) % 2).toBe(0);
  return out;
}

export const rec = (id: string, n = 1) => JSON.stringify({ id, n });
export const words = (entry: string) => entry.split(' ').filter((word) => word !== '');

/** A suite of its own redis-server: the clients each test opens are closed after it. */
export function describeScript(name: string, body: () => void): void {
  describeRedis(name, () => {
    beforeAll(async () => {
      server = await startRedis();
    });
    afterEach(() => {
      for (const c of clients.splice(0)) c.disconnect();
    });
    afterAll(async () => {
      await server?.stop();
    });
    body();
  });
}
