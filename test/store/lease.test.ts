/**
 * src/store/lease.ts through the library (`hold`, `withLock`): what a caller can count on from a lease on
 * the memory and file stores. Renewals, the deadline, a lease lost behind its back, fences and
 * release. (Waiting for a lease, its self-renewal past its TTL, a break and a partition are in the
 * wait contract, on every backend.)
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Backend } from '../../src/backends/backend.js';
import { type Locks, openLocks } from '../../src/locks.js';
import { LeaseLostError } from '../../src/store/lease.js';
import { fileStore, memoryStore, type TestStore } from '../contract/stores.js';

/** Resolves with the signal's reason once it aborts. */
const lostReason = (signal: AbortSignal) =>
  new Promise<unknown>((resolve) => {
    if (signal.aborted) resolve(signal.reason);
    else signal.addEventListener('abort', () => resolve(signal.reason), { once: true });
  });

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each([
  ['memory', memoryStore],
  ['file', fileStore],
] as const)('leases on the %s store', (_name, makeStore) => {
  let store: TestStore;
  let tree: string;
  let opened: Locks[];

  beforeEach(async () => {
    store = await makeStore();
    tree = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'alock-lease-tree-')));
    mkdirSync(path.join(tree, 'src'), { recursive: true });
    opened = [];
  });

  afterEach(async () => {
    for (const locks of opened) await locks.close().catch(() => {});
    await store.cleanup();
    rmSync(tree, { recursive: true, force: true });
  });

  async function agent(agentId: string, options: { clock?: () => number; backend?: Backend } = {}) {
    const locks = await openLocks({
      dir: tree,
      backend: options.backend ?? store.connect(),
      identity: { agentId },
      env: {},
      ...(options.clock ? { clock: options.clock } : {}),
    });
    opened.push(locks);
    return locks;
  }

  describe('renew', () => {
    it('sets the deadline a margin before the TTL: a quarter of it, at most 5 s', async () => {
      const a = await agent('A');
      const before = Date.now();
      const short = (await a.hold('@short', { ttl: 8 })).lease!;
      const long = (await a.hold('@long', { ttl: 60 })).lease!;
      const after = Date.now();
      expect(short.ttl).toBe(8);
      expect(short.deadline).toBeGreaterThanOrEqual(before + 8000 - 2000);
      expect(short.deadline).toBeLessThanOrEqual(after + 8000 - 2000);
      expect(long.deadline).toBeGreaterThanOrEqual(before + 60_000 - 5000);
      expect(long.deadline).toBeLessThanOrEqual(after + 60_000 - 5000);
      await short.release();
      await long.release();
    });

    it('renews on demand: the store moves the expiry and the deadline moves with it', async () => {
      const a = await agent('A');
      const held = await a.hold('@job', { ttl: 30 });
      const lease = held.lease!;
      const firstDeadline = lease.deadline!;
      const firstExpiry = Date.parse(held.locks[0]!.expires_at!);
      await sleep(30);
      const renewed = await lease.renew();
      expect(renewed.status).toBe('renewed');
      expect(renewed.locks.map((l) => l.scope)).toEqual(['@job']);
      expect(lease.deadline!).toBeGreaterThan(firstDeadline);
      expect(Date.parse(renewed.locks[0]!.expires_at!)).toBeGreaterThan(firstExpiry);
      expect(lease.signal.aborted).toBe(false);
      await lease.release();
    });

    it('a lock without a TTL is no lease: no deadline, and it stays until released', async () => {
      const a = await agent('A');
      const b = await agent('B');
      await a.acquire('src/**');
      // Already held without a TTL: the lease takes the lock's own (none), so it has no deadline.
      const inner = (await a.hold('src/a.ts')).lease!;
      expect(inner.ttl).toBeNull();
      expect(inner.deadline).toBeNull();
      expect((await b.check('src/a.ts')).status).toBe('held');
      await inner.release();
    });
  });

  describe('a lost lease', () => {
    it('aborts with "expired" when a renewal finds the lease already lapsed, and tells onLost once', async () => {
      let now = Date.now();
      const a = await agent('A', { clock: () => now });
      const told: LeaseLostError[] = [];
      const lease = (await a.hold('@job', { ttl: 1, onLost: (error) => told.push(error) })).lease!;
      // The store's clock runs past the TTL before the renewal arrives (a sleeping machine, say).
      now += 10_000;
      const renewed = await lease.renew();
      expect(renewed.status).toBe('expired');
      const reason = await lostReason(lease.signal);
      expect(reason).toBeInstanceOf(LeaseLostError);
      expect((reason as LeaseLostError).reason).toBe('expired');
      expect((reason as LeaseLostError).code).toBe('E_LEASE_LOST');
      expect((reason as LeaseLostError).message).toContain('@job');
      // A second failure changes nothing: the loss is reported once.
      await lease.renew().catch(() => {});
      expect(told).toEqual([reason]);
    });

    it('aborts with "broken" when its locks are released behind its back', async () => {
      const a = await agent('A');
      const lease = (await a.hold('@job', { ttl: 60 })).lease!;
      const lost = lostReason(lease.signal);
      // The same agent lets go through the plain verb, not through the lease: the lease is gone.
      expect((await a.release('@job')).status).toBe('released');
      const reason = (await lost) as LeaseLostError;
      expect(reason).toBeInstanceOf(LeaseLostError);
      expect(reason.reason).toBe('broken');
    });

    it('withLock hands the work a signal that aborts when the lease is lost', async () => {
      const a = await agent('A');
      const b = await agent('B');
      const result = await a.withLock('@job', { ttl: 60 }, async (signal) => {
        await b.breakLock('@job', { reason: 'test' });
        const reason = (await lostReason(signal)) as LeaseLostError;
        return reason.reason;
      });
      expect(result.status).toBe('acquired');
      expect(result.value).toBe('broken');
    });
  });

  describe('the fencing token', () => {
    it('names each scope with its own fence and token, the first one as the lease', async () => {
      const a = await agent('A');
      const held = await a.hold(['@one', '@two'], { ttl: 30 });
      const lease = held.lease!;
      expect(lease.fences).toEqual(held.locks.map((l) => l.fence));
      expect(lease.tokens).toEqual(held.locks.map((l) => l.token));
      expect(lease.fence).toBe(lease.fences[0]);
      expect(lease.token).toBe(lease.tokens[0]);
      expect(new Set(lease.tokens).size).toBe(2);
      await lease.release();
    });

    it('grows with every grant, so a fenced resource can refuse the holder of a lost lease', async () => {
      const a = await agent('A');
      const b = await agent('B');
      const first = (await a.hold('@db', { ttl: 60 })).lease!;
      const lost = lostReason(first.signal);
      await b.breakLock('@db', { reason: 'stuck' });
      await lost;
      const second = (await b.hold('@db', { ttl: 60 })).lease!;
      expect(second.fence).toBeGreaterThan(first.fence);
      expect(second.token).not.toBe(first.token);
      await second.release();
      const third = (await a.hold('@db', { ttl: 60 })).lease!;
      expect(third.fence).toBeGreaterThan(second.fence);
      await third.release();
    });
  });

  describe('release', () => {
    it('releases once, answers every later call alike, and never reports the end as a loss', async () => {
      const a = await agent('A');
      const b = await agent('B');
      const told: unknown[] = [];
      const lease = (await a.hold('@job', { ttl: 30, onLost: (error) => told.push(error) })).lease!;
      const [one, two] = await Promise.all([lease.release(), lease.release()]);
      expect(one.status).toBe('released');
      expect(two).toBe(one);
      expect((await b.acquire('@job')).status).toBe('acquired');
      // Someone else holds it now; the released lease neither notices nor renews.
      await sleep(150);
      expect(lease.signal.aborted).toBe(false);
      expect(told).toEqual([]);
      expect((await b.list()).locks.map((l) => l.agent_id)).toEqual(['B']);
    });

    it('is what disposing of the lease does', async () => {
      const a = await agent('A');
      const b = await agent('B');
      const lease = (await a.hold('@job', { ttl: 30 })).lease!;
      await lease[Symbol.asyncDispose]();
      expect((await b.check('@job')).status).toBe('free');
    });

    it('leaves locks the caller already held to the caller', async () => {
      const a = await agent('A');
      const b = await agent('B');
      await a.acquire('@job', { ttl: 30 });
      const held = await a.hold('@job', { ttl: 30 });
      expect(held.status).toBe('already_mine');
      const lease = held.lease!;
      expect(lease.owned).toBe(false);
      expect((await lease.release()).locks).toEqual([]);
      expect((await b.check('@job')).status).toBe('held');
    });
  });
});
