/**
 * The worktree rule as pure decisions: whether two locks are in different worktrees of one
 * repository is read from the records alone (their checkout and host). No store, no disk, no git.
 */
import { describe, expect, it } from 'vitest';
import { applyChanges } from '../../src/backends/shared/state.js';
import {
  type AcquireRequest,
  type Caller,
  type DecisionContext,
  decideAcquire,
  decideCheck,
  type Target,
  type Tombstone,
  type WaitTicket,
} from '../../src/core/decide.js';
import type { Checkout, LockRecord } from '../../src/core/lock.js';
import { scopeFromPattern } from '../../src/core/scope.js';
import { type Across, acrossAcquire, acrossCheck, W_OTHER_WORKTREE } from '../../src/core/worktrees.js';

const REPO = '/repo/.git';
const A: Checkout = { repo: REPO, worktree: '/repo', branch: 'main' };
const B: Checkout = { repo: REPO, worktree: '/wt/feat-b', branch: 'feat-b' };
let seq = 0;

function ctx(agentId: string, host = 'host-1'): DecisionContext {
  const caller: Caller = { agentId, parentAgentId: null, holder: { host, pid: 1, started: 's' } };
  return {
    now: 1_000_000,
    caller,
    staleMs: 3_600_000,
    processAlive: () => true,
    newLock: () => {
      seq += 1;
      return { id: `lk_${seq}`, token: `t${seq}`, tokenHash: `h${seq}` };
    },
    hashToken: (t) => `hash:${t}`,
  };
}

const path = (pattern: string, tree: string): Target => ({ scope: scopeFromPattern(pattern, 'path'), tree });
const req = (pattern: string, tree: string, wait?: WaitTicket): AcquireRequest => ({
  targets: [path(pattern, tree)],
  mode: 'exclusive',
  intent: null,
  ttlSeconds: null,
  ...(wait ? { wait } : {}),
});

function store() {
  const state = { locks: new Map<string, LockRecord>(), fence: 0, tombstones: [] as Tombstone[] };
  /** acquire as `agent` in `checkout` (its worktree is the tree key), the change applied. */
  const acquire = (
    agent: string,
    pattern: string,
    checkout: Checkout | null,
    policy: Across['policy'] = 'warn',
    host?: string,
  ) => {
    const c = ctx(agent, host);
    const r = { ...req(pattern, checkout?.worktree ?? '/plain'), ...(checkout ? { checkout } : {}) };
    const decided = acrossAcquire(state, c, r, decideAcquire(state, c, r), { checkout, policy });
    applyChanges(state, decided.changes);
    return decided.result;
  };
  const check = (agent: string, pattern: string, checkout: Checkout, policy: Across['policy'] = 'warn') => {
    const c = ctx(agent);
    const r = { targets: [path(pattern, checkout.worktree)], mode: 'exclusive' as const };
    return acrossCheck(state, c, r, decideCheck(state, c, r), { checkout, policy }).result;
  };
  return { state, acquire, check };
}

describe('the worktree rule, from records alone', () => {
  it('records the checkout on every lock it grants', () => {
    const s = store();
    const got = s.acquire('alice', 'src/**', A);
    expect(got.status).toBe('acquired');
    expect([...s.state.locks.values()][0]?.checkout).toEqual(A);
    expect(got.locks[0]).toMatchObject({ worktree: '/repo', branch: 'main' });
  });

  it('warns on an overlap in another worktree of the same repository, and only then', () => {
    const s = store();
    s.acquire('alice', 'src/**', A);
    const overlapping = s.acquire('bob', 'src/a.ts', B);
    expect(overlapping.status).toBe('acquired');
    expect(overlapping.warnings).toMatchObject([
      { code: W_OTHER_WORKTREE, agent_id: 'alice', worktree: '/repo', branch: 'main', scope: 'src/a.ts' },
    ]);
    expect(s.acquire('bob', 'docs/**', B).warnings).toBeUndefined();
    // Another repository with the same paths, and the same repository path on another host, are strangers.
    expect(s.acquire('carol', 'src/b.ts', { ...B, repo: '/other/.git' }).warnings).toBeUndefined();
    expect(s.acquire('dave', 'src/c.ts', B, 'warn', 'host-2').warnings).toBeUndefined();
    // Outside git there is nothing to compare.
    expect(s.acquire('erin', 'src/d.ts', null).warnings).toBeUndefined();
  });

  it('ignores records without a checkout (older versions) and locks of the same tree key', () => {
    const s = store();
    s.acquire('alice', 'src/**', A);
    const record = [...s.state.locks.values()][0]!;
    const { checkout: _dropped, ...old } = record;
    s.state.locks.set(record.id, old);
    expect(s.acquire('bob', 'src/a.ts', B).warnings).toBeUndefined();
    // AGENT_LOCK_TREE: one key for both worktrees, so the ordinary rule answers (held), not a warning.
    const shared = store();
    const c = ctx('alice');
    const first = { ...req('src/**', 'shared-key'), checkout: A };
    applyChanges(
      shared.state,
      acrossAcquire(shared.state, c, first, decideAcquire(shared.state, c, first), {
        checkout: A,
        policy: 'warn',
      }).changes,
    );
    const c2 = ctx('bob');
    const second = { ...req('src/a.ts', 'shared-key'), checkout: B };
    const held = acrossAcquire(shared.state, c2, second, decideAcquire(shared.state, c2, second), {
      checkout: B,
      policy: 'warn',
    });
    expect(held.result.status).toBe('held');
    expect(held.result.warnings).toBeUndefined();
  });

  it('block refuses with other_worktree and writes no lock; off grants in silence', () => {
    const s = store();
    s.acquire('alice', 'src/**', A);
    const refused = s.acquire('bob', 'src/a.ts', B, 'block');
    expect(refused.status).toBe('other_worktree');
    expect(refused.locks).toEqual([]);
    expect(refused.conflicts.map((l) => l.agent_id)).toEqual(['alice']);
    expect(s.state.locks.size).toBe(1);
    const silent = s.acquire('bob', 'src/a.ts', B, 'off');
    expect(silent.status).toBe('acquired');
    expect(silent.warnings).toBeUndefined();
  });

  it('check warns on free, refuses under block, and leaves held alone', () => {
    const s = store();
    s.acquire('alice', 'src/**', A);
    expect(s.check('bob', 'src/a.ts', B).warnings?.[0]?.code).toBe(W_OTHER_WORKTREE);
    expect(s.check('bob', 'src/a.ts', B, 'block').status).toBe('other_worktree');
    expect(s.check('bob', 'src/a.ts', B, 'off').warnings).toBeUndefined();
    expect(s.check('bob', 'src/a.ts', A).status).toBe('held');
    expect(s.check('bob', 'src/a.ts', A).warnings).toBeUndefined();
  });

  it('gives a queued ticket the checkout, so the lock handed over in line carries it', () => {
    const s = store();
    s.acquire('alice', 'src/**', A);
    const wait: WaitTicket = {
      hash: 'ticket-hash',
      waiter: { host: 'host-1', pid: 2, started: 's' },
      ttlMs: 10_000,
      last: false,
      secret: 'secret',
    };
    const c = ctx('bob');
    const r = { ...req('src/a.ts', A.worktree, wait), checkout: A };
    const queued = acrossAcquire(s.state, c, r, decideAcquire(s.state, c, r), {
      checkout: A,
      policy: 'warn',
    });
    expect(queued.result.status).toBe('held');
    const ticket = queued.changes.put.find((rec) => rec.status === 'waiting');
    expect(ticket?.checkout).toEqual(A);
  });
});
