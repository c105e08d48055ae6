/**
 * The Redis store on the server's clock (the contract suite injects a clock; these do not): leases
 * expire by real time, stale snapshots catch up by delta or in full, and commits are announced.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { RedisStore } from '../../../src/backends/redis/redis-store.js';
import { type Locks, openLocks } from '../../../src/locks.js';
import { backendOf } from '../../../src/store/store.js';
import { describeRedis, type RedisServer, startRedis } from './server.js';

/** EVALSHA and EVAL calls the server has counted (INFO commandstats). */
async function scriptCalls(admin: { info(section: string): Promise<string> }) {
  const info = await admin.info('commandstats');
  const count = (pattern: RegExp) => Number(pattern.exec(info)?.[1] ?? 0);
  return { evalsha: count(/cmdstat_evalsha:calls=(\d+)/), eval: count(/cmdstat_eval:calls=(\d+)/) };
}

describeRedis('redis store on the server clock', () => {
  let server: RedisServer;
  let tree: string;
  let opened: Locks[] = [];
  let prefix: string;

  beforeAll(async () => {
    server = await startRedis();
    tree = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'alock-redis-store-')));
  });
  afterAll(async () => {
    await server?.stop();
    rmSync(tree, { recursive: true, force: true });
  });
  afterEach(async () => {
    for (const locks of opened) await locks.close();
    opened = [];
  });

  const store = () =>
    new RedisStore({ url: server.url, prefix, timeoutMs: 5000, busyTimeoutMs: 15_000, staleMs: 7_200_000 });
  async function agent(agentId: string): Promise<Locks> {
    const locks = await openLocks({ dir: tree, backend: store(), identity: { agentId }, env: {} });
    opened.push(locks);
    return locks;
  }
  const scopesOf = async (locks: Locks) =>
    (await locks.list()).locks.map((l) => `${l.agent_id}:${l.scope}`).sort();

  it('expires a lease by real time, and its holder then renews into expired', async () => {
    prefix = `store-${randomBytes(6).toString('hex')}`;
    const [a, b] = [await agent('A'), await agent('B')];
    const taken = await a.acquire('@deploy', { ttl: 1 });
    expect(taken.status).toBe('acquired');
    expect((await b.acquire('@deploy')).status).toBe('held');
    await new Promise((resolve) => setTimeout(resolve, 1300));
    const token = taken.locks[0]!.token!;
    expect((await a.renew('@deploy', { token })).status).toBe('expired');
    expect((await b.acquire('@deploy')).status).toBe('acquired');
    const fence = (await b.list()).locks[0]!.fence;
    expect(fence).toBeGreaterThan(taken.locks[0]!.fence);
  });

  it('keeps every handle exact through deltas, deletions and a full reload', async () => {
    prefix = `store-${randomBytes(6).toString('hex')}`;
    const [a, b] = [await agent('A'), await agent('B')];
    expect(await scopesOf(b)).toEqual([]);
    for (let i = 0; i < 5; i++) await a.acquire(`@job/${i}`);
    await a.release(['@job/1', '@job/3']);
    expect(await scopesOf(b)).toEqual(['A:@job/0', 'A:@job/2', 'A:@job/4']);
    await b.acquire('src/**');
    // More commits than the changes list keeps: B's snapshot can only be reloaded whole.
    for (let i = 0; i < 140; i++) {
      await a.acquire('@churn');
      await a.release('@churn');
    }
    await a.release(['@job/0']);
    expect(await scopesOf(b)).toEqual(['A:@job/2', 'A:@job/4', 'B:src/**']);
    expect((await b.acquire('@job/2')).status).toBe('held');
    expect((await a.acquire('src/x.ts')).status).toBe('held');
  });

  it('announces every commit to watchers, and stops when asked', async () => {
    prefix = `store-${randomBytes(6).toString('hex')}`;
    const [a, b] = [await agent('A'), await agent('B')];
    let calls = 0;
    let wake: () => void = () => {};
    const stop = await backendOf(a.store).watch!(() => {
      calls++;
      wake();
    });
    const woken = new Promise<void>((resolve) => {
      wake = resolve;
    });
    await b.acquire('@x');
    await woken;
    expect(calls).toBeGreaterThanOrEqual(1);
    await stop();
    const before = calls;
    await b.release('@x');
    // A read after the release travels the same server; a late message would have arrived by now.
    await b.list();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(calls).toBe(before);
  });

  it('pays one round trip to acquire and one to release a resource, once its snapshot is current', async () => {
    prefix = `store-${randomBytes(6).toString('hex')}`;
    const a = await agent('A');
    await a.acquire('@warm');
    await a.release('@warm');
    const { Redis } = await import('ioredis');
    const admin = new Redis(server.url);
    try {
      const calls = () => scriptCalls(admin);
      const before = await calls();
      for (let i = 0; i < 10; i++) {
        expect((await a.acquire('@res')).status).toBe('acquired');
        expect((await a.release('@res')).status).toBe('released');
      }
      const after = await calls();
      expect(after.evalsha - before.evalsha).toBe(20);
      expect(after.eval - before.eval).toBe(0);
    } finally {
      admin.disconnect();
    }
  });

  it('sends the commit script again when the server has forgotten it (NOSCRIPT), once', async () => {
    prefix = `store-${randomBytes(6).toString('hex')}`;
    const a = await agent('A');
    await a.acquire('@warm');
    const { Redis } = await import('ioredis');
    const admin = new Redis(server.url);
    try {
      const calls = () => scriptCalls(admin);
      await admin.script('FLUSH');
      const before = await calls();
      expect((await a.release('@warm')).status).toBe('released');
      expect((await a.acquire('@res')).status).toBe('acquired');
      const after = await calls();
      // The release's EVALSHA answered NOSCRIPT, then went as EVAL; the acquire by EVALSHA again.
      expect(after.evalsha - before.evalsha).toBe(2);
      expect(after.eval - before.eval).toBe(1);
      expect((await a.list()).locks.map((l) => l.scope)).toEqual(['@res']);
    } finally {
      admin.disconnect();
    }
  });

  it('keeps a listening handle current from the channel: its next decision is one round trip', async () => {
    prefix = `store-${randomBytes(6).toString('hex')}`;
    const [a, b] = [await agent('A'), await agent('B')];
    await b.list();
    const seen: (readonly string[] | null)[] = [];
    const stop = await backendOf(b.store).watch((touched) => seen.push(touched));
    const first = await a.acquire(['@one', 'src/**']);
    await a.acquire('@two', { ttl: 60 });
    await a.release('@one');
    await a.renew('@two', { ttl: 120 });
    // Every commit was announced with the ids it touched.
    await expect.poll(() => seen.length, { timeout: 10_000 }).toBe(4);
    expect(seen[0]).toEqual(expect.arrayContaining(first.locks.map((l) => l.id)));
    const { Redis } = await import('ioredis');
    const admin = new Redis(server.url);
    try {
      const evalsha = async () =>
        Number(/cmdstat_evalsha:calls=(\d+)/.exec((await admin.info('commandstats')) as string)?.[1] ?? 0);
      const before = await evalsha();
      // B decides on what it followed: one commit, no catch-up first (which would make it two).
      expect((await b.acquire('@three')).status).toBe('acquired');
      expect(await evalsha()).toBe(before + 1);
      const listed = await b.list();
      expect(listed.locks.map((l) => [l.scope, l.expires_at !== null]).sort()).toEqual([
        ['@three', false],
        ['@two', true],
        ['src/**', false],
      ]);
      expect(listed.locks.find((l) => l.scope === '@two')!.expires_at).toBe(
        (await a.list()).locks.find((l) => l.scope === '@two')!.expires_at,
      );
      expect((await b.acquire('src/a.ts')).status).toBe('held');
      expect((await b.acquire('@one')).status).toBe('acquired');
    } finally {
      admin.disconnect();
      await stop();
    }
  });

  it('brings the holder and the next in line up to date as the line moves: each step one round trip', async () => {
    prefix = `store-${randomBytes(6).toString('hex')}`;
    const [a, b] = [await agent('A'), await agent('B')];
    const { Redis } = await import('ioredis');
    const admin = new Redis(server.url);
    const evalsha = async () =>
      Number(/cmdstat_evalsha:calls=(\d+)/.exec((await admin.info('commandstats')) as string)?.[1] ?? 0);
    const cacheOf = (locks: Locks) =>
      (backendOf(locks.store) as unknown as { cache: { locks: Map<string, { status: string }> } | null })
        .cache;
    try {
      // A takes the lock as a waiting request (so the lock names A's process as its taker).
      expect((await a.acquire('@line', { wait: 10 })).status).toBe('acquired');
      await b.list();
      const start = await evalsha();
      // B queues behind it: one commit, which also goes to A's process, so A's handle has the ticket.
      const waiting = b.acquire('@line', { wait: 10 });
      await expect
        .poll(() => [...(cacheOf(a)?.locks.values() ?? [])].some((r) => r.status === 'waiting'), {
          timeout: 10_000,
        })
        .toBe(true);
      // A's release is then one round trip; it hands the lock to B with the whole store, so B takes
      // it without asking and releases in one round trip too.
      expect((await a.release('@line')).status).toBe('released');
      expect((await waiting).status).toBe('acquired');
      expect((await b.release('@line')).status).toBe('released');
      expect((await evalsha()) - start).toBe(3);
      expect((await a.list()).locks).toEqual([]);
    } finally {
      admin.disconnect();
    }
  });

  it('hands over in one round trip on a snapshot that misses a ticket queued since (rebased)', async () => {
    prefix = `store-${randomBytes(6).toString('hex')}`;
    const [a, b, c] = [await agent('A'), await agent('B'), await agent('C')];
    const { Redis } = await import('ioredis');
    const admin = new Redis(server.url);
    const evalsha = async () =>
      Number(/cmdstat_evalsha:calls=(\d+)/.exec((await admin.info('commandstats')) as string)?.[1] ?? 0);
    const waitingIn = async () =>
      Object.values(await admin.hgetall(`{${prefix}}:store`)).filter((json) =>
        json.includes('"status":"waiting"'),
      ).length;
    const cacheOf = (locks: Locks) =>
      (
        backendOf(locks.store) as unknown as {
          cache: { locks: Map<string, { agent_id: string; status: string }> };
        }
      ).cache;
    try {
      // Taken without waiting, the lock names no process to inform: A sees B's ticket only by asking.
      expect((await a.acquire('@line')).status).toBe('acquired');
      const bWaits = b.acquire('@line', { wait: 10 });
      await expect.poll(waitingIn, { timeout: 10_000 }).toBe(1);
      await a.list();
      const cWaits = c.acquire('@line', { wait: 10 });
      await expect.poll(waitingIn, { timeout: 10_000 }).toBe(2);
      // A's snapshot lacks C's ticket; its hand-over to B still commits, in one round trip.
      const start = await evalsha();
      expect((await a.release('@line')).status).toBe('released');
      expect((await evalsha()) - start).toBe(1);
      expect((await bWaits).status).toBe('acquired');
      // The answer brought A's snapshot up to date: C's ticket is in it.
      expect([...cacheOf(a).locks.values()].map((r) => `${r.agent_id}:${r.status}`).sort()).toEqual([
        'B:active',
        'C:waiting',
      ]);
      expect((await b.release('@line')).status).toBe('released');
      expect((await cWaits).status).toBe('acquired');
    } finally {
      admin.disconnect();
    }
  });

  it('keeps a snapshot that a message moved past an answer still on its way (never back)', async () => {
    prefix = `store-${randomBytes(6).toString('hex')}`;
    const [x, h, y] = [await agent('X'), await agent('H'), await agent('Y')];
    const { Redis } = await import('ioredis');
    const admin = new Redis(server.url);
    interface Internals {
      cache: { version: string; locks: Map<string, { agent_id: string; status: string }> };
      client: {
        stream: { pause(): void; resume(): void };
        agentLockCommit(...args: string[]): Promise<string[]>;
      };
    }
    const store = backendOf(h.store) as unknown as Internals;
    try {
      expect((await x.acquire('@r')).status).toBe('acquired');
      const hWaits = h.acquire('@r', { wait: 30 });
      await expect
        .poll(
          async () =>
            Object.values(await admin.hgetall(`{${prefix}}:store`))
              .join()
              .includes('"H"'),
          {
            timeout: 10_000,
          },
        )
        .toBe(true);
      // A commit H does not hear of: its snapshot is now behind the store.
      expect((await y.acquire('@other')).status).toBe('acquired');
      // H asks the store, and its answer (a sync) waits unread on the paused connection...
      const answers: string[][] = [];
      const send = store.client.agentLockCommit.bind(store.client);
      store.client.agentLockCommit = async (...args) => {
        const reply = await send(...args);
        answers.push(reply);
        return reply;
      };
      const evalsha = async () =>
        Number(/cmdstat_evalsha:calls=(\d+)/.exec((await admin.info('commandstats')) as string)?.[1] ?? 0);
      const before = await evalsha();
      store.client.stream.pause();
      const listing = h.list();
      // Answered by the server (nobody else commits meanwhile), before X's release below.
      await expect.poll(evalsha, { timeout: 10_000 }).toBe(before + 1);
      // ...while X hands @r to H's ticket, and the message with the store after it reaches H.
      expect((await x.release('@r')).status).toBe('released');
      await expect
        .poll(
          () => [...store.cache.locks.values()].some((r) => r.agent_id === 'H' && r.status === 'active'),
          {
            timeout: 10_000,
          },
        )
        .toBe(true);
      const moved = store.cache.version;
      store.client.stream.resume();
      const listed = (await listing).locks.map((l) => `${l.agent_id}:${l.scope}`).sort();
      // The answer was older than the snapshot, and did not take it back.
      expect(answers[0]![0]).toBe('sync');
      expect(Number(answers[0]![2])).toBeLessThan(Number(moved));
      expect(store.cache.version).toBe(moved);
      expect(listed).toEqual(['H:@r', 'Y:@other']);
      expect((await hWaits).status).toBe('acquired');
    } finally {
      admin.disconnect();
    }
  });

  it('on a clock of its own, says when it sends a new place in line, in server time', async () => {
    prefix = `store-${randomBytes(6).toString('hex')}`;
    const x = await agent('X');
    const h = await openLocks({
      dir: tree,
      backend: store(),
      identity: { agentId: 'H' },
      env: {},
      clock: Date.now,
    });
    opened.push(h);
    await h.list();
    const client = (
      backendOf(h.store) as unknown as { client: { agentLockCommit(...args: string[]): Promise<string[]> } }
    ).client;
    const flags: string[] = [];
    const send = client.agentLockCommit.bind(client);
    client.agentLockCommit = (...args) => {
      flags.push(args[6]!);
      return send(...args);
    };
    expect((await x.acquire('@r')).status).toBe('acquired');
    const waits = h.acquire('@r', { wait: 30 });
    await expect.poll(() => flags.some((flag) => flag.startsWith('0m')), { timeout: 10_000 }).toBe(true);
    // The script takes the merge only within 50 ms of that time (MERGE in commit-script.ts).
    const sent = Number(flags.find((flag) => flag.startsWith('0m'))!.slice(2));
    const { Redis } = await import('ioredis');
    const admin = new Redis(server.url);
    try {
      const [seconds, micros] = (await admin.time()) as unknown as [string, string];
      const serverMs = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
      expect(sent).toBeGreaterThan(serverMs - 10_000);
      expect(sent).toBeLessThanOrEqual(serverMs);
    } finally {
      admin.disconnect();
    }
    expect((await x.release('@r')).status).toBe('released');
    expect((await waits).status).toBe('acquired');
  });

  it('reads a record stored under another id as unreadable, though the same JSON was read before', async () => {
    prefix = `store-${randomBytes(6).toString('hex')}`;
    const [a, b] = [await agent('A'), await agent('B')];
    const taken = await a.acquire('@x');
    expect(await scopesOf(b)).toEqual(['A:@x']);
    // The same JSON planted under a second field, and the version moved ahead, past anything the
    // changes list holds: B reloads the whole store, meeting that JSON again under an id it does not
    // name.
    const { Redis } = await import('ioredis');
    const raw = new Redis(server.url);
    try {
      const key = `{${prefix}}:store`;
      const json = await raw.hget(key, taken.locks[0]!.id);
      await raw.hset(key, 'lk_planted', json!, '#version', '8999999999999999');
    } finally {
      raw.disconnect();
    }
    const listed = (await b.list()).locks.map((l) => `${l.id}:${l.agent_id}`).sort();
    expect(listed).toEqual([`${taken.locks[0]!.id}:A`, 'lk_planted:<unknown>']);
  });

  it('records breaks as events, newest last', async () => {
    prefix = `store-${randomBytes(6).toString('hex')}`;
    const [a, b] = [await agent('A'), await agent('B')];
    await a.acquire('@one');
    await a.acquire('@two');
    await b.breakLock('@one', { reason: 'stuck' });
    await b.breakLock('@two');
    const events = (await b.events(10)).filter((e) => e.type === 'broken');
    expect(events.map((e) => [e.scope, e.by, e.reason])).toEqual([
      ['@one', 'B', 'stuck'],
      ['@two', 'B', null],
    ]);
    expect((await a.events(1)).map((e) => [e.type, e.scope])).toEqual([['broken', '@two']]);
  });
});
