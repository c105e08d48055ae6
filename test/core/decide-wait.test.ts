/**
 * The queue as pure decisions: tickets keep arrival order, lapse with their lease or their dead
 * waiter, and are never locks. No store, no disk, no real time.
 */
import { describe, expect, it } from 'vitest';
import {
  type AcquireRequest,
  type Caller,
  type Decided,
  type DecisionContext,
  decideAcquire,
  decideBreak,
  decideCheck,
  decideLeave,
  decideList,
  decideNote,
  decideRelease,
  type Target,
  type Tombstone,
  type WaitTicket,
  waiterKey,
} from '../../src/core/decide.js';
import type { LockRecord } from '../../src/core/lock.js';
import { applyChanges } from '../../src/backends/shared/state.js';
import { scopeFromPattern } from '../../src/core/scope.js';

const HOST = 'host-1';
const dead = new Set<number>();
let seq = 0;

function ctx(agentId: string, now: number): DecisionContext {
  const caller: Caller = { agentId, parentAgentId: null, holder: { host: HOST, pid: 1, started: 's' } };
  return {
    now,
    caller,
    staleMs: 3_600_000,
    processAlive: (pid) => !dead.has(pid),
    newLock: () => {
      seq += 1;
      return { id: `lk_${seq}`, token: `t${seq}`, tokenHash: `h${seq}` };
    },
    hashToken: (t) => `hash:${t}`,
  };
}

const target = (pattern: string): Target => ({ scope: scopeFromPattern(pattern, 'resource'), tree: null });

function store() {
  const state = {
    locks: new Map<string, LockRecord>(),
    fence: 0,
    tombstones: [] as Tombstone[],
  };
  const apply = <T>(d: Decided<T>): T => {
    applyChanges(state, d.changes);
    return d.result;
  };
  return { state, apply };
}

const req = (pattern: string, wait?: WaitTicket): AcquireRequest => ({
  targets: [target(pattern)],
  mode: 'exclusive',
  intent: null,
  ttlSeconds: null,
  ...(wait ? { wait } : {}),
});
const ticket = (hash: string, pid: number, last = false): WaitTicket => ({
  hash,
  secret: `secret-of-${hash}`,
  waiter: { host: HOST, pid, started: 's' },
  ttlMs: 10_000,
  last,
});

describe('waiting tickets', () => {
  it('hands the lock to the first in line in the releasing step, with the holder it asked for', () => {
    const { state, apply } = store();
    apply(decideAcquire(state, ctx('A', 0), req('@r')));
    apply(decideAcquire(state, ctx('B', 0), req('@r', ticket('b', 50))));
    apply(decideAcquire(state, ctx('C', 0), req('@r', ticket('c', 51))));
    apply(decideRelease(state, ctx('A', 0), { targets: [target('@r')], token: null }));
    const listed = apply(decideList(state, ctx('X', 0), { mineOnly: false }));
    expect(listed.locks.map((l) => [l.agent_id, l.pid])).toEqual([['B', ctx('B', 0).caller.holder.pid]]);
    expect(listed.waiting.map((l) => l.agent_id)).toEqual(['C']);
    // A waiter that was interrupted before it looked leaves no lock behind.
    apply(decideLeave(state, ctx('B', 0), { hash: 'b' }));
    const after = apply(decideList(state, ctx('X', 0), { mineOnly: false }));
    expect(after.locks.map((l) => l.agent_id)).toEqual(['C']);
  });

  it('names in its changes only the waiters it concerns: the one handed the lock, or one that must decide', () => {
    const { state, apply } = store();
    apply(decideAcquire(state, ctx('A', 0), req('@r')));
    const queued = decideAcquire(state, ctx('B', 0), req('@r', ticket('b', 70)));
    // Taking a place in line frees nobody's way.
    expect(queued.changes.wake).toBeUndefined();
    apply(queued);
    apply(decideAcquire(state, ctx('C', 0), req('@r', ticket('c', 71))));
    const released = decideRelease(state, ctx('A', 0), { targets: [target('@r')], token: null });
    // B is handed the lock; C, still behind it, is not told.
    expect(released.changes.wake).toEqual([waiterKey({ host: HOST, pid: 70, started: 's' })]);
    apply(released);
    // A request with files to freeze is not handed the lock, but is woken to take it itself.
    const freezing: AcquireRequest = { ...req('@s', ticket('f', 72)), freeze: [[]] };
    apply(decideAcquire(state, ctx('A', 0), req('@s')));
    apply(decideAcquire(state, ctx('F', 0), freezing));
    const freed = decideRelease(state, ctx('A', 0), { targets: [target('@s')], token: null });
    expect(freed.changes.wake).toEqual([waiterKey({ host: HOST, pid: 72, started: 's' })]);
    apply(freed);
    expect(apply(decideList(state, ctx('X', 0), { mineOnly: false })).waiting.map((t) => t.agent_id)).toEqual(
      ['C', 'F'],
    );
    expect(apply(decideAcquire(state, ctx('F', 0), freezing)).status).toBe('acquired');
  });

  it('names the taker of a lock it queues first behind, once, so that a store can bring the taker up to date', () => {
    const { state, apply } = store();
    const key = (pid: number) => waiterKey({ host: HOST, pid, started: 's' });
    // Taken by a waiting request: the lock names the waiting process.
    const taken = decideAcquire(state, ctx('A', 0), req('@r', ticket('a', 60)));
    expect(taken.changes.put[0]!.taker).toBe(key(60));
    apply(taken);
    const queued = decideAcquire(state, ctx('B', 0), req('@r', ticket('b', 61)));
    expect(queued.changes.inform).toEqual([key(60)]);
    apply(queued);
    // Behind another request, nobody: the release hands over to that one, and a store that rebases
    // commits it without having seen this ticket.
    expect(decideAcquire(state, ctx('C', 0), req('@r', ticket('c', 59))).changes.inform).toBeUndefined();
    // A refreshed place in line, or one behind a lock taken without waiting, informs nobody.
    expect(decideAcquire(state, ctx('B', 9_000), req('@r', ticket('b', 61))).changes.inform).toBeUndefined();
    apply(decideAcquire(state, ctx('A', 0), req('@s')));
    expect(decideAcquire(state, ctx('C', 0), req('@s', ticket('c', 62))).changes.inform).toBeUndefined();
    // Handed over in line, the lock names the process that waited for it.
    const released = decideRelease(state, ctx('A', 0), { targets: [target('@r')], token: null });
    const handed = released.changes.put.find((r) => r.status === 'active')!;
    expect([handed.agent_id, handed.taker]).toEqual(['B', key(61)]);
  });

  it('says when a step stays right on a store that gained new tickets since its snapshot (rebase)', () => {
    const { state, apply } = store();
    const path = (pattern: string): Target => ({ scope: scopeFromPattern(pattern, 'path'), tree: 't' });
    const release = (agent: string, t: Target) =>
      decideRelease(state, ctx(agent, 0), { targets: [t], token: null });
    // Handing the freed lock to an exclusive request on its very scope: a later ticket waits on as
    // before, unless it is of the new holder (or its child), whom the step names.
    apply(decideAcquire(state, ctx('A', 0), req('@r')));
    apply(decideAcquire(state, ctx('B', 0), req('@r', ticket('b', 61))));
    const handed = release('A', target('@r'));
    expect(handed.changes.rebase).toEqual(['B']);
    apply(handed);
    // Freeing a lock nobody waits for: a later ticket may be free now, so no.
    expect(release('B', target('@r')).changes.rebase).toBeUndefined();
    // Handing over to shared requests: a later shared ticket would join them, so no.
    apply(decideAcquire(state, ctx('A', 0), req('@s')));
    for (const [agent, pid] of [
      ['C', 62],
      ['D', 63],
    ] as const)
      apply(decideAcquire(state, ctx(agent, 0), { ...req('@s', ticket(agent, pid)), mode: 'shared' }));
    const sharedHand = release('A', target('@s'));
    expect(sharedHand.changes.put.filter((r) => r.status === 'active')).toHaveLength(2);
    expect(sharedHand.changes.rebase).toBeUndefined();
    // Handing over part of the freed scope: a later ticket for the rest would be free, so no.
    const wide = { targets: [path('src/**')], mode: 'exclusive' as const, intent: null, ttlSeconds: null };
    apply(decideAcquire(state, ctx('A', 0), wide));
    apply(decideAcquire(state, ctx('E', 0), { ...wide, targets: [path('src/a.ts')], wait: ticket('e', 64) }));
    const narrow = release('A', path('src/**'));
    expect(narrow.changes.put.map((r) => [r.agent_id, r.scope])).toEqual([['E', 'src/a.ts']]);
    expect(narrow.changes.rebase).toBeUndefined();
    // Reaping a dead waiter's ticket on the way: the line itself changed, so no.
    apply(decideAcquire(state, ctx('A', 0), req('@q')));
    apply(decideAcquire(state, ctx('F', 0), req('@q', ticket('f', 65))));
    apply(decideAcquire(state, ctx('G', 0), req('@q', ticket('g', 66))));
    dead.add(65);
    const reaped = release('A', target('@q'));
    expect(reaped.changes.put.map((r) => r.agent_id)).toEqual(['G']);
    expect(reaped.changes.rebase).toBeUndefined();
    dead.delete(65);
    // A step that grants a lock of its own is never one.
    expect(decideAcquire(state, ctx('H', 0), req('@free')).changes.rebase).toBeUndefined();
    // Nor a look whose reaping hands a lock over (its holder died): its answer is the snapshot's.
    const mortal = {
      ...ctx('J', 0),
      caller: { ...ctx('J', 0).caller, holder: { host: HOST, pid: 67, started: 's' } },
    };
    apply(decideAcquire(state, mortal, req('@dies')));
    apply(decideAcquire(state, ctx('K', 0), req('@dies', ticket('k', 68))));
    dead.add(67);
    const look = decideList(state, ctx('X', 0), { mineOnly: false });
    expect(look.changes.put.map((r) => [r.agent_id, r.status])).toEqual([['K', 'active']]);
    expect(look.changes.rebase).toBeUndefined();
    dead.delete(67);
  });

  it('does not hand a lock to a waiter whose process died', () => {
    const { state, apply } = store();
    apply(decideAcquire(state, ctx('A', 0), req('@r')));
    apply(decideAcquire(state, ctx('B', 0), req('@r', ticket('b', 60))));
    dead.add(60);
    apply(decideRelease(state, ctx('A', 0), { targets: [target('@r')], token: null }));
    const listed = apply(decideList(state, ctx('X', 0), { mineOnly: false }));
    expect(listed.locks).toEqual([]);
    expect(listed.waiting).toEqual([]);
  });

  it('queues a refused waiter as a ticket that is listed apart from the locks', () => {
    const { state, apply } = store();
    expect(apply(decideAcquire(state, ctx('A', 0), req('@r'))).status).toBe('acquired');
    expect(apply(decideAcquire(state, ctx('B', 0), req('@r', ticket('b', 10)))).status).toBe('held');
    const listed = apply(decideList(state, ctx('C', 0), { mineOnly: false }));
    expect(listed.locks.map((l) => l.agent_id)).toEqual(['A']);
    expect(listed.waiting.map((l) => [l.agent_id, l.status])).toEqual([['B', 'waiting']]);
    // A ticket consumes a number from the fence counter: later grants still get larger fences.
    expect(listed.waiting[0]!.fence).toBeGreaterThan(listed.locks[0]!.fence);
  });

  it('serves an earlier ticket first, and answers timeout (leaving the line) on the last attempt', () => {
    const { state, apply } = store();
    apply(decideAcquire(state, ctx('A', 0), req('@r')));
    apply(decideAcquire(state, ctx('B', 0), req('@r', ticket('b', 10))));
    apply(decideAcquire(state, ctx('C', 0), req('@r', ticket('c', 11))));
    apply(decideBreak(state, ctx('A', 0), { targets: [target('@r')], ids: [], reason: null }));
    // The break handed the lock to B, first in line, in the same step: C is still behind.
    const c = apply(decideAcquire(state, ctx('C', 0), req('@r', ticket('c', 11, true))));
    expect(c.status).toBe('timeout');
    expect(c.conflicts.map((l) => [l.agent_id, l.status])).toEqual([['B', 'active']]);
    // B finds its lock, with its ticket secret as token.
    const b = apply(decideAcquire(state, ctx('B', 0), req('@r', ticket('b', 10))));
    expect(b.status).toBe('acquired');
    expect(b.locks.map((l) => [l.agent_id, l.token])).toEqual([['B', 'secret-of-b']]);
    expect(apply(decideList(state, ctx('X', 0), { mineOnly: false })).waiting).toEqual([]);
  });

  it('wakes a waiter when the lock in its way becomes an orphan (its holder died, leaving notes)', () => {
    const { state, apply } = store();
    const holderA = {
      ...ctx('A', 0),
      caller: { agentId: 'A', parentAgentId: null, holder: { host: HOST, pid: 80, started: 's' } },
    };
    apply(decideAcquire(state, holderA, req('@r')));
    apply(decideNote(state, holderA, { target: target('@r'), text: 'half done', token: null }));
    apply(decideAcquire(state, ctx('B', 0), req('@r', ticket('b', 81))));
    dead.add(80);
    // Any decision reaps the dead holder's lock into an orphan: nothing is removed, yet B must hear.
    const unrelated = decideAcquire(state, ctx('C', 0), req('@other'));
    expect(unrelated.changes.wake).toEqual([waiterKey({ host: HOST, pid: 81, started: 's' })]);
    apply(unrelated);
    expect(apply(decideAcquire(state, ctx('B', 0), req('@r', ticket('b', 81)))).status).toBe('interrupted');
  });

  it('reaps a ticket whose waiting process died, and one whose lease lapsed', () => {
    const { state, apply } = store();
    apply(decideAcquire(state, ctx('A', 0), req('@r')));
    apply(decideAcquire(state, ctx('B', 0), req('@r', ticket('b', 20))));
    apply(
      decideAcquire(
        state,
        ctx('C', 0),
        req('@r', { ...ticket('c', 21), waiter: { host: 'elsewhere', pid: 5, started: 's' } }),
      ),
    );
    dead.add(20);
    const listed = apply(decideList(state, ctx('X', 1000), { mineOnly: false }));
    expect(listed.waiting.map((l) => l.agent_id)).toEqual(['C']);
    // Another host's waiter is judged by its ticket's lease.
    expect(apply(decideList(state, ctx('X', 10_000), { mineOnly: false })).waiting).toEqual([]);
  });

  it('refreshes a ticket only when half its lease is gone', () => {
    const { state, apply } = store();
    apply(decideAcquire(state, ctx('A', 0), req('@r')));
    apply(decideAcquire(state, ctx('B', 0), req('@r', ticket('b', 30))));
    const early = decideAcquire(state, ctx('B', 1000), req('@r', ticket('b', 30)));
    expect(early.changes.put).toEqual([]);
    const late = decideAcquire(state, ctx('B', 6000), req('@r', ticket('b', 30)));
    expect(late.changes.put.map((r) => r.expires_at)).toEqual([16_000]);
  });

  it('is not broken by break: the request behind the broken lock is served', () => {
    const { state, apply } = store();
    apply(decideAcquire(state, ctx('A', 0), req('@r')));
    apply(decideAcquire(state, ctx('B', 0), req('@r', ticket('b', 40))));
    const broken = apply(decideBreak(state, ctx('X', 0), { targets: [target('@r')], ids: [], reason: null }));
    expect(broken.locks.map((l) => l.agent_id)).toEqual(['A']);
    // The ticket was not broken: B's request was served, in line, by the break.
    const listed = apply(decideList(state, ctx('X', 0), { mineOnly: false }));
    expect(listed.waiting).toEqual([]);
    expect(listed.locks.map((l) => [l.agent_id, l.scope, l.status])).toEqual([['B', '@r', 'active']]);
  });
});

describe('a ticket left in line with no lock before it', () => {
  // A request with files to freeze is not handed the lock when its way frees: its ticket stays in
  // line, with no lock on the scope, until its waiter comes back.
  function setUp() {
    const { state, apply } = store();
    apply(decideAcquire(state, ctx('A', 0), req('@r')));
    apply(decideAcquire(state, ctx('F', 0), { ...req('@r', ticket('f', 90)), freeze: [[]] }));
    apply(decideRelease(state, ctx('A', 0), { targets: [target('@r')], token: null }));
    return { state, apply };
  }

  it('holds nothing for a look, but stands in the way of a request that does not wait', () => {
    const { state, apply } = setUp();
    const check = apply(decideCheck(state, ctx('C', 0), { targets: [target('@r')], mode: 'exclusive' }));
    expect(check.status).toBe('free');
    const acquired = apply(decideAcquire(state, ctx('C', 0), req('@r')));
    expect([acquired.status, acquired.conflicts.map((l) => l.agent_id)]).toEqual(['held', ['F']]);
  });

  it('is no lock to list, release or break', () => {
    const { state, apply } = setUp();
    const listed = apply(decideList(state, ctx('F', 0), { mineOnly: true }));
    expect([listed.locks.length, listed.waiting.map((l) => l.agent_id)]).toEqual([0, ['F']]);
    expect(apply(decideRelease(state, ctx('F', 0), { targets: 'all', token: null })).locks).toEqual([]);
    expect(apply(decideRelease(state, ctx('F', 0), { targets: [target('@r')], token: null })).status).toBe(
      'not_found',
    );
    expect(
      apply(decideBreak(state, ctx('X', 0), { targets: [target('@r')], ids: [], reason: null })).status,
    ).toBe('not_found');
    expect(
      apply(decideNote(state, ctx('F', 0), { target: target('@r'), text: 'hi', token: null })).status,
    ).toBe('not_found');
    // Still in line, and its waiter takes the lock on its next attempt.
    expect(apply(decideList(state, ctx('X', 0), { mineOnly: false })).waiting.length).toBe(1);
  });
});
