/**
 * claim: an agent's hook, as the agent edits files, checks them and takes an exclusive claim on
 * each one nobody else holds, in one decision (never a check followed by an acquire: two agents
 * editing one file at once would both see it free). Also the end of an agent's claims (its turn or
 * session ended).
 */
import type { Checkout, LockRecord } from '../lock.js';
import { recordScope } from '../lock.js';
import { scopeCovers } from '../scope.js';
import { NO_TICKETS, owns, scan } from './conflicts.js';
import { Decision, type DecisionContext } from './context.js';
import { grant } from './acquire.js';
import { type Decided, type Outcome, outcome, type StoreState, type Target } from './outcomes.js';

/**
 * `claimed`: at least one file was claimed now (the others were the caller's already); `mine`: the
 * caller (or its parent, or a child's claim) holds every one already, nothing new taken; `held`:
 * another agent holds one of them, nothing taken.
 */
export type ClaimStatus = 'claimed' | 'mine' | 'held';

export interface ClaimRequest {
  readonly targets: readonly Target[];
  /** The tool whose call this is (recorded on new claims). */
  readonly tool: string;
  /** Idle lease: a claim lapses this long after the holder's last recorded edit. */
  readonly leaseMs: number;
  readonly checkout?: Checkout;
}

/** A claim's answer; `cycle`: why waiting for it would never end (see waitCycle). */
export interface ClaimOutcome extends Outcome<ClaimStatus> {
  readonly cycle?: readonly string[];
}

/**
 * Holders of `conflicts` that wait in line themselves for something the caller holds: waiting for
 * them would never end (each waits for the other until its deadline), so the caller is told at once.
 * One line per such wait: `A waits for src/b.ts, which B holds`.
 */
function waitCycle(d: Decision, conflicts: readonly LockRecord[]): string[] {
  const { caller } = d.ctx;
  const holders = new Set(conflicts.map((r) => r.agent_id));
  const lines: string[] = [];
  for (const ticket of d.tickets()) {
    if (!holders.has(ticket.agent_id)) continue;
    const waiter = { agentId: ticket.agent_id, parentAgentId: ticket.parent_agent_id, holder: caller.holder };
    const target = { scope: recordScope(ticket), tree: ticket.tree };
    const mine = scan(d, waiter, [target], ticket.mode, NO_TICKETS).conflicts.filter(
      (r) => r.agent_id === caller.agentId,
    );
    for (const lock of mine)
      lines.push(
        `${ticket.agent_id} waits for ${ticket.scope}, which ${caller.agentId} holds (${lock.scope})`,
      );
  }
  return lines;
}

export function decideClaim(
  state: StoreState,
  ctx: DecisionContext,
  req: ClaimRequest,
): Decided<ClaimOutcome> {
  const d = Decision.open(state, ctx);
  const { caller, now } = ctx;
  // Held means held by a lock: a queued request holds nothing yet (as check).
  const found = scan(d, caller, req.targets, 'exclusive', NO_TICKETS);
  if (found.conflicts.length > 0) {
    const held = outcome(
      'held' as const,
      [],
      found.conflicts.map((r) => d.view(r)),
    );
    const cycle = waitCycle(d, found.conflicts);
    return d.done(cycle.length > 0 ? { ...held, cycle } : held);
  }
  const kept: LockRecord[] = [];
  const claimed: LockRecord[] = [];
  req.targets.forEach((target, i) => {
    const own = found.covering[i];
    const family = own ?? familyCovering(d, target);
    if (family === undefined) {
      const { record } = grant(
        d,
        target,
        'exclusive',
        `editing (${req.tool})`,
        null,
        [],
        [],
        undefined,
        req.checkout,
      );
      const claim: LockRecord = {
        ...record,
        expires_at: now + req.leaseMs,
        ttl_seconds: Math.ceil(req.leaseMs / 1000),
        claim: { tool: req.tool, last_edit_at: now },
      };
      d.put(claim);
      d.record('claimed', claim);
      claimed.push(claim);
      return;
    }
    // An own claim's idle lease moves on with the edit, but is written only once half of it has
    // passed: most edits of a claimed file change nothing and need no write.
    if (
      family.claim !== undefined &&
      family.agent_id === caller.agentId &&
      family.expires_at !== null &&
      !kept.some((r) => r.id === family.id) &&
      now - family.claim.last_edit_at >= req.leaseMs / 2
    ) {
      const renewed: LockRecord = {
        ...family,
        updated_at: now,
        expires_at: now + req.leaseMs,
        ttl_seconds: Math.ceil(req.leaseMs / 1000),
        claim: { ...family.claim, last_edit_at: now },
      };
      d.put(renewed);
      d.record('renewed', renewed, { reason: `edited (${req.tool})` });
      kept.push(renewed);
      return;
    }
    if (!kept.some((r) => r.id === family.id)) kept.push(family);
  });
  const status: ClaimStatus = claimed.length > 0 ? 'claimed' : 'mine';
  return d.done(
    outcome(
      status,
      [...claimed, ...kept].map((r) => d.view(r)),
    ),
  );
}

/**
 * The active lock of the caller's family that covers the target, other than the caller's own (which
 * scan finds): its parent's (a lock or a claim: the child works inside it), or a claim of one of
 * its children (the child's edit is under way on its behalf). Either makes a claim unneeded.
 */
function familyCovering(d: Decision, target: Target): LockRecord | undefined {
  const { caller } = d.ctx;
  for (const record of d.locks()) {
    if (record.unreadable || record.status !== 'active' || record.mode !== 'exclusive') continue;
    const parents = caller.parentAgentId !== null && record.agent_id === caller.parentAgentId;
    const childClaim = record.claim !== undefined && record.parent_agent_id === caller.agentId;
    if (!parents && !childClaim) continue;
    if (record.kind !== target.scope.kind || record.tree !== target.tree) continue;
    if (scopeCovers(recordScope(record), target.scope)) return record;
  }
  return undefined;
}

/**
 * Ends the caller's claims (and its children's: a turn that ended ended theirs too), never a lock
 * taken on purpose: `released`, with the reason, in the log. A sub-agent's end leaves its
 * siblings' and its parent's claims alone.
 */
export function decideClaimsEnd(
  state: StoreState,
  ctx: DecisionContext,
  req: { reason: string },
): Decided<Outcome<'released'>> {
  const d = Decision.open(state, ctx, { releasing: true });
  const ended = d
    .locks()
    .filter((r) => r.claim !== undefined && r.status === 'active' && owns(r, ctx.caller, null));
  for (const record of ended) {
    d.remove(record);
    d.record('released', record, { reason: req.reason });
  }
  return d.done(
    outcome(
      'released',
      ended.map((r) => d.view(r)),
    ),
  );
}

/**
 * The caller's own locks `ids` (just granted to a wait in line for an edit) become claims in one
 * step: same id, fence and token, now marked as a claim with its idle lease. There is no instant
 * at which the file is free between the wait and the claim.
 */
export function decideClaimLocks(
  state: StoreState,
  ctx: DecisionContext,
  req: { ids: readonly string[]; tool: string; leaseMs: number },
): Decided<Outcome<ClaimStatus>> {
  const d = Decision.open(state, ctx);
  const { now, caller } = ctx;
  const mine = d
    .locks()
    .filter((r) => req.ids.includes(r.id) && r.status === 'active' && r.agent_id === caller.agentId);
  // Gone meanwhile (reaped, broken): nothing to keep, and the edit must not go on unguarded.
  if (mine.length < req.ids.length) return d.done(outcome('held'));
  const claimed = mine.map((record) => {
    const claim: LockRecord = {
      ...record,
      intent: `editing (${req.tool})`,
      updated_at: now,
      expires_at: now + req.leaseMs,
      ttl_seconds: Math.ceil(req.leaseMs / 1000),
      claim: { tool: req.tool, last_edit_at: now },
    };
    d.put(claim);
    d.record('claimed', claim);
    return claim;
  });
  return d.done(
    outcome(
      'claimed',
      claimed.map((r) => d.view(r)),
    ),
  );
}
