/**
 * What is done to a lock other than taking and letting go of it: note (the holder leaves a line
 * for whoever comes next), resume (take over an orphan, notes and all) and break (anyone ends a
 * lock, with a reason).
 */
import type { LockRecord } from '../lock.js';
import { grant } from './acquire.js';
import { EVERY_TICKET, owns, sameScope, scan } from './conflicts.js';
import { Decision, type DecisionContext } from './context.js';
import {
  type BreakStatus,
  type Decided,
  type NoteStatus,
  type Outcome,
  outcome,
  type ResumeStatus,
  type StoreState,
  type Target,
} from './outcomes.js';

const NOTE_LIMIT = 200;

export function decideNote(
  state: StoreState,
  ctx: DecisionContext,
  req: { target: Target; text: string; token: string | null },
): Decided<Outcome<NoteStatus>> {
  const d = Decision.open(state, ctx);
  const tokenHash = req.token === null ? null : ctx.hashToken(req.token);
  const candidates = d.locks().filter((r) => r.status === 'active' && sameScope(r, req.target));
  const owned = candidates.find((r) => owns(r, ctx.caller, tokenHash));
  if (owned === undefined) {
    if (candidates.length > 0)
      return d.done(
        outcome(
          'refused',
          [],
          candidates.map((r) => d.view(r)),
        ),
      );
    return d.done(outcome('not_found'));
  }
  const notes = [...owned.notes, { at: ctx.now, text: req.text }].slice(-NOTE_LIMIT);
  const next: LockRecord = { ...owned, notes, updated_at: ctx.now };
  d.put(next);
  d.record('noted', next, { reason: req.text });
  return d.done(outcome('noted', [d.view(next)]));
}

export function decideResume(
  state: StoreState,
  ctx: DecisionContext,
  req: { target: Target },
): Decided<Outcome<ResumeStatus>> {
  const d = Decision.open(state, ctx);
  const orphan = d.locks().find((r) => r.status === 'orphaned' && sameScope(r, req.target));
  if (orphan === undefined) return d.done(outcome('not_found'));
  // Every ticket in line stands in the way, as for an acquire that does not wait.
  const conflicts = scan(d, ctx.caller, [req.target], orphan.mode, EVERY_TICKET).conflicts;
  if (conflicts.length > 0)
    return d.done(
      outcome(
        'held',
        [],
        conflicts.map((r) => d.view(r)),
      ),
    );
  d.remove(orphan);
  const { record, token } = grant(
    d,
    req.target,
    orphan.mode,
    orphan.intent,
    orphan.ttl_seconds,
    orphan.notes,
  );
  d.record('resumed', record);
  return d.done(outcome('resumed', [d.view(record, token)], [d.view(orphan)]));
}

export function decideBreak(
  state: StoreState,
  ctx: DecisionContext,
  req: { targets: readonly Target[]; ids: readonly string[]; reason: string | null },
): Decided<Outcome<BreakStatus>> {
  const d = Decision.open(state, ctx);
  // Tickets are not locks: they leave with their waiter (or lapse), not by break.
  const broken = d
    .locks()
    .filter((r) => req.ids.includes(r.id) || req.targets.some((target) => sameScope(r, target)));
  for (const record of broken) {
    d.remove(record);
    d.record('broken', record, { reason: req.reason });
  }
  if (broken.length === 0) return d.done(outcome('not_found'));
  return d.done(
    outcome(
      'broken',
      broken.map((r) => d.view(r)),
    ),
  );
}
