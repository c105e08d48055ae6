/**
 * acquire: take locks on scopes, or learn why not (held, a parent's scope, interrupted work), in
 * one step; a waiting acquire also takes its place in line, and finds locks handed over to it.
 * Also grant, which makes a new lock (acquire, resume).
 */
import type { Checkout, LockRecord, Mode } from '../lock.js';
import { sameScope, scan } from './conflicts.js';
import { Decision, type DecisionContext } from './context.js';
import { frozenFor } from './freeze.js';
import { queue, recordWaiting, ticketsOf, waiterKey } from './line.js';
import {
  type AcquireRequest,
  type AcquireStatus,
  type Decided,
  type FrozenFile,
  type Outcome,
  outcome,
  type StoreState,
  type Target,
} from './outcomes.js';

export function decideAcquire(
  state: StoreState,
  ctx: DecisionContext,
  req: AcquireRequest,
): Decided<Outcome<AcquireStatus>> {
  const d = Decision.open(state, ctx);
  const wait = req.wait;
  if (wait) {
    // Handed over in line by another decision: the locks are ours, with the ticket secret as token.
    const given = d
      .locks()
      .filter(
        (r) => r.status === 'active' && r.token_hash === wait.hash && r.agent_id === ctx.caller.agentId,
      );
    if (given.length > 0)
      return d.done(
        outcome(
          'acquired',
          given.map((r) => d.view(r, wait.secret)),
        ),
      );
  }
  const tickets = wait ? ticketsOf(d, wait.hash) : [];
  // Our place in line: every ticket taken before ours stands in the way, as its lock would.
  const place = tickets.length > 0 ? Math.min(...tickets.map((r) => r.fence)) : Number.POSITIVE_INFINITY;
  const found = scan(d, ctx.caller, req.targets, req.mode, { place, hash: wait?.hash });
  // Any answer but `held` ends the wait: the tickets go in the same step.
  if (found.parentHeld.length > 0 || found.conflicts.length === 0 || wait?.last) {
    for (const record of tickets) d.remove(record);
  }
  if (found.parentHeld.length > 0) {
    return d.done(
      outcome(
        'parent_scope',
        [],
        found.parentHeld.map((r) => d.view(r)),
      ),
    );
  }
  if (found.conflicts.length > 0) {
    if (wait && !wait.last) queue(d, req, wait, tickets, found.conflicts);
    if (wait?.last) recordWaiting(d, 'timeout', req, tickets);
    return d.done(
      outcome(
        wait?.last ? 'timeout' : 'held',
        [],
        found.conflicts.map((r) => d.view(r)),
      ),
    );
  }
  if (found.covering.every((record) => record !== undefined)) {
    const touched = new Map<string, LockRecord>();
    const ttl = req.ttlSeconds;
    found.covering.forEach((record, i) => {
      if (!record) return;
      const before = touched.get(record.id) ?? record;
      let lease = {};
      if (ttl !== null && ttl !== undefined) {
        const until = ctx.now + ttl * 1000;
        // A TTL asked again for the lock's own scope is the lease wanted from now on: asking for
        // 600 s must not leave 10 s. A wider lock that covers the scope is only ever lengthened,
        // and one without a TTL keeps none: a narrow request must not shorten a wide claim.
        if (sameScope(record, req.targets[i]!)) lease = { ttl_seconds: ttl, expires_at: until };
        else if (before.expires_at !== null && before.expires_at < until) lease = { expires_at: until };
      }
      touched.set(record.id, { ...before, updated_at: ctx.now, ...lease });
    });
    for (const record of touched.values()) {
      d.put(record);
      d.record('already_mine', record);
    }
    return d.done(
      outcome(
        'already_mine',
        [...touched.values()].map((r) => d.view(r)),
      ),
    );
  }
  const wanted = req.targets.filter((_, i) => found.covering[i] === undefined);
  const orphans = found.orphans.filter((r) => wanted.some((target) => sameScope(r, target)));
  if (orphans.length > 0)
    return d.done(
      outcome(
        'interrupted',
        [],
        orphans.map((r) => d.view(r)),
      ),
    );
  const frozen = frozenFor(d, req.freeze);
  const granted = req.targets.flatMap((target, i) =>
    found.covering[i] === undefined
      ? [
          grant(
            d,
            target,
            req.mode,
            req.intent,
            req.ttlSeconds,
            [],
            frozen(i),
            wait && waiterKey(wait.waiter),
            req.checkout,
          ),
        ]
      : [],
  );
  for (const { record } of granted) {
    d.record('acquired', record);
    if (record.frozen_paths.length > 0) d.record('frozen', record, { files: record.frozen_paths });
  }
  return d.done(
    outcome(
      'acquired',
      granted.map(({ record, token }) => d.view(record, token)),
    ),
  );
}

/** Makes a new lock for the caller on the target, with the next fence and a new token. */
export function grant(
  d: Decision,
  target: Target,
  mode: Mode,
  intent: string | null,
  ttlSeconds: number | null,
  notes: LockRecord['notes'] = [],
  frozen: readonly FrozenFile[] = [],
  taker?: string,
  checkout?: Checkout,
): { record: LockRecord; token: string } {
  const { caller, now } = d.ctx;
  const { id, token, tokenHash } = d.ctx.newLock();
  const record: LockRecord = {
    id,
    scope: target.scope.pattern,
    kind: target.scope.kind,
    mode,
    agent_id: caller.agentId,
    parent_agent_id: caller.parentAgentId,
    intent,
    tree: target.tree,
    host: caller.holder.host,
    pid: caller.holder.pid,
    started: caller.holder.started,
    created_at: now,
    updated_at: now,
    expires_at: ttlSeconds === null ? null : now + ttlSeconds * 1000,
    ttl_seconds: ttlSeconds,
    status: 'active',
    fence: d.nextFence(),
    frozen_paths: frozen.map((f) => f.path),
    frozen_modes: frozen.map((f) => f.mode),
    notes,
    token_hash: tokenHash,
    // Always a key (undefined is not written): records keep one shape, which the hot loops over
    // every record depend on (an extra shape made each decision over 1000 locks a third slower).
    checkout: target.scope.kind === 'path' ? checkout : undefined,
    ...(taker === undefined ? {} : { taker }),
  };
  d.put(record);
  return { record, token };
}
