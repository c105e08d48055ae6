/**
 * The waiting line. A request that waits (acquire --wait) keeps tickets in the store beside the
 * locks: one waiting record per scope, numbered by one fence in arrival order. Here are the rules
 * for them: when a ticket lapses, how a freed way is handed over in line, how a request takes or
 * keeps its place, and the events that name a wait. Verbs that act on locks read Decision.locks(),
 * which leaves the tickets out.
 */
import { eventOf } from '../events.js';
import type { LockRecord } from '../lock.js';
import { recordScope } from '../lock.js';
import { scan } from './conflicts.js';
import type { Caller, Decision, DecisionContext } from './context.js';
import type { AcquireRequest, WaitTicket } from './outcomes.js';

/** Names a waiting process for targeted wake-ups: its host, pid and start stamp. */
export function waiterKey(waiter: { host: string; pid: number; started: string }): string {
  return `${waiter.host}|${waiter.pid}|${waiter.started}`;
}

/** A ticket lapses with its short lease, or at once when its waiting process is gone (same host). */
export function ticketGone(ctx: DecisionContext, record: LockRecord): boolean {
  if (record.expires_at !== null && record.expires_at <= ctx.now) return true;
  if (record.host !== ctx.caller.holder.host) return false;
  return !(ctx.waiterAlive ?? ctx.processAlive)(record.pid, record.started);
}

/** A waiting request's tickets, found again by its ticket hash. */
export function ticketsOf(d: Decision, hash: string): LockRecord[] {
  return d.tickets().filter((r) => r.token_hash === hash);
}

/**
 * Direct hand-off: grants waiting requests, in line order, whose way is now free, turning their
 * tickets into locks (the waiter's ticket secret is the lock's token; the waiter finds them on
 * its next look, with no decision of its own to make). A request that needs the waiter itself
 * (files to freeze, a parent's scope, interrupted work, a lock of its own covering it) stays in
 * line for the waiter to decide.
 */
export function handOver(d: Decision): void {
  const requests = new Map<string, LockRecord[]>();
  const waiting = d.tickets();
  for (let i = 0; i < waiting.length; i++) {
    const record = waiting[i]!;
    const group = requests.get(record.token_hash);
    if (group) group.push(record);
    else requests.set(record.token_hash, [record]);
  }
  if (requests.size === 0) return;
  const queue = [...requests.values()].sort((a, b) => a[0]!.fence - b[0]!.fence);
  for (const tickets of queue) {
    const first = tickets[0]!;
    if (ticketGone(d.ctx, first)) continue;
    // A ticket without a holder has files to freeze: only its waiter can take the lock.
    const holder = first.holder;
    const caller: Caller = {
      agentId: first.agent_id,
      parentAgentId: first.parent_agent_id,
      holder: holder ?? { host: first.host, pid: first.pid, started: first.started },
    };
    const targets = tickets.map((t) => ({ scope: recordScope(t), tree: t.tree }));
    const found = scan(d, caller, targets, first.mode, { place: first.fence, hash: first.token_hash });
    if (found.conflicts.length > 0) continue;
    // Its way is free: the waiter hears of it, to take the locks handed over or to give the
    // answer only it can (files to freeze, a parent's scope, interrupted work, its own cover).
    d.wake.add(waiterKey(first));
    if (holder === undefined || found.parentHeld.length > 0 || found.orphans.length > 0) continue;
    if (found.covering.some((r) => r !== undefined)) continue;
    const { now } = d.ctx;
    for (const ticket of tickets) {
      d.remove(ticket);
      const { holder: _holder, ...rest } = ticket;
      const lock: LockRecord = {
        ...rest,
        id: `lk_${ticket.id.replace(/^wt_/, '')}`,
        host: holder.host,
        pid: holder.pid,
        started: holder.started,
        created_at: now,
        updated_at: now,
        expires_at: ticket.ttl_seconds === null ? null : now + ticket.ttl_seconds * 1000,
        status: 'active',
        fence: d.nextFence(),
        taker: waiterKey(ticket),
      };
      d.put(lock);
      d.record('handed_over', lock);
      d.handedOver(ticket.id, lock);
    }
  }
}

/** Takes a place in line (one ticket per scope, one number for the request), or keeps it fresh. */
export function queue(
  d: Decision,
  req: AcquireRequest,
  wait: WaitTicket,
  tickets: readonly LockRecord[],
  conflicts: readonly LockRecord[],
): void {
  const { caller, now } = d.ctx;
  if (tickets.length > 0) {
    // Refreshed well before it lapses, but not on every attempt: each write wakes every watcher.
    for (const record of tickets) {
      if (record.expires_at === null || record.expires_at - now < wait.ttlMs / 2) {
        d.put({ ...record, updated_at: now, expires_at: now + wait.ttlMs });
      }
    }
    return;
  }
  const place = d.nextFence();
  // Behind another request, the holder's release hands over to that one, which a store that
  // rebases (Redis) commits even when the holder has not seen this ticket: telling it costs a
  // message for nothing. First in line, the release must see this ticket to hand it over.
  if (!conflicts.some((record) => record.status === 'waiting')) {
    for (const record of conflicts) {
      if (record.status === 'active' && record.taker !== undefined) d.inform.add(record.taker);
    }
  }
  for (const target of req.targets) {
    const ticket: LockRecord = {
      id: `wt_${(d.ctx.newId?.() ?? d.ctx.newLock().id).replace(/^lk_/, '')}`,
      scope: target.scope.pattern,
      kind: target.scope.kind,
      mode: req.mode,
      agent_id: caller.agentId,
      parent_agent_id: caller.parentAgentId,
      intent: req.intent,
      tree: target.tree,
      host: wait.waiter.host,
      pid: wait.waiter.pid,
      started: wait.waiter.started,
      created_at: now,
      updated_at: now,
      expires_at: now + wait.ttlMs,
      ttl_seconds: req.ttlSeconds,
      status: 'waiting',
      fence: place,
      // Handed over in line by the decision that frees the way, unless files must be frozen
      // first (only the waiter can do that).
      ...(req.freeze === undefined ? { holder: caller.holder } : {}),
      frozen_paths: [],
      frozen_modes: [],
      notes: [],
      token_hash: wait.hash,
      checkout: target.scope.kind === 'path' ? req.checkout : undefined,
    };
    d.put(ticket);
    d.record('queued', ticket, { fence: null });
  }
}

/**
 * Queued and timeout name the request, one event per scope: by its tickets when it has them, else
 * as the request would have been queued.
 */
export function recordWaiting(
  d: Decision,
  type: 'queued' | 'timeout',
  req: AcquireRequest,
  tickets: readonly LockRecord[],
): void {
  if (tickets.length > 0) {
    for (const ticket of tickets) d.record(type, ticket, { fence: null });
    return;
  }
  const { caller, now } = d.ctx;
  for (const target of req.targets) {
    const request = {
      id: '',
      scope: target.scope.pattern,
      kind: target.scope.kind,
      mode: req.mode,
      agent_id: caller.agentId,
      parent_agent_id: caller.parentAgentId,
      intent: req.intent,
      tree: target.tree,
    };
    d.events.push(eventOf(type, request as LockRecord, now, caller.agentId, { fence: null }));
  }
}
