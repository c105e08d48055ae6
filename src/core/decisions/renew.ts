/** renew: the caller's locks on scopes live on from now (their own TTL or a new one), or why not. */
import type { LockRecord } from '../lock.js';
import { owns, sameScope } from './conflicts.js';
import { Decision, type DecisionContext } from './context.js';
import {
  type Decided,
  type Outcome,
  outcome,
  type RenewStatus,
  type StoreState,
  type Target,
} from './outcomes.js';

export function decideRenew(
  state: StoreState,
  ctx: DecisionContext,
  req: { targets: readonly Target[]; ttlSeconds: number | null; token: string | null },
): Decided<Outcome<RenewStatus>> {
  const d = Decision.open(state, ctx);
  const tokenHash = req.token === null ? null : ctx.hashToken(req.token);
  const owned: LockRecord[] = [];
  const refused: LockRecord[] = [];
  let expired = false;
  let missing = false;
  for (const target of req.targets) {
    const candidates = d.locks().filter((r) => r.status === 'active' && sameScope(r, target));
    const mine = candidates.filter((r) => owns(r, ctx.caller, tokenHash));
    if (mine.length > 0) {
      owned.push(...mine);
    } else if (candidates.length > 0) {
      refused.push(...candidates);
    } else {
      // Gone without trace: a lapsed lease (the tombstone says so, or the caller holds a token)
      // must be acquired again with a new fence, never silently revived.
      const buried = d
        .currentTombstones()
        .some(
          (t) =>
            t.scope === target.scope.pattern &&
            t.tree === target.tree &&
            (t.agent_id === ctx.caller.agentId || (tokenHash !== null && t.token_hash === tokenHash)),
        );
      if (buried || tokenHash !== null) expired = true;
      else missing = true;
    }
  }
  const status: RenewStatus = expired
    ? 'expired'
    : refused.length > 0
      ? 'refused'
      : missing
        ? 'not_found'
        : 'renewed';
  if (status !== 'renewed')
    return d.done(
      outcome(
        status,
        [],
        refused.map((r) => d.view(r)),
      ),
    );
  const renewed = renewAll(d, owned, req.ttlSeconds);
  return d.done(
    outcome(
      status,
      renewed.map((r) => d.view(r)),
    ),
  );
}

/** Renews each record from now, with its own TTL unless a new one is given. */
export function renewAll(
  d: Decision,
  records: readonly LockRecord[],
  ttlSeconds: number | null,
): LockRecord[] {
  const { now } = d.ctx;
  return records.map((record) => {
    const ttl = ttlSeconds ?? record.ttl_seconds;
    const next: LockRecord = {
      ...record,
      updated_at: now,
      ttl_seconds: ttl,
      expires_at: ttl === null ? null : now + ttl * 1000,
    };
    d.put(next);
    d.record('renewed', next);
    return next;
  });
}
