/**
 * A damaged Redis store fails closed (docs/stores.md), on a real server: records and metadata of the
 * store hash overwritten with garbage, or the store key replaced by another type. No decision
 * grants a lock over the damage, the damaged values stay exactly as they were, and only `repair`
 * moves them into {PREFIX}:damaged:<time> (kept) and lets the store go on, fences above all before.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, expect, it } from 'vitest';
import { type Locks, openLocks } from '../../../src/index.js';
import { uniquePrefix } from '../../race/helpers.js';
import { describeRedis, redisForSuite } from './server.js';

interface Damage {
  readonly name: string;
  /** Damages the store through a raw client; `lockId` is the id of the lock taken before. */
  readonly apply: (raw: RawClient, store: string, lockId: string) => Promise<unknown>;
  /** The key of the layout (other than the store hash) this damage replaces by a foreign value. */
  readonly replaces?: 'changes' | 'domains' | 'history';
}

/** Replaces the layout key `name` (beside the store hash) by a value of another type. */
const replaceKey =
  (name: string, type: 'string' | 'list' | 'hash') =>
  async (r: RawClient, s: string): Promise<void> => {
    const key = s.replace(/:store$/, `:${name}`);
    await r.del(key);
    if (type === 'string') await r.set(key, 'foreign value');
    else if (type === 'list') await r.rpush(key, 'foreign value');
    else await r.hset(key, 'foreign', 'value');
  };

/** Rewrites the lock's record, well formed but for its scope. */
const withScope = (scope: string) => async (r: RawClient, s: string, id: string) => {
  const record = JSON.parse((await r.hgetall(s))[id]!) as Record<string, unknown>;
  await r.hset(s, id, JSON.stringify({ ...record, kind: 'path', scope }));
};

interface RawClient {
  hset(key: string, field: string, value: string): Promise<unknown>;
  hgetall(key: string): Promise<Record<string, string>>;
  del(key: string): Promise<unknown>;
  rpush(key: string, value: string): Promise<unknown>;
  set(key: string, value: string): Promise<unknown>;
  get(key: string): Promise<string | null>;
  keys(pattern: string): Promise<string[]>;
  type(key: string): Promise<string>;
  disconnect(): void;
}

const DAMAGE: readonly Damage[] = [
  { name: 'a record overwritten with garbage', apply: (r, s, id) => r.hset(s, id, 'not json {') },
  { name: 'a record of the wrong shape', apply: (r, s, id) => r.hset(s, id, '{"id":7}') },
  { name: '#fence overwritten', apply: (r, s) => r.hset(s, '#fence', 'garbage') },
  { name: '#version overwritten', apply: (r, s) => r.hset(s, '#version', 'xyz') },
  { name: '#tombstones overwritten', apply: (r, s) => r.hset(s, '#tombstones', '[broken') },
  { name: '#watch overwritten', apply: (r, s) => r.hset(s, '#watch', 'zz') },
  { name: '#tomb_v overwritten', apply: (r, s) => r.hset(s, '#tomb_v', 'v?') },
  {
    name: 'the changes list replaced by a string',
    apply: replaceKey('changes', 'string'),
    replaces: 'changes',
  },
  { name: 'the changes list replaced by a hash', apply: replaceKey('changes', 'hash'), replaces: 'changes' },
  {
    name: 'the domains hash replaced by a string',
    apply: replaceKey('domains', 'string'),
    replaces: 'domains',
  },
  { name: 'the domains hash replaced by a list', apply: replaceKey('domains', 'list'), replaces: 'domains' },
  {
    name: 'the history stream replaced by a list',
    apply: replaceKey('history', 'list'),
    replaces: 'history',
  },
  { name: 'a record whose scope is empty', apply: withScope('') },
  { name: 'a record whose scope leaves the tree (../etc/**)', apply: withScope('../etc/**') },
  {
    name: 'the store key replaced by a string',
    apply: async (r, s) => {
      await r.del(s);
      await r.set(s, 'foreign value');
    },
  },
];

let tried = 0;
afterAll(() => {
  console.log(`redis damage: ${tried} damage patterns tried on the Redis store`);
});

describeRedis('redis store: damage fails closed', () => {
  const server = redisForSuite();
  const roots: string[] = [];
  let handles: Locks[] = [];
  afterEach(async () => {
    for (const handle of handles) await handle.close();
    handles = [];
    for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
  });

  async function raw(): Promise<RawClient> {
    const { Redis } = await import('ioredis');
    return new Redis(server().url, { maxRetriesPerRequest: 1 }) as unknown as RawClient;
  }

  async function setup(name: string) {
    const root = realpathSync(
      mkdtempSync(path.join(os.tmpdir(), `alock-rdamage-${name.replace(/\W+/g, '-')}-`)),
    );
    roots.push(root);
    const tree = path.join(root, 'tree');
    mkdirSync(tree, { recursive: true });
    const prefix = uniquePrefix('damage');
    const env = {
      AGENT_LOCK_DIR: path.join(root, 'store'),
      AGENT_LOCK_BACKEND: 'redis',
      AGENT_LOCK_REDIS_URL: server().url,
      AGENT_LOCK_REDIS_PREFIX: prefix,
    };
    const open = async (agent: string) => {
      const handle = await openLocks({ dir: tree, env: { ...env, AGENT_ID: agent } });
      handles.push(handle);
      return handle;
    };
    return { open, store: `{${prefix}}:store`, prefix };
  }

  async function grantsNothing(locks: Locks, scopes: string[]): Promise<void> {
    try {
      const outcome = await locks.acquire(scopes);
      expect(outcome.status, scopes.join(' ')).toBe('held');
    } catch (error) {
      expect(error).toMatchObject({ code: 'E_STORE_UNREADABLE' });
      expect((error as Error).message).toContain('cannot be read');
    }
  }

  for (const damage of DAMAGE) {
    it(`${damage.name}: grants nothing, keeps the damage, and repair moves it aside`, async () => {
      tried += 1;
      const s = await setup(damage.name);
      const a = await s.open('a');
      const taken = await a.acquire(['src/a.ts', '@keep']);
      expect(taken.status).toBe('acquired');
      const maxFence = Math.max(...taken.locks.map((lock) => lock.fence));
      const lockId = taken.locks.find((lock) => lock.scope === '@keep')!.id;
      const client = await raw();
      try {
        await damage.apply(client, s.store, lockId);
        const type = await client.type(s.store);
        const before = type === 'hash' ? await client.hgetall(s.store) : await client.get(s.store);

        // A new handle (every CLI run is one) reads the damage. A warm handle trusts its snapshot
        // until the store's version moves, so it sees damaged records at its next resync; damaged
        // metadata it meets at once, as every commit reads it.
        const b = await s.open('b');
        await grantsNothing(b, ['@keep']);
        await grantsNothing(b, ['src/**']);
        await grantsNothing(b, ['@new']);
        if (damage.replaces !== undefined) {
          // The error names the key of the wrong type, not only the store.
          await expect(b.acquire(['@named'])).rejects.toThrow(`:${damage.replaces} is a `);
        }
        const after = type === 'hash' ? await client.hgetall(s.store) : await client.get(s.store);
        // Nothing was rewritten over the damage (a refused decision commits nothing).
        if (type === 'hash') {
          for (const [field, value] of Object.entries(before as Record<string, string>)) {
            if (field !== '#watch') expect((after as Record<string, string>)[field], field).toBe(value);
          }
        } else expect(after).toBe(before);

        const report = await b.repair();
        expect(report.damage.length).toBeGreaterThan(0);
        const kept = (await client.keys(`{${s.prefix}}:damaged:*`)).map((key) =>
          key.replace(/:(store|changes|domains|history)$/, ''),
        );
        expect(new Set(kept).size).toBe(1);
        if (damage.replaces !== undefined) {
          // The wrong key is named, moved aside whole, and the store hash left as it was.
          expect(report.damage).toContainEqual(expect.stringContaining(`:${damage.replaces} was a `));
          expect(await client.type(`${kept[0]!}:${damage.replaces}`)).not.toBe('none');
        } else if (type === 'hash') {
          const aside = await client.hgetall(kept[0]!);
          expect(Object.keys(aside)).not.toHaveLength(0);
          for (const [field, value] of Object.entries(aside)) {
            expect(value).toBe((before as Record<string, string>)[field]);
          }
        } else if (type !== 'hash') expect(await client.get(`${kept[0]!}:store`)).toBe(before);
        expect((await b.repair()).damage).toEqual([]);

        const fresh = await b.acquire(['@after-repair']);
        expect(fresh.status).toBe('acquired');
        expect(fresh.locks[0]!.fence).toBeGreaterThan(maxFence);
        // The warm handle of before resyncs too.
        expect((await a.acquire(['@after-repair'])).status).toBe('held');
      } finally {
        client.disconnect();
      }
    });
  }
  it('a decision over a history stream of another type fails whole: the lock stays, and repair keeps the key', async () => {
    tried += 1;
    const s = await setup('events-key');
    const a = await s.open('a');
    expect((await a.acquire(['@held'])).status).toBe('acquired');
    const client = await raw();
    try {
      const events = s.store.replace(/:store$/, ':history');
      await client.del(events);
      await client.set(events, 'foreign value');
      const b = await s.open('b');
      await expect(b.breakLock(['@held'], { reason: 'test' })).rejects.toMatchObject({
        code: 'E_STORE_UNREADABLE',
      });
      expect((await b.list()).locks.map((lock) => lock.scope)).toEqual(['@held']);
      expect((await b.repair()).damage).toEqual([expect.stringContaining('was a string, not a stream')]);
      expect((await b.breakLock(['@held'], { reason: 'test' })).status).toBe('broken');
    } finally {
      client.disconnect();
    }
  });
});
