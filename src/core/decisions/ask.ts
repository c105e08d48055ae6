/**
 * Asking a holder: an agent leaves a request on the locks (or claims) of others that hold a scope,
 * the holder answers with a reply, and each message reaches its addressee once, on that agent's
 * next hook call. Messages live on the lock records themselves (so they travel with the store, on
 * every host of a Redis store); a lock that ends leaves a notice for its askers (context.ts).
 */
import type { LockRecord, Mail } from '../lock.js';
import { recordScope } from '../lock.js';
import { scopesOverlap } from '../scope.js';
import { NO_TICKETS, owns, scan } from './conflicts.js';
import { Decision, type DecisionContext } from './context.js';
import { type Decided, type Outcome, outcome, type StoreState, type Target } from './outcomes.js';

/**
 * `asked`: the request was left on every lock of another agent that holds the scope; `free`: no
 * one holds it; `mine`: only the caller (or its family) does; `full`: one of those locks already
 * has as many undelivered messages as it may keep (nothing left anywhere).
 */
export type AskStatus = 'asked' | 'free' | 'mine' | 'full';
/** `replied`: the answer waits for the asker; `not_found`: no request of that agent is on the caller's locks. */
export type ReplyStatus = 'replied' | 'not_found' | 'full';

/** Messages a lock keeps at most (delivered ones go first when a new one needs the room). */
export const MAIL_KEPT = 16;

/** Undelivered messages on a record. */
function waiting(record: LockRecord): number {
  let n = 0;
  for (const m of record.mail ?? []) if (m.delivered_at === null) n++;
  return n;
}

/** The record's messages with `added`, dropping the oldest delivered ones past MAIL_KEPT. */
function withMail(record: LockRecord, added: Mail): LockRecord {
  const mail = [...(record.mail ?? []), added];
  while (mail.length > MAIL_KEPT) {
    const i = mail.findIndex((m) => m.delivered_at !== null);
    if (i === -1) break;
    mail.splice(i, 1);
  }
  return { ...record, mail };
}

export function decideAsk(
  state: StoreState,
  ctx: DecisionContext,
  req: { targets: readonly Target[]; text: string; maxWaiting: number },
): Decided<Outcome<AskStatus>> {
  const d = Decision.open(state, ctx);
  const { caller, now } = ctx;
  // Only a live holder can be told: an orphan's or an unreadable record's holder is gone or unknown.
  const held = scan(d, caller, req.targets, 'exclusive', NO_TICKETS).conflicts.filter(
    (r) => !r.unreadable && r.status === 'active',
  );
  if (held.length === 0) {
    // Held by the caller's own family only (itself, its parent, its sub-agents): nobody else to ask.
    const family = d
      .locks()
      .some(
        (r) =>
          !r.unreadable &&
          r.status === 'active' &&
          (r.agent_id === caller.agentId ||
            r.agent_id === caller.parentAgentId ||
            r.parent_agent_id === caller.agentId) &&
          req.targets.some(
            (t) => r.kind === t.scope.kind && r.tree === t.tree && scopesOverlap(recordScope(r), t.scope),
          ),
      );
    return d.done(outcome(family ? 'mine' : 'free'));
  }
  const full = held.filter((r) => waiting(r) >= req.maxWaiting);
  if (full.length > 0)
    return d.done(
      outcome(
        'full',
        [],
        full.map((r) => d.view(r)),
      ),
    );
  const asked = held.map((record) => {
    const next = withMail(record, {
      type: 'ask',
      from: caller.agentId,
      to: record.agent_id,
      text: req.text,
      at: now,
      delivered_at: null,
    });
    d.put(next);
    d.record('asked', record, { reason: req.text });
    return next;
  });
  return d.done(
    outcome(
      'asked',
      asked.map((r) => d.view(r)),
    ),
  );
}

/**
 * The caller answers `to`: left on the newest of the caller's (or its children's) locks that carries
 * a request of `to`, for `to`'s next hook call.
 */
export function decideReply(
  state: StoreState,
  ctx: DecisionContext,
  req: { to: string; text: string; maxWaiting: number },
): Decided<Outcome<ReplyStatus>> {
  const d = Decision.open(state, ctx);
  const { caller, now } = ctx;
  const asked = d
    .locks()
    .filter(
      (r) =>
        r.status === 'active' &&
        owns(r, caller, null) &&
        (r.mail ?? []).some((m) => m.type === 'ask' && m.from === req.to),
    );
  const newest = asked
    .map((r) => ({ r, at: Math.max(...(r.mail ?? []).filter((m) => m.from === req.to).map((m) => m.at)) }))
    .sort((a, b) => b.at - a.at)[0]?.r;
  if (newest === undefined) return d.done(outcome('not_found'));
  if (waiting(newest) >= req.maxWaiting) return d.done(outcome('full', [], [d.view(newest)]));
  const next = withMail(newest, {
    type: 'reply',
    from: caller.agentId,
    to: req.to,
    text: req.text,
    at: now,
    delivered_at: null,
  });
  d.put(next);
  d.record('replied', newest, { reason: `to ${req.to}: ${req.text}` });
  return d.done(outcome('replied', [d.view(next)]));
}

/** One message handed to its addressee: a request, an answer, or the end of a lock it asked about. */
export interface Delivered {
  readonly type: 'ask' | 'reply' | 'freed';
  /** The asker (ask), the holder (reply, freed). */
  readonly from: string;
  readonly scope: string;
  readonly text: string;
  readonly at: number;
}

/**
 * Is anything waiting for `agentId`? Read from the snapshot a decision has open anyway (the hook's
 * check or claim): a hook call with nothing waiting costs no more than this loop.
 */
export function mailWaiting(d: Decision, agentId: string): boolean {
  for (const record of d.locks()) {
    const mail = record.mail;
    if (mail === undefined) continue;
    for (const m of mail) if (m.to === agentId && m.delivered_at === null) return true;
  }
  for (const t of d.currentTombstones()) if (t.askers?.includes(agentId)) return true;
  return false;
}

/**
 * Hands the caller every message addressed to it, marking each delivered in this same step: of two
 * hook calls of one agent at once, only one gets them; another agent's call never takes them.
 */
export function decideTakeMail(state: StoreState, ctx: DecisionContext): Decided<Delivered[]> {
  const d = Decision.open(state, ctx);
  const { caller, now } = ctx;
  const me = caller.agentId;
  const taken: Delivered[] = [];
  for (const record of d.locks()) {
    if (record.mail === undefined || !record.mail.some((m) => m.to === me && m.delivered_at === null))
      continue;
    const mail = record.mail.map((m) => {
      if (m.to !== me || m.delivered_at !== null) return m;
      taken.push({ type: m.type, from: m.from, scope: record.scope, text: m.text, at: m.at });
      return { ...m, delivered_at: now };
    });
    d.put({ ...record, mail });
  }
  const tombstones = d.currentTombstones();
  if (tombstones.some((t) => t.askers?.includes(me))) {
    const kept = tombstones.flatMap((t) => {
      if (!t.askers?.includes(me)) return [t];
      const reply = t.replies?.[me];
      if (reply !== undefined)
        taken.push({ type: 'reply', from: t.holder ?? '', scope: t.scope, text: reply, at: t.at });
      taken.push({ type: 'freed', from: t.holder ?? '', scope: t.scope, text: t.why ?? '', at: t.at });
      const askers = t.askers.filter((a) => a !== me);
      if (askers.length === 0) return [];
      const { [me]: _told, ...replies } = t.replies ?? {};
      return [{ ...t, askers, replies }];
    });
    d.setTombstones(kept);
  }
  return d.done(taken.sort((a, b) => a.at - b.at));
}
