/**
 * Leases (lease.ts, `alock run`) find their locks again by id and token, never by scope: check,
 * renew and release exactly those locks, so another lock on the same scope is never touched.
 */
import type { LockRecord } from '../lock.js';
import { owns } from './conflicts.js';
import { Decision, type DecisionContext } from './context.js';
import {
  type Decided,
  type LeaseCheckStatus,
  type LeaseRef,
  type Outcome,
  outcome,
  type ReleaseStatus,
  type RenewStatus,
  type StoreState,
} from './outcomes.js';
import { renewAll } from './renew.js';

/** Per reference, its active lock, proven by token (or by the caller's id), or undefined. */
function leaseRecords(d: Decision, refs: readonly LeaseRef[]): (LockRecord | undefined)[] {
  const live = new Map<string, LockRecord>();
  for (const record of d.locks()) live.set(record.id, record);
  return refs.map((ref) => {
    const record = live.get(ref.id);
    if (record === undefined || record.status !== 'active') return undefined;
    const proven =
      ref.tokenHash === null ? owns(record, d.ctx.caller, null) : record.token_hash === ref.tokenHash;
    return proven ? record : undefined;
  });
}

/** A lease's lock that is gone lapsed (its tombstone says so) or was broken or released. */
function goneStatus(d: Decision, refs: readonly LeaseRef[], found: (LockRecord | undefined)[]) {
  const lapsed = refs.some(
    (ref, i) => found[i] === undefined && d.currentTombstones().some((t) => t.token_hash === ref.tokenHash),
  );
  return lapsed ? ('expired' as const) : ('not_found' as const);
}

/** Are all of a lease's locks still there, by id and token? Read-only: `mine`, `expired`, `not_found`. */
export function decideLeaseCheck(
  state: StoreState,
  ctx: DecisionContext,
  req: { refs: readonly LeaseRef[] },
): Decided<Outcome<LeaseCheckStatus>> {
  const d = Decision.open(state, ctx);
  const found = leaseRecords(d, req.refs);
  if (found.every((r) => r !== undefined))
    return d.done(
      outcome(
        'mine',
        found.map((r) => d.view(r!)),
      ),
    );
  return d.done(outcome(goneStatus(d, req.refs, found)));
}

/** Renews exactly a lease's locks (by id and token), all or none: never another lock on the scope. */
export function decideLeaseRenew(
  state: StoreState,
  ctx: DecisionContext,
  req: { refs: readonly LeaseRef[]; ttlSeconds: number | null },
): Decided<Outcome<RenewStatus>> {
  const d = Decision.open(state, ctx);
  const found = leaseRecords(d, req.refs);
  if (!found.every((r) => r !== undefined)) return d.done(outcome(goneStatus(d, req.refs, found)));
  const renewed = renewAll(d, found as LockRecord[], req.ttlSeconds);
  return d.done(
    outcome(
      'renewed',
      renewed.map((r) => d.view(r)),
    ),
  );
}

/** Releases exactly a lease's locks (by id and token); `not_found` if any was already gone. */
export function decideLeaseRelease(
  state: StoreState,
  ctx: DecisionContext,
  req: { refs: readonly LeaseRef[] },
): Decided<Outcome<ReleaseStatus>> {
  const d = Decision.open(state, ctx, { releasing: true });
  const found = leaseRecords(d, req.refs);
  const present = found.filter((r): r is LockRecord => r !== undefined);
  for (const record of present) {
    d.remove(record);
    d.record('released', record);
  }
  return d.done(
    outcome(
      present.length === found.length ? 'released' : 'not_found',
      present.map((r) => d.view(r)),
    ),
  );
}
