/**
 * The Redis store on a real 3-master Redis Cluster, through the library: several agents, each with
 * a handle (and connection) of its own, on one store whose keys all sit in one hash slot.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Cluster } from 'ioredis';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { RedisStore } from '../../../src/backends/redis/redis-store.js';
import { type Locks, openLocks } from '../../../src/locks.js';
import { describeRedis, type RedisCluster, startCluster } from './server.js';

let cluster: RedisCluster;
let admin: Cluster;
let dir: string;
const opened: Locks[] = [];

/** One store (a fresh prefix) and a handle on it for each agent named. */
async function agents<N extends string>(...names: N[]): Promise<{ prefix: string } & Record<N, Locks>> {
  const prefix = `cluster-${randomBytes(6).toString('hex')}`;
  const out = { prefix } as { prefix: string } & Record<N, Locks>;
  for (const name of names) {
    const locks = await openLocks({
      dir,
      env: {},
      identity: { agentId: name },
      backend: new RedisStore({
        url: cluster.url,
        prefix,
        timeoutMs: 5000,
        busyTimeoutMs: 15_000,
        staleMs: 7_200_000,
      }),
    });
    opened.push(locks);
    (out as Record<string, Locks>)[name] = locks;
  }
  return out;
}

/** Every key under the prefix, on whichever master holds it. */
async function keysOf(prefix: string): Promise<{ node: string; key: string }[]> {
  const found: { node: string; key: string }[] = [];
  for (const node of admin.nodes('master')) {
    const keys = await node.keys(`{${prefix}}:*`);
    for (const key of keys) found.push({ node: `${node.options.host}:${node.options.port}`, key });
  }
  return found;
}

describeRedis('the redis store on a Redis Cluster', () => {
  beforeAll(async () => {
    cluster = await startCluster(3);
    admin = new Cluster(cluster.ports.map((port) => ({ host: '127.0.0.1', port })));
    dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'alock-cluster-')));
    mkdirSync(path.join(dir, 'src', 'lib'), { recursive: true });
  });
  afterEach(async () => {
    for (const locks of opened.splice(0)) await locks.close();
  });
  afterAll(async () => {
    admin?.disconnect();
    await cluster?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('the cluster really has three masters sharing the slots', async () => {
    const info = await admin.cluster('INFO');
    expect(String(info)).toMatch(/cluster_state:ok/);
    expect(String(info)).toMatch(/cluster_size:3/);
    expect(admin.nodes('master')).toHaveLength(3);
  });

  it('an exclusive lock blocks another agent, on the same and on overlapping path scopes', async () => {
    const { A, B } = await agents('A', 'B');
    const wide = await A.acquire('src/**', { intent: 'refactor' });
    expect(wide.status).toBe('acquired');
    expect(wide.locks.map((l) => [l.scope, l.agent_id, l.mode])).toEqual([['src/**', 'A', 'exclusive']]);

    for (const scope of ['src/**', 'src/a.ts', 'src/lib/**', 'src/lib/deep/x.ts']) {
      const blocked = await B.acquire(scope);
      expect(blocked.status, scope).toBe('held');
      expect(blocked.conflicts.map((l) => [l.scope, l.agent_id, l.intent])).toEqual([
        ['src/**', 'A', 'refactor'],
      ]);
    }
    expect((await B.check('src/x.ts')).status).toBe('held');
    expect((await A.check('src/x.ts')).status).toBe('mine');
    expect((await A.acquire('src/a.ts')).status).toBe('already_mine');

    // Disjoint scopes are free; a narrow claim then blocks a wide one the other way round.
    expect((await B.acquire('docs/**')).status).toBe('acquired');
    expect((await B.acquire('lib/a.rb')).status).toBe('acquired');
    const narrowFirst = await A.acquire('lib/**');
    expect(narrowFirst.status).toBe('held');
    expect(narrowFirst.conflicts.map((l) => l.scope)).toEqual(['lib/a.rb']);
    expect((await A.acquire('lib/b.rb')).status).toBe('acquired');

    // All or nothing: one blocked scope leaves the free ones untaken.
    const mixed = await A.acquire(['@free', 'docs/readme.md']);
    expect(mixed.status).toBe('held');
    expect((await B.check('@free')).status).toBe('free');

    const listed = (await B.list()).locks.map((l) => `${l.agent_id} ${l.scope}`).sort();
    expect(listed).toEqual(['A lib/b.rb', 'A src/**', 'B docs/**', 'B lib/a.rb']);
    expect((await A.mine()).locks.map((l) => l.scope).sort()).toEqual(['lib/b.rb', 'src/**']);
  });

  it('shared locks coexist; an exclusive claim waits for every sharer', async () => {
    const { A, B, C } = await agents('A', 'B', 'C');
    expect((await A.acquire('@db', { shared: true })).status).toBe('acquired');
    expect((await B.acquire('@db', { shared: true })).status).toBe('acquired');
    expect((await C.check('@db', { shared: true })).status).toBe('free');
    const exclusive = await C.acquire('@db');
    expect(exclusive.status).toBe('held');
    expect(exclusive.conflicts.map((l) => l.agent_id).sort()).toEqual(['A', 'B']);
    expect((await A.release('@db')).status).toBe('released');
    const still = await C.acquire('@db');
    expect(still.status).toBe('held');
    expect(still.conflicts.map((l) => l.agent_id)).toEqual(['B']);
    expect((await B.release('@db')).status).toBe('released');
    expect((await C.acquire('@db')).status).toBe('acquired');
    // Now an exclusive holder blocks sharers.
    expect((await A.acquire('@db', { shared: true })).status).toBe('held');
  });

  it('release: only the holder (or its token) releases; then the scope is free for others', async () => {
    const { A, B } = await agents('A', 'B');
    const taken = await A.acquire('@merge');
    expect(taken.status).toBe('acquired');
    expect((await B.release('@merge')).status).toBe('refused');
    expect((await B.acquire('@merge')).status).toBe('held');
    expect((await B.release('@nothing')).status).toBe('not_found');
    expect((await A.release('@merge')).status).toBe('released');
    expect((await A.release('@merge')).status).toBe('not_found');
    const second = await B.acquire('@merge');
    expect(second.status).toBe('acquired');
    // The taker's token proves ownership to anyone.
    expect((await A.release('@merge', { token: second.locks[0]!.token! })).status).toBe('released');
    expect((await A.list()).locks).toEqual([]);

    expect((await A.acquire(['@x', '@y', 'src/a.ts'])).status).toBe('acquired');
    const all = await A.release({ all: true });
    expect(all.status).toBe('released');
    expect(all.locks).toHaveLength(3);
    expect((await B.list()).locks).toEqual([]);
  });

  it('renew extends a lease; an expired lease is not revived and frees the scope', async () => {
    const { A, B } = await agents('A', 'B');
    const leased = await A.acquire('@lease', { ttl: 60 });
    expect(leased.status).toBe('acquired');
    const first = Date.parse(leased.locks[0]!.expires_at!);
    const created = Date.parse(leased.locks[0]!.created_at);
    expect(first - created).toBe(60_000);

    const renewed = await A.renew('@lease', { ttl: 600 });
    expect(renewed.status).toBe('renewed');
    const later = Date.parse(renewed.locks[0]!.expires_at!);
    expect(later).toBeGreaterThan(first);
    expect(later - Date.parse(renewed.locks[0]!.updated_at)).toBe(600_000);
    expect((await B.renew('@lease', { ttl: 600 })).status).toBe('refused');
    // B's view (its own snapshot) has the new expiry.
    const seen = (await B.list()).locks.find((l) => l.scope === '@lease');
    expect(seen?.expires_at).toBe(renewed.locks[0]!.expires_at);

    const short = await A.acquire('@short', { ttl: 1 });
    expect(short.status).toBe('acquired');
    expect((await B.acquire('@short')).status).toBe('held');
    const expiry = Date.parse(short.locks[0]!.expires_at!);
    // Wait until the lease is over (server time: a little margin over the local clock).
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, expiry - Date.now()) + 300));
    expect((await A.renew('@short', { ttl: 60 })).status).toBe('expired');
    const taken = await B.acquire('@short');
    expect(taken.status).toBe('acquired');
    expect(taken.locks[0]!.fence).toBeGreaterThan(short.locks[0]!.fence);
  });

  it('break removes any lock and records who broke what', async () => {
    const { A, B } = await agents('A', 'B');
    const held = await A.acquire(['@deploy', 'src/**'], { intent: 'ship it' });
    expect(held.status).toBe('acquired');
    const broken = await B.breakLock('@deploy', { reason: 'A is stuck' });
    expect(broken.status).toBe('broken');
    expect(broken.locks.map((l) => [l.scope, l.agent_id])).toEqual([['@deploy', 'A']]);
    expect((await B.breakLock('@deploy')).status).toBe('not_found');
    expect((await A.list()).locks.map((l) => l.scope)).toEqual(['src/**']);
    expect((await A.release('@deploy')).status).toBe('not_found');
    expect((await B.acquire('@deploy')).status).toBe('acquired');

    const events = (await A.events(10)).filter((e) => e.type === 'broken');
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      type: 'broken',
      by: 'B',
      reason: 'A is stuck',
      scope: '@deploy',
      agent_id: 'A',
      fence: held.locks.find((l) => l.scope === '@deploy')!.fence,
    });
    // A second break is recorded after the first.
    expect((await A.breakLock('src/**')).status).toBe('broken');
    const both = (await B.events(10)).filter((e) => e.type === 'broken');
    expect(both.map((e) => [e.by, e.scope])).toEqual([
      ['B', '@deploy'],
      ['A', 'src/**'],
    ]);
  });

  it('racing agents: exactly one wins each round, and fences strictly increase across all grants', async () => {
    const { A, B, C } = await agents('A', 'B', 'C');
    const fences: number[] = [];
    const handles = [A, B, C];
    for (let round = 0; round < 10; round++) {
      const scope = `@race-${round}`;
      const outcomes = await Promise.all(handles.map((h) => h.acquire(scope)));
      const winners = outcomes.filter((o) => o.status === 'acquired');
      expect(winners, `round ${round}`).toHaveLength(1);
      expect(outcomes.filter((o) => o.status === 'held')).toHaveLength(2);
      fences.push(winners[0]!.locks[0]!.fence);
      // And releases interleave with fresh grants from the other handles.
      const winner = handles[outcomes.indexOf(winners[0]!)]!;
      expect((await winner.release(scope)).status).toBe('released');
      const next = await handles[(round + 1) % 3]!.acquire(`${scope}-again`);
      expect(next.status).toBe('acquired');
      fences.push(next.locks[0]!.fence);
    }
    for (let i = 1; i < fences.length; i++) expect(fences[i]!).toBeGreaterThan(fences[i - 1]!);
    // Fences follow the server clock in microseconds.
    expect(fences[0]!).toBeGreaterThan(Date.parse('2020-01-01') * 1000);
  });

  it('all keys of one store sit in one hash slot, on one master', async () => {
    const { prefix, A, B } = await agents('A', 'B');
    expect((await A.acquire('src/**')).status).toBe('acquired');
    expect((await B.breakLock('src/**', { reason: 'test' })).status).toBe('broken');
    expect((await B.acquire('@x')).status).toBe('acquired');

    const found = await keysOf(prefix);
    expect(found.map((f) => f.key).sort()).toEqual(
      ['changes', 'domains', 'history', 'store'].map((k) => `{${prefix}}:${k}`),
    );
    expect(new Set(found.map((f) => f.node)).size).toBe(1);
    const slots = new Set<number>();
    for (const { key } of found) slots.add(Number(await admin.cluster('KEYSLOT', key)));
    slots.add(Number(await admin.cluster('KEYSLOT', `{${prefix}}:changed`)));
    expect(slots.size).toBe(1);
    expect([...slots][0]).toBe(Number(await admin.cluster('KEYSLOT', prefix)));

    // Two stores whose prefixes hash to different slots still work side by side.
    let other = await agents('A');
    while (Number(await admin.cluster('KEYSLOT', other.prefix)) === [...slots][0]) other = await agents('A');
    expect((await other.A.acquire('src/**')).status).toBe('acquired');
    expect((await A.check('src/**')).status).toBe('free');
  });
});
