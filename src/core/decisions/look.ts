/** check and list: looks at the store that change nothing but what every decision reaps. */
import type { LockRecord, Mode } from '../lock.js';
import { mailWaiting } from './ask.js';
import { NO_TICKETS, ownCovering, owns, scan } from './conflicts.js';
import { Decision, type DecisionContext } from './context.js';
import {
  type CheckStatus,
  type Decided,
  type ListOutcome,
  type Outcome,
  outcome,
  type StoreState,
  type Target,
} from './outcomes.js';

export function decideCheck(
  state: StoreState,
  ctx: DecisionContext,
  req: { targets: readonly Target[]; mode: Mode },
): Decided<Outcome<CheckStatus>> {
  const d = Decision.open(state, ctx);
  const answer = (o: Outcome<CheckStatus>) =>
    d.done(mailWaiting(d, ctx.caller.agentId) ? { ...o, mail: true as const } : o);
  // Held means held by a lock: a queued request holds nothing yet (the git guard and the Claude
  // Code hook ask this too, about files being edited now). `list` shows the queue.
  const conflicts = scan(d, ctx.caller, req.targets, req.mode, NO_TICKETS).conflicts;
  if (conflicts.length > 0)
    return answer(
      outcome(
        'held',
        [],
        conflicts.map((r) => d.view(r)),
      ),
    );
  const covering = req.targets.map((target) => ownCovering(d, target, req.mode));
  if (covering.every((r) => r !== undefined)) {
    const unique = [...new Map(covering.map((r) => [r!.id, r!])).values()];
    return answer(
      outcome(
        'mine',
        unique.map((r) => d.view(r)),
      ),
    );
  }
  return answer(outcome('free'));
}

export function decideList(
  state: StoreState,
  ctx: DecisionContext,
  req: { mineOnly: boolean },
): Decided<ListOutcome> {
  const d = Decision.open(state, ctx);
  const shown = (r: LockRecord) => !req.mineOnly || owns(r, ctx.caller, null);
  const byAge = (a: LockRecord, b: LockRecord) => a.created_at - b.created_at || a.fence - b.fence;
  const locks = d.locks().filter(shown).sort(byAge);
  // The queue in line order (ticket numbers), after the locks; by age among equal numbers.
  const waiting = d
    .tickets()
    .filter(shown)
    .sort(byAge)
    .sort((a, b) => a.fence - b.fence);
  return d.done({
    ...outcome(
      'listed',
      locks.map((r) => d.view(r)),
    ),
    waiting: waiting.map((r) => d.view(r)),
  });
}
