/**
 * Which records stand in a request's way, and whose they are: the rules a decision applies to one
 * record (same space, same scope, overlap, modes, blocks, owns) and the one scan over the live
 * records that answers acquire, check, resume and the hand-over in line.
 */
import type { LockRecord, Mode } from '../lock.js';
import { recordScope } from '../lock.js';
import { scopeCovers, scopesOverlap } from '../scope.js';
import type { Caller, Decision } from './context.js';
import type { Target } from './outcomes.js';

function sameSpace(record: LockRecord, target: Target): boolean {
  if (record.unreadable) return true;
  if (target.scope.kind === 'resource') return record.kind === 'resource';
  if (record.kind !== 'path') return false;
  if (record.tree === target.tree) return true;
  // One checkout is one tree, whatever AGENT_LOCK_TREE each agent in it had set.
  const here = target.checkout;
  return here !== undefined && record.host === here.host && record.checkout?.worktree === here.worktree;
}

export function sameScope(record: LockRecord, target: Target): boolean {
  return !record.unreadable && sameSpace(record, target) && record.scope === target.scope.pattern;
}

function overlaps(record: LockRecord, target: Target): boolean {
  return (
    record.unreadable === true ||
    (sameSpace(record, target) && scopesOverlap(recordScope(record), target.scope))
  );
}

function modesConflict(held: LockRecord, wanted: Mode): boolean {
  return !(held.mode === 'shared' && wanted === 'shared' && !held.unreadable);
}

/** Does this lock stand in the caller's way? Everyone but its holder and the holder's children. */
function blocks(record: LockRecord, caller: Caller): boolean {
  if (record.unreadable) return true;
  if (record.status === 'orphaned') return false;
  if (record.agent_id === caller.agentId) return false;
  // A sub-agent's claim says "my edit is under way", on its parent's behalf: it never stops the
  // parent (a lock the child took on purpose still does).
  if (record.claim !== undefined && record.parent_agent_id === caller.agentId) return false;
  return !(caller.parentAgentId !== null && record.agent_id === caller.parentAgentId);
}

/** May the caller release, renew or note this lock? Its own, its direct children's, or by token. */
export function owns(record: LockRecord, caller: Caller, tokenHash: string | null): boolean {
  if (record.unreadable) return false;
  if (tokenHash !== null && record.token_hash === tokenHash) return true;
  return record.agent_id === caller.agentId || record.parent_agent_id === caller.agentId;
}

/**
 * The tickets a scan counts as in the way, as their locks would be: those taken before `place`
 * (a ticket number), except the request's own (`hash`).
 */
export interface Ahead {
  readonly place: number;
  readonly hash?: string | undefined;
}

/** A look at what is held: a queued request holds nothing yet. */
export const NO_TICKETS: Ahead = { place: Number.NEGATIVE_INFINITY };
/** Every ticket in line stands in the way (a request with no place of its own). */
export const EVERY_TICKET: Ahead = { place: Number.POSITIVE_INFINITY };

export interface Scan {
  /** Locks of the caller's parent on exactly a wanted scope. */
  parentHeld: LockRecord[];
  /** Records in the way: locks of others (but the parent's) and tickets ahead, in live order. */
  conflicts: LockRecord[];
  /** Per target, the caller's own lock that overlaps and covers it (undefined: none). */
  covering: (LockRecord | undefined)[];
  /** Orphans on exactly a wanted scope. */
  orphans: LockRecord[];
}

/**
 * One pass over the live records answers every question a request asks (hot with many locks
 * held). Tickets count only when `ahead` says they came first; they are never parents, covers or
 * orphans.
 */
export function scan(
  d: Decision,
  caller: Caller,
  targets: readonly Target[],
  mode: Mode,
  ahead: Ahead,
): Scan {
  const result: Scan = { parentHeld: [], conflicts: [], covering: targets.map(() => undefined), orphans: [] };
  const live = d.live();
  for (let r = 0; r < live.length; r++) {
    const record = live[r]!;
    const ticket = record.status === 'waiting';
    if (ticket && !(record.token_hash !== ahead.hash && record.fence < ahead.place)) continue;
    let overlapsAny = false;
    for (let i = 0; i < targets.length; i++) {
      const target = targets[i]!;
      if (!record.unreadable && !sameSpace(record, target)) continue;
      if (!overlaps(record, target)) continue;
      overlapsAny = true;
      if (record.unreadable || ticket) continue;
      const exact = record.scope === target.scope.pattern;
      if (record.status === 'orphaned') {
        if (exact && !result.orphans.includes(record)) result.orphans.push(record);
        continue;
      }
      if (exact && caller.parentAgentId !== null && record.agent_id === caller.parentAgentId) {
        if (!result.parentHeld.includes(record)) result.parentHeld.push(record);
      }
      if (
        result.covering[i] === undefined &&
        record.agent_id === caller.agentId &&
        !(mode === 'exclusive' && record.mode === 'shared') &&
        scopeCovers(recordScope(record), target.scope)
      ) {
        result.covering[i] = record;
      }
    }
    if (overlapsAny && blocks(record, caller) && modesConflict(record, mode)) result.conflicts.push(record);
  }
  return result;
}

/**
 * The caller's own active lock that covers the target (`check`). Unlike the scan's covers it need
 * not overlap the target: a glob that matches no normalised path (one ending in `/..`) is covered
 * by `**` without overlapping it, and check answers `mine` for it as it always has.
 */
export function ownCovering(d: Decision, target: Target, mode: Mode): LockRecord | undefined {
  for (const record of d.locks()) {
    if (record.unreadable || record.status !== 'active' || record.agent_id !== d.ctx.caller.agentId) continue;
    if (mode === 'exclusive' && record.mode === 'shared') continue;
    if (sameSpace(record, target) && scopeCovers(recordScope(record), target.scope)) return record;
  }
  return undefined;
}
