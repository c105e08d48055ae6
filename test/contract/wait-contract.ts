/**
 * Waiting in line and leases from code, on every backend: the same cases for memory, file and
 * Redis. Unlike the backend contract these run on the real clock (waits, renewals and ticket
 * leases are about time), so no case bounds how long anything takes except the hang guards.
 */
import { chmodSync, mkdirSync, mkdtempSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Backend } from '../../src/backends/backend.js';
import { type Locks, openLocks } from '../../src/locks.js';
import { LeaseLostError } from '../../src/store/lease.js';

export interface WaitStore {
  /** A new handle on the same store, as another process would open it. */
  connect(): Backend;
  cleanup(): Promise<void>;
}

/** A handle whose link to the store can be cut: a partition, with the store itself untouched. */
export function severable(backend: Backend): { backend: Backend; sever(): void } {
  let severed = false;
  const cut = () => Promise.reject(new Error('the store is unreachable (severed by the test)'));
  return {
    sever: () => {
      severed = true;
    },
    backend: {
      kind: backend.kind,
      location: backend.location,
      transact: (decide, clock) => (severed ? cut() : backend.transact(decide, clock)),
      watch: (listener) => backend.watch(listener),
      watchWaiter: (waiter, listener) => backend.watchWaiter(waiter, listener),
      events: (limit) => (severed ? cut() : backend.events(limit)),
      close: () => backend.close(),
    },
  };
}

/** Polls `check` until it holds; the test's timeout is the hang guard. */
async function until(check: () => Promise<boolean>): Promise<void> {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 10));
}

/** Resolves with the order in which the promises settle, by name. */
function settleOrder(named: Record<string, Promise<unknown>>): { order: string[]; all: Promise<void> } {
  const order: string[] = [];
  const all = Promise.all(Object.entries(named).map(([name, p]) => p.finally(() => order.push(name)))).then(
    () => {},
  );
  return { order, all };
}

export function describeWaitContract(name: string, makeStore: () => Promise<WaitStore>): void {
  describe(`waiting and leases: ${name}`, () => {
    let store: WaitStore;
    let tree: string;
    let opened: Locks[];

    beforeEach(async () => {
      store = await makeStore();
      tree = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'alock-wait-tree-')));
      mkdirSync(path.join(tree, 'src'), { recursive: true });
      opened = [];
    });

    afterEach(async () => {
      for (const locks of opened) await locks.close().catch(() => {});
      await store.cleanup();
      rmSync(tree, { recursive: true, force: true });
    });

    async function agent(
      agentId: string,
      options: { parent?: string; backend?: Backend; waitPollMs?: number } = {},
    ): Promise<Locks> {
      const locks = await openLocks({
        dir: tree,
        backend: options.backend ?? store.connect(),
        identity: { agentId, parentAgentId: options.parent ?? null },
        env: {},
        ...(options.waitPollMs !== undefined ? { waitPollMs: options.waitPollMs } : {}),
      });
      opened.push(locks);
      return locks;
    }

    const waiters = async (locks: Locks) => (await locks.list()).waiting.map((t) => t.agent_id);

    describe('acquire with wait', () => {
      it('answers timeout after the deadline, names the holder, and leaves no place in line', async () => {
        const a = await agent('A');
        const b = await agent('B');
        await a.acquire('@r');
        const result = await b.acquire('@r', { wait: 0.3 });
        expect(result.status).toBe('timeout');
        expect(result.locks).toEqual([]);
        expect(result.conflicts.map((l) => [l.scope, l.agent_id, l.status])).toEqual([['@r', 'A', 'active']]);
        expect(await waiters(b)).toEqual([]);
        expect((await b.list()).locks.map((l) => l.agent_id)).toEqual(['A']);
      });

      it('grants at once what is free, without taking a place in line', async () => {
        const a = await agent('A');
        const result = await a.acquire('@r', { wait: 30 });
        expect(result.status).toBe('acquired');
        expect(await waiters(a)).toEqual([]);
      });

      it('wakes on the release, by notification (its own poll is ten minutes away)', async () => {
        const a = await agent('A');
        const b = await agent('B', { waitPollMs: 600_000 });
        await a.acquire('@r');
        const waiting = b.acquire('@r', { wait: 600 });
        await until(async () => (await waiters(a)).includes('B'));
        await a.release('@r');
        const result = await waiting;
        expect(result.status).toBe('acquired');
        expect(result.locks[0]).toMatchObject({ scope: '@r', agent_id: 'B' });
        expect(await waiters(a)).toEqual([]);
      });

      it('grants conflicting waiters in arrival order, each woken by the hand-off to it', async () => {
        const a = await agent('A');
        await a.acquire('@r');
        const names = ['B', 'C', 'D', 'E'];
        // Ten minutes between polls: each grant must come from the commit that handed it over.
        const handles = await Promise.all(names.map((n) => agent(n, { waitPollMs: 600_000 })));
        const pending: Record<string, Promise<unknown>> = {};
        for (const [i, locks] of handles.entries()) {
          pending[names[i]!] = locks.acquire('@r', { wait: 60 }).then(async (r) => {
            expect(r.status).toBe('acquired');
            await locks.release('@r');
          });
          // Arrival order is ticket order: the next one starts only once this one is in line.
          await until(async () => (await waiters(a)).length === i + 1);
        }
        expect(await waiters(a)).toEqual(names);
        const { order, all } = settleOrder(pending);
        await a.release('@r');
        // The releaser asking again at once does not barge in ahead of the line.
        const barge = await a.acquire('@r');
        expect(barge.status).toBe('held');
        // B got the lock in A's releasing step; C, D and E are still in line ahead of A.
        expect(barge.conflicts.filter((l) => l.status === 'active').map((l) => l.agent_id)).toEqual(['B']);
        await all;
        expect(order).toEqual(names);
      });

      it('wakes a waiter whose files must be frozen when its way is free, to take the lock itself', async () => {
        const file = path.join(tree, 'src', 'frozen.ts');
        writeFileSync(file, 'x');
        chmodSync(file, 0o644);
        const a = await agent('A');
        const b = await agent('B', { waitPollMs: 600_000 });
        await a.acquire('src/frozen.ts');
        const waiting = b.acquire('src/frozen.ts', { wait: 600, enforce: true });
        await until(async () => (await waiters(a)).includes('B'));
        await a.release('src/frozen.ts');
        const result = await waiting;
        expect(result.status).toBe('acquired');
        expect(result.locks[0]).toMatchObject({ scope: 'src/frozen.ts', agent_id: 'B' });
        expect(statSync(file).mode & 0o222).toBe(0);
        await b.release('src/frozen.ts');
        expect(statSync(file).mode & 0o777).toBe(0o644);
      });

      it('lets a queued wide claim in ahead of narrow ones that came later, waiting or not', async () => {
        const a = await agent('A');
        const w = await agent('W');
        const b = await agent('B');
        await a.acquire('src/a.ts');
        const wide = w.acquire('src/**', { wait: 60, intent: 'refactor' });
        await until(async () => (await waiters(a)).includes('W'));

        // src/b.ts is free of locks, but W is in line for it: a newcomer does not jump the queue.
        const jump = await b.acquire('src/b.ts');
        expect(jump.status).toBe('held');
        expect(jump.conflicts.map((l) => [l.agent_id, l.status, l.scope])).toEqual([
          ['W', 'waiting', 'src/**'],
        ]);
        // check answers about locks, and nobody holds src/b.ts yet (the guards ask it of edits).
        expect((await b.check('src/b.ts')).status).toBe('free');
        // A scope outside W's claim is not held up.
        expect((await b.acquire('@other')).status).toBe('acquired');

        const narrow = b.acquire('src/b.ts', { wait: 60 });
        await until(async () => (await waiters(a)).length === 2);
        expect(await waiters(a)).toEqual(['W', 'B']);

        await a.release('src/a.ts');
        expect((await wide).status).toBe('acquired');
        // B is still in line behind W's lock now.
        expect(await waiters(a)).toEqual(['B']);
        await w.release('src/**');
        expect((await narrow).status).toBe('acquired');
      });

      it('never blocks its own agent, and keeps the family rules for tickets', async () => {
        const a = await agent('A');
        const w = await agent('W');
        const wOther = await agent('W');
        const child = await agent('WC', { parent: 'W' });
        const parent = await agent('P');
        const kid = await agent('K', { parent: 'P' });
        await a.acquire('src/a.ts');
        const wide = w.acquire('src/**', { wait: 60 });
        await until(async () => (await waiters(a)).includes('W'));
        // The waiter's own agent (another process with its id) and its child are not held up by its ticket.
        expect((await wOther.acquire('src/c.ts')).status).toBe('acquired');
        expect((await child.acquire('src/d.ts')).status).toBe('acquired');
        await wOther.release('src/c.ts');
        await child.release('src/d.ts');

        // A child's ticket blocks its parent, as its lock would.
        await a.acquire('docs/x/a.md');
        const kidWaits = kid.acquire('docs/x/**', { wait: 60 });
        await until(async () => (await waiters(a)).includes('K'));
        const blocked = await parent.acquire('docs/x/b.md');
        expect(blocked.status).toBe('held');
        expect(blocked.conflicts.map((l) => [l.agent_id, l.status])).toEqual([['K', 'waiting']]);

        await a.release({ all: true });
        expect((await wide).status).toBe('acquired');
        expect((await kidWaits).status).toBe('acquired');
      });

      it('serves shared waiters together once the exclusive lock goes', async () => {
        const a = await agent('A');
        const b = await agent('B');
        const c = await agent('C');
        await a.acquire('@db');
        const first = b.acquire('@db', { wait: 60, shared: true });
        const second = c.acquire('@db', { wait: 60, shared: true });
        await until(async () => (await waiters(a)).length === 2);
        await a.release('@db');
        expect((await first).status).toBe('acquired');
        expect((await second).status).toBe('acquired');
      });

      it('leaves no trace when its AbortSignal aborts the wait', async () => {
        const a = await agent('A');
        const b = await agent('B');
        const c = await agent('C');
        await a.acquire('@r');
        const controller = new AbortController();
        const waiting = b.acquire('@r', { wait: 60, signal: controller.signal });
        await until(async () => (await waiters(a)).includes('B'));
        controller.abort();
        await expect(waiting).rejects.toMatchObject({ name: 'AbortError' });
        expect(await waiters(a)).toEqual([]);
        // Nobody waits behind a request that is gone: C goes first once A lets go.
        const next = c.acquire('@r', { wait: 60 });
        await until(async () => (await waiters(a)).includes('C'));
        await a.release('@r');
        expect((await next).status).toBe('acquired');
        expect((await b.list()).locks.map((l) => l.agent_id)).toEqual(['C']);

        const already = new AbortController();
        already.abort();
        await expect(b.acquire('@r', { wait: 60, signal: already.signal })).rejects.toMatchObject({
          name: 'AbortError',
        });
        expect(await waiters(a)).toEqual([]);
      });

      it('lists the queue apart from the locks, in line order', async () => {
        const a = await agent('A');
        const b = await agent('B');
        await a.acquire('@r');
        const waiting = b.acquire('@r', { wait: 60, intent: 'next in line' });
        await until(async () => (await waiters(a)).includes('B'));
        const listed = await a.list();
        expect(listed.locks.map((l) => l.agent_id)).toEqual(['A']);
        expect(listed.waiting).toHaveLength(1);
        expect(listed.waiting[0]).toMatchObject({
          scope: '@r',
          agent_id: 'B',
          status: 'waiting',
          intent: 'next in line',
        });
        expect((await b.mine()).locks).toEqual([]);
        expect((await b.mine()).waiting.map((t) => t.agent_id)).toEqual(['B']);
        // Tickets are not locks: break and release do not touch them.
        expect((await a.release({ all: true })).locks.map((l) => l.scope)).toEqual(['@r']);
        expect((await waiting).status).toBe('acquired');
      });
    });

    describe('hold and withLock', () => {
      it('holds a lease with fence and token, renews it past its TTL, and releases it', async () => {
        const a = await agent('A');
        const b = await agent('B');
        const held = await a.hold('@job', { ttl: 1 });
        expect(held.status).toBe('acquired');
        const lease = held.lease!;
        expect(lease.fence).toBe(held.locks[0]!.fence);
        expect(lease.token).toBe(held.locks[0]!.token);
        expect(lease.owned).toBe(true);
        // Two TTLs later it is still held: it renewed itself.
        await new Promise((resolve) => setTimeout(resolve, 2200));
        expect(lease.signal.aborted).toBe(false);
        expect((await b.acquire('@job')).status).toBe('held');
        expect((await lease.release()).status).toBe('released');
        expect((await lease.release()).status).toBe('released');
        expect((await b.acquire('@job')).status).toBe('acquired');
      });

      it('aborts its signal as soon as another agent breaks the lock', async () => {
        const a = await agent('A');
        const b = await agent('B');
        const held = await a.hold('@job', { ttl: 60 });
        const lost = new Promise<unknown>((resolve) =>
          held.lease!.signal.addEventListener('abort', () => resolve(held.lease!.signal.reason)),
        );
        await b.breakLock('@job', { reason: 'test' });
        const reason = await lost;
        expect(reason).toBeInstanceOf(LeaseLostError);
        expect((reason as LeaseLostError).reason).toBe('broken');
      });

      it('aborts its signal before the lease expires when renewals fail', async () => {
        const link = severable(store.connect());
        const a = await agent('A', { backend: link.backend });
        const b = await agent('B');
        const held = await a.hold('@job', { ttl: 3 });
        const lost = new Promise<unknown>((resolve) =>
          held.lease!.signal.addEventListener('abort', () => resolve(held.lease!.signal.reason)),
        );
        link.sever();
        const reason = await lost;
        // At that moment the store still has the lease: the work stops before anyone else may start.
        const seen = await b.check('@job');
        expect(seen.status).toBe('held');
        expect(seen.conflicts[0]!.agent_id).toBe('A');
        expect(reason).toBeInstanceOf(LeaseLostError);
        expect((reason as LeaseLostError).reason).toBe('unreachable');
        // And it does lapse after: B gets it by waiting.
        expect((await b.acquire('@job', { wait: 30 })).status).toBe('acquired');
      });

      it('withLock runs the work under the lease and releases it after, also when the work throws', async () => {
        const a = await agent('A');
        const b = await agent('B');
        const done = await a.withLock('@job', { ttl: 30 }, async (signal, lease) => {
          expect(signal.aborted).toBe(false);
          expect((await b.check('@job')).status).toBe('held');
          return lease.fence;
        });
        expect(done.status).toBe('acquired');
        expect(done.value).toBe(done.locks[0]!.fence);
        expect((await b.check('@job')).status).toBe('free');

        await expect(
          a.withLock('@job', {}, async () => {
            throw new Error('work failed');
          }),
        ).rejects.toThrow('work failed');
        expect((await b.check('@job')).status).toBe('free');

        await b.acquire('@job');
        let ran = false;
        const refused = await a.withLock('@job', { wait: 0.2 }, async () => {
          ran = true;
        });
        expect(refused.status).toBe('timeout');
        expect(ran).toBe(false);
      });

      it('awaits a renewal in flight before it releases', async () => {
        const a = await agent('A');
        const b = await agent('B');
        const held = await a.hold('@job', { ttl: 30 });
        const renewal = held.lease!.renew();
        const released = await held.lease!.release();
        expect((await renewal).status).toBe('renewed');
        expect(released.status).toBe('released');
        expect((await b.list()).locks).toEqual([]);
      });

      it('holds what the caller already holds without releasing it', async () => {
        const a = await agent('A');
        const b = await agent('B');
        await a.acquire('src/**');
        const inner = await a.hold('src/a.ts');
        expect(inner.status).toBe('already_mine');
        expect(inner.lease!.owned).toBe(false);
        await inner.lease!.release();
        expect((await b.check('src/a.ts')).status).toBe('held');
      });
    });
  });
}
