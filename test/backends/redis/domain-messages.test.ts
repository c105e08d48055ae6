/**
 * Change messages per conflict domain (issue 19): a lease listens on its locks' own domains, so
 * commits elsewhere in the store deliver it nothing, while a commit that changes one of its locks
 * still reaches it at once (a break shows long before the next renewal). A listener of the whole
 * store (`alock watch`, the dashboard) and an older client's subscription still hear every commit.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import type { Client } from '../../../src/backends/redis/connection.js';
import { RedisStore } from '../../../src/backends/redis/redis-store.js';
import { type Locks, openLocks } from '../../../src/locks.js';
import { backendOf } from '../../../src/store/store.js';
import { describeRedis, type RedisServer, startRedis } from './server.js';

describeRedis('change messages per conflict domain on the redis store', () => {
  let server: RedisServer;
  let tree: string;
  let opened: Locks[] = [];
  let prefix: string;
  let others: Redis[] = [];

  beforeAll(async () => {
    server = await startRedis();
    tree = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'alock-redis-messages-')));
  });
  afterAll(async () => {
    await server?.stop();
    rmSync(tree, { recursive: true, force: true });
  });
  afterEach(async () => {
    for (const locks of opened) await locks.close();
    for (const client of others) client.disconnect();
    opened = [];
    others = [];
  });

  async function agent(agentId: string): Promise<Locks> {
    const backend = new RedisStore({
      url: server.url,
      prefix,
      timeoutMs: 5000,
      busyTimeoutMs: 15_000,
      staleMs: 7_200_000,
    });
    const locks = await openLocks({ dir: tree, backend, identity: { agentId }, env: {} });
    opened.push(locks);
    return locks;
  }

  /** Counts the pub/sub messages a handle's subscriber connection is delivered, by channel. */
  function deliveries(locks: Locks): Map<string, number> {
    const store = backendOf(locks.store) as unknown as { subscriber: Client | null };
    const counts = new Map<string, number>();
    if (store.subscriber === null) throw new Error('this handle does not listen');
    store.subscriber.on('message', (channel) => counts.set(channel, (counts.get(channel) ?? 0) + 1));
    return counts;
  }
  const total = (counts: Map<string, number>) => [...counts.values()].reduce((a, b) => a + b, 0);

  it('a lease hears no commit on other domains, and every one on its own', async () => {
    prefix = `messages-${randomBytes(6).toString('hex')}`;
    const [a, b] = [await agent('A'), await agent('B')];
    // A long lease: its next renewal (a third of the TTL) comes long after the test's time is up, so
    // only a message can tell it of the break below.
    const held = await a.hold(['@mine', 'src/**'], { ttl: 600 });
    expect(held.status).toBe('acquired');
    const heard = deliveries(a);
    // Another resource, files in other folders.
    for (let i = 0; i < 5; i += 1) {
      for (const scope of ['@other', 'lib/b.ts', 'docs/**']) {
        expect((await b.acquire(scope)).status).toBe('acquired');
        expect((await b.release(scope)).status).toBe('released');
      }
    }
    // Its own commits (a renewal) reach it on its domains' channels. One subscriber connection
    // delivers in publish order: once the renewal's messages are in, any message of the commits
    // above would be too.
    expect((await held.lease!.renew()).status).toBe('renewed');
    await expect.poll(() => total(heard), { timeout: 30_000 }).toBe(2);
    expect([...heard.keys()].sort()).toEqual([`{${prefix}}:changed:/src`, `{${prefix}}:changed:@mine`]);
    // Someone else's commit that changes one of its locks reaches it: the lease is lost now, not at
    // its next renewal 200 s on.
    const lost = new Promise((resolve) => held.lease!.signal.addEventListener('abort', resolve));
    expect((await b.breakLock('@mine', { reason: 'test' })).status).toBe('broken');
    await lost;
    expect(heard.get(`{${prefix}}:changed:@mine`)).toBe(2);
  });

  it('a watcher of the whole store, and an older client on the store channel, hear every commit', async () => {
    prefix = `messages-${randomBytes(6).toString('hex')}`;
    const [a, b] = [await agent('A'), await agent('B')];
    const told: (readonly string[] | null)[] = [];
    await a.store.watch((touched) => told.push(touched));
    // An older agent-lock subscribes to the store's channel and renews #watch with its own script.
    const old = new Redis(server.url);
    others.push(old);
    const oldHeard: string[] = [];
    old.on('message', (_channel, message) => oldHeard.push(message));
    await old.subscribe(`{${prefix}}:changed`);
    // And a lease elsewhere listens on its domains at the same time.
    const held = await a.hold('@leased', { ttl: 60 });
    // The hold's own commit reaches the old subscriber; from here on, count afresh.
    await expect.poll(() => oldHeard.length, { timeout: 30_000 }).toBeGreaterThan(0);
    await expect.poll(() => told.length, { timeout: 30_000 }).toBeGreaterThan(0);
    told.length = 0;
    oldHeard.length = 0;
    for (const scope of ['@x', 'src/y.ts']) {
      expect((await b.acquire(scope)).status).toBe('acquired');
      expect((await b.release(scope)).status).toBe('released');
    }
    await expect.poll(() => told.length, { timeout: 30_000 }).toBe(4);
    await expect.poll(() => oldHeard.length, { timeout: 30_000 }).toBe(4);
    await held.lease!.release();
  });

  it('a channel nobody listens on any more is left, and commits stop publishing to it', async () => {
    prefix = `messages-${randomBytes(6).toString('hex')}`;
    const a = await agent('A');
    const admin = new Redis(server.url);
    others.push(admin);
    const held = await a.hold('@brief', { ttl: 60 });
    const channel = `{${prefix}}:changed:@brief`;
    const numsub = async () => (await admin.pubsub('NUMSUB', channel))[1];
    expect(await numsub()).toBe(1);
    await held.lease!.release();
    await expect.poll(numsub, { timeout: 30_000 }).toBe(0);
  });
});
