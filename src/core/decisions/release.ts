/** release: the caller lets go of its locks (its own, its children's, or by token), by scope or all. */
import type { LockRecord } from '../lock.js';
import { owns, sameScope } from './conflicts.js';
import { Decision, type DecisionContext } from './context.js';
import {
  type Decided,
  type Outcome,
  outcome,
  type ReleaseStatus,
  type StoreState,
  type Target,
} from './outcomes.js';

export function decideRelease(
  state: StoreState,
  ctx: DecisionContext,
  req: { targets: readonly Target[] | 'all'; token: string | null },
): Decided<Outcome<ReleaseStatus>> {
  const d = Decision.open(state, ctx, { releasing: true });
  const tokenHash = req.token === null ? null : ctx.hashToken(req.token);
  if (req.targets === 'all') {
    const mine = d.locks().filter((r) => owns(r, ctx.caller, tokenHash));
    for (const record of mine) {
      d.remove(record);
      d.record('released', record);
    }
    return d.done(
      outcome(
        'released',
        mine.map((r) => d.view(r)),
      ),
    );
  }
  const released: LockRecord[] = [];
  const refused: LockRecord[] = [];
  const missing: string[] = [];
  for (const target of req.targets) {
    const candidates = d.locks().filter((r) => sameScope(r, target));
    const owned = candidates.filter((r) => owns(r, ctx.caller, tokenHash));
    if (owned.length > 0) {
      for (const record of owned) {
        d.remove(record);
        d.record('released', record);
        released.push(record);
      }
    } else if (candidates.length > 0) {
      refused.push(...candidates);
    } else {
      missing.push(target.scope.pattern);
    }
  }
  const status: ReleaseStatus =
    refused.length > 0 ? 'refused' : missing.length > 0 ? 'not_found' : 'released';
  const answer = outcome(
    status,
    released.map((r) => d.view(r)),
    refused.map((r) => d.view(r)),
  );
  return d.done(missing.length > 0 ? { ...answer, notFound: missing } : answer);
}
