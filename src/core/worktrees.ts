/**
 * Worktrees of one repository: path locks in different worktrees never conflict (each is its own
 * tree, with its own copy of the files), but two agents reworking the same paths on two branches
 * will meet at merge time. This module tells them, from the records alone: a record carries its
 * checkout (repository, worktree, branch), and every decision here is a pure function of a store
 * snapshot and the changes a decision of decide.ts made to it.
 */
import type {
  AcquireRequest,
  AcquireStatus,
  Caller,
  CheckStatus,
  Decided,
  DecisionContext,
  Outcome,
  StoreState,
  Target,
  Warning,
} from './decide.js';
import { type Checkout, type LockRecord, recordScope, toLock } from './lock.js';
import type { Mode } from './lock.js';
import { scopesOverlap } from './scope.js';

/** `AGENT_LOCK_WORKTREES`: tell (warn, the default), refuse (block), or say nothing (off). */
export type WorktreesPolicy = 'warn' | 'block' | 'off';

export const W_OTHER_WORKTREE = 'W_OTHER_WORKTREE';

/** Where the caller works, and what to do about overlaps with the other worktrees of its repository. */
export interface Across {
  /** Null outside git: nothing to compare with. */
  readonly checkout: Checkout | null;
  readonly policy: WorktreesPolicy;
}

/** A lock of another worktree that overlaps one of the caller's scopes. */
export interface WorktreeOverlap {
  readonly target: Target;
  readonly record: LockRecord;
}

/**
 * Locks held in other worktrees of the caller's repository that overlap its path scopes. The same
 * repository means the same common git dir on the same host (the path alone could repeat on another
 * machine sharing a Redis store). Locks of the same tree key are left out: they conflict by the
 * ordinary rules already (AGENT_LOCK_TREE). Overlap is the store's own rule (scopesOverlap).
 */
export function otherWorktreeOverlaps(
  records: Iterable<LockRecord>,
  targets: readonly Target[],
  mode: Mode,
  caller: Caller,
  checkout: Checkout,
): WorktreeOverlap[] {
  const found: WorktreeOverlap[] = [];
  for (const record of records) {
    const other = record.checkout;
    if (other === undefined || record.unreadable || record.status !== 'active' || record.kind !== 'path')
      continue;
    if (other.repo !== checkout.repo || other.worktree === checkout.worktree) continue;
    if (record.host !== caller.holder.host || record.agent_id === caller.agentId) continue;
    // Two readers never make a merge conflict.
    if (record.mode === 'shared' && mode === 'shared') continue;
    for (const target of targets) {
      if (target.scope.kind !== 'path' || target.tree === record.tree) continue;
      if (scopesOverlap(recordScope(record), target.scope)) {
        found.push({ target, record });
        break;
      }
    }
  }
  return found;
}

/** One warning per overlapping lock, naming its worktree, branch, holder and intent. */
export function worktreeWarnings(
  overlaps: readonly WorktreeOverlap[],
  now: number,
  staleMs: number,
): Warning[] {
  return overlaps.map(({ target, record }) => {
    const checkout = record.checkout!;
    const branch = checkout.branch ?? 'a detached HEAD';
    const intent = record.intent ? ` ("${record.intent}")` : '';
    return {
      code: W_OTHER_WORKTREE,
      message: `${target.scope.pattern} overlaps ${record.scope}, held by ${record.agent_id}${intent} in the worktree ${checkout.worktree} on ${branch}: a merge conflict is likely`,
      scope: target.scope.pattern,
      worktree: checkout.worktree,
      branch: checkout.branch,
      agent_id: record.agent_id,
      intent: record.intent,
      lock: toLock(record, now, staleMs),
    };
  });
}

/**
 * Warnings as one paragraph for an agent (a harness hook's added context): what overlaps where,
 * and what to do about it. Null when there is nothing to say. Any hook can call this.
 */
export function warningsForAgent(warnings: readonly Warning[] | undefined): string | null {
  if (!warnings || warnings.length === 0) return null;
  const lines = warnings.map((w) => `agent-lock: ${w.message}.`);
  if (warnings.some((w) => w.code === W_OTHER_WORKTREE))
    lines.push(
      'You may go on (it is a different copy of the files), but keep the change small or agree with that agent who merges first.',
    );
  return lines.join(' ');
}

/**
 * The records of other worktrees as a decision left the store: the snapshot with its changes
 * applied. Runs on every acquire and check inside git, so the common case (every lock of this
 * worktree, or of no checkout) is skipped before anything is allocated.
 */
function othersAfter(state: StoreState, decided: Decided<unknown>, checkout: Checkout): LockRecord[] {
  const { put, del } = decided.changes;
  const elsewhere = (r: LockRecord) => r.checkout !== undefined && r.checkout.worktree !== checkout.worktree;
  const records: LockRecord[] = [];
  for (const [id, record] of state.locks) {
    if (!elsewhere(record) || del.includes(id) || put.some((r) => r.id === id)) continue;
    records.push(record);
  }
  for (const record of put) if (elsewhere(record)) records.push(record);
  return records;
}

/** decideAcquire (given req.checkout), then the worktree rule: overlaps warn or refuse. */
export function acrossAcquire(
  state: StoreState,
  ctx: DecisionContext,
  req: AcquireRequest,
  decided: Decided<Outcome<AcquireStatus>>,
  across: Across,
): Decided<Outcome<AcquireStatus>> {
  const { checkout, policy } = across;
  if (checkout === null) return decided;
  // decideAcquire wrote the checkout (req.checkout) into the records it made.
  const marked = decided;
  const { status } = marked.result;
  if (policy === 'off' || (status !== 'acquired' && status !== 'already_mine')) return marked;
  const overlaps = otherWorktreeOverlaps(
    othersAfter(state, marked, checkout),
    req.targets,
    req.mode,
    ctx.caller,
    checkout,
  );
  if (overlaps.length === 0) return marked;
  const warnings = worktreeWarnings(overlaps, ctx.now, ctx.staleMs);
  if (policy === 'warn' || status === 'already_mine')
    return { ...marked, result: { ...marked.result, warnings } };
  // block: the grant is taken back in the same step (reaping and hand-overs to others stand). A
  // lock handed over in line by an earlier decision is in the snapshot: it goes as well.
  const refused = new Set(marked.result.locks.map((l) => l.id));
  const changes = marked.changes;
  return {
    result: {
      status: 'other_worktree',
      locks: [],
      conflicts: overlaps.map((o) => toLock(o.record, ctx.now, ctx.staleMs)),
      warnings,
    },
    changes: {
      ...changes,
      put: changes.put.filter((r) => !refused.has(r.id)),
      del: [...changes.del, ...[...refused].filter((id) => state.locks.has(id))],
    },
  };
}

/** decideCheck, then the worktree rule: `free` warns, or answers `other_worktree` under block. */
export function acrossCheck(
  state: StoreState,
  ctx: DecisionContext,
  req: { targets: readonly Target[]; mode: Mode },
  decided: Decided<Outcome<CheckStatus>>,
  across: Across,
): Decided<Outcome<CheckStatus>> {
  const { checkout, policy } = across;
  const { status } = decided.result;
  if (checkout === null || policy === 'off' || status === 'held') return decided;
  const overlaps = otherWorktreeOverlaps(
    othersAfter(state, decided, checkout),
    req.targets,
    req.mode,
    ctx.caller,
    checkout,
  );
  if (overlaps.length === 0) return decided;
  const warnings = worktreeWarnings(overlaps, ctx.now, ctx.staleMs);
  if (policy === 'warn' || status === 'mine') return { ...decided, result: { ...decided.result, warnings } };
  return {
    ...decided,
    result: {
      status: 'other_worktree',
      locks: [],
      conflicts: overlaps.map((o) => toLock(o.record, ctx.now, ctx.staleMs)),
      warnings,
    },
  };
}
