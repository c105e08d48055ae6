/**
 * Conflict domains on Redis (issue 19): a commit compares only the domain versions its decision
 * read, so unrelated scopes never send each other's commits back; related ones still do; new
 * fences move past grants made meanwhile; and an older client sharing the store (its commit script
 * compares #version alone and moves no domain version) is never silently mixed in.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { RedisStore } from '../../../src/backends/redis/redis-store.js';
import { type Locks, openLocks } from '../../../src/locks.js';
import { backendOf } from '../../../src/store/store.js';
import { describeRedis, type RedisServer, startRedis } from './server.js';

/** The commit script of agent-lock before conflict domains, as an older client runs it. */
const OLD_COMMIT_LUA = readFileSync(new URL('./fixtures/commit-script-e452b72.lua', import.meta.url), 'utf8');

describeRedis('conflict domains on the redis store', () => {
  let server: RedisServer;
  let tree: string;
  let admin: Redis;
  let opened: Locks[] = [];
  let prefix: string;

  beforeAll(async () => {
    server = await startRedis();
    admin = new Redis(server.url);
    tree = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'alock-redis-domains-')));
  });
  afterAll(async () => {
    admin?.disconnect();
    await server?.stop();
    rmSync(tree, { recursive: true, force: true });
  });
  afterEach(async () => {
    for (const locks of opened) await locks.close();
    opened = [];
  });

  async function agent(agentId: string, clock?: () => number): Promise<Locks> {
    const backend = new RedisStore({
      url: server.url,
      prefix,
      timeoutMs: 5000,
      busyTimeoutMs: 15_000,
      staleMs: 7_200_000,
    });
    const locks = await openLocks({
      dir: tree,
      backend,
      identity: { agentId },
      env: {},
      ...(clock ? { clock } : {}),
    });
    opened.push(locks);
    return locks;
  }
  const statsOf = (locks: Locks) => (backendOf(locks.store) as RedisStore).stats;
  const storeKey = () => `{${prefix}}:store`;

  it('sibling files and other resources commit without sending each other back', async () => {
    prefix = `domains-${randomBytes(6).toString('hex')}`;
    const [a, b] = [await agent('A'), await agent('B')];
    await a.list();
    await b.list();
    for (let i = 0; i < 5; i += 1) {
      expect((await b.acquire(['src/b.ts', '@b'])).status).toBe('acquired');
      expect((await a.acquire('src/a.ts')).status).toBe('acquired');
      expect((await a.acquire('@a')).status).toBe('acquired');
      expect((await b.release(['src/b.ts', '@b'])).status).toBe('released');
      expect((await a.release(['src/a.ts', '@a'])).status).toBe('released');
    }
    expect(statsOf(a).conflicts).toBe(0);
    expect(statsOf(b).conflicts).toBe(0);
  });

  it("a lease renews and releases by its locks' domains, not sent back by others' commits", async () => {
    prefix = `domains-${randomBytes(6).toString('hex')}`;
    const [a, b] = [await agent('A'), await agent('B')];
    await a.list();
    const held = await a.hold('@leased', { ttl: 30 });
    expect(held.status).toBe('acquired');
    expect((await b.acquire('@b')).status).toBe('acquired');
    expect((await held.lease!.renew()).status).toBe('renewed');
    expect((await b.release('@b')).status).toBe('released');
    expect((await held.lease!.release()).status).toBe('released');
    expect(statsOf(a).conflicts).toBe(0);
    expect((await b.acquire('@leased')).status).toBe('acquired');
  });

  it('a wider scope taken meanwhile sends a narrower decision back, which then sees it', async () => {
    prefix = `domains-${randomBytes(6).toString('hex')}`;
    const [a, b] = [await agent('A'), await agent('B')];
    await a.list();
    expect((await b.acquire('src/**')).status).toBe('acquired');
    const held = await a.acquire('src/lib/a.ts');
    expect(held.status).toBe('held');
    expect(held.conflicts.map((l) => l.scope)).toEqual(['src/**']);
    expect(statsOf(a).conflicts).toBe(1);
    // And the other way round: a narrow lock taken meanwhile, a wide claim.
    expect((await b.release('src/**')).status).toBe('released');
    expect((await a.acquire('src/lib/a.ts')).status).toBe('acquired');
    await b.list();
    expect((await a.acquire('docs/x.md')).status).toBe('acquired');
    expect((await b.acquire('src/**')).status).toBe('held');
  });

  it('moves a new fence past grants made meanwhile on other domains, in the answer and the store', async () => {
    prefix = `domains-${randomBytes(6).toString('hex')}`;
    // A decides on a clock ten seconds behind the server's: its fences, taken from its clock,
    // lie below those B is granted meanwhile.
    const a = await agent('A', () => Date.now() - 10_000);
    const b = await agent('B');
    await a.list();
    const theirs = await b.acquire('@b');
    expect(theirs.status).toBe('acquired');
    const ours = await a.acquire('@a');
    expect(ours.status).toBe('acquired');
    expect(statsOf(a).conflicts).toBe(0);
    const fence = ours.locks[0]!.fence;
    expect(fence).toBeGreaterThan(theirs.locks[0]!.fence);
    const stored = JSON.parse((await admin.hget(storeKey(), ours.locks[0]!.id))!) as { fence: number };
    expect(stored.fence).toBe(fence);
    const acquired = (await b.events({ limit: 10 })).find((e) => e.type === 'acquired' && e.scope === '@a');
    expect(acquired?.fence).toBe(fence);
    expect((await a.list()).locks.find((l) => l.scope === '@a')?.fence).toBe(fence);
    // The next grant anywhere is larger still.
    expect((await b.acquire('@c')).locks[0]!.fence).toBeGreaterThan(fence);
  });

  it('an older client committing on a domain voids what newer handles knew of it', async () => {
    prefix = `domains-${randomBytes(6).toString('hex')}`;
    const [a, b] = [await agent('A'), await agent('B')];
    await a.list();
    // B commits elsewhere, so A's commits on @x land on a store that moved: A then knows @x at
    // versions past its snapshot's.
    expect((await b.acquire('@y')).status).toBe('acquired');
    const mine = await a.acquire('@x');
    expect(mine.status).toBe('acquired');
    const template = JSON.parse((await admin.hget(storeKey(), mine.locks[0]!.id))!) as Record<
      string,
      unknown
    >;
    expect((await a.release('@x')).status).toBe('released');
    expect(statsOf(a).conflicts).toBe(0);

    // The older client takes @x with its own script: compare-and-set on #version, nothing else.
    const old = new Redis(server.url);
    try {
      old.defineCommand('oldCommit', { numberOfKeys: 3, lua: OLD_COMMIT_LUA });
      const commit = (old as unknown as { oldCommit(...args: string[]): Promise<string[]> }).oldCommit.bind(
        old,
      );
      const keys = [storeKey(), `{${prefix}}:changes`, `{${prefix}}:history`];
      const send = (epoch: string, version: string, puts: [string, string][]) =>
        commit(
          ...keys,
          epoch,
          version,
          '0',
          String(Date.now()),
          String(Date.now() + 1000),
          String(Date.now() * 1000 + 999_999),
          '',
          `{${prefix}}:changed`,
          randomBytes(6).toString('hex'),
          String(puts.length),
          ...puts.flat(),
          '0',
          '0',
        );
      const [, epoch, version] = await send('', '', []);
      const record = { ...template, id: 'lk_old', agent_id: 'OLD', token_hash: 'x'.repeat(64) };
      const taken = await send(epoch!, version!, [['lk_old', JSON.stringify(record)]]);
      expect(taken[0]).toBe('ok');

      // A knows @x free at a version later than its snapshot, and no domain version moved: the
      // floor still sends its decision back, and the decision made again sees the older client.
      const refused = await a.acquire('@x');
      expect(refused.status).toBe('held');
      expect(refused.conflicts.map((l) => l.agent_id)).toEqual(['OLD']);

      // And the older client's compare-and-set still fails on what newer clients commit.
      expect((await b.acquire('@z')).status).toBe('acquired');
      const stale = await send(epoch!, taken[2]!, [
        ['lk_old2', JSON.stringify({ ...record, id: 'lk_old2' })],
      ]);
      expect(stale[0]).toBe('sync');
      expect(await admin.hget(storeKey(), 'lk_old2')).toBeNull();
    } finally {
      old.disconnect();
    }
  });

  it('a decision that would reap a dead holder elsewhere is made again over the whole store', async () => {
    prefix = `domains-${randomBytes(6).toString('hex')}`;
    const [a, b] = [await agent('A'), await agent('B')];
    const lease = await b.acquire('@lapsing', { ttl: 1 });
    expect(lease.status).toBe('acquired');
    await a.list();
    await new Promise((resolve) => setTimeout(resolve, 1200));
    expect((await a.acquire('@mine')).status).toBe('acquired');
    expect(statsOf(a).widened).toBe(1);
    expect(await admin.hget(storeKey(), lease.locks[0]!.id)).toBeNull();
    expect((await b.renew('@lapsing')).status).toBe('expired');
  });
});
