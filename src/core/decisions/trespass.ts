/**
 * Trespass: a shell command of one agent changed a file another agent holds, seen after the fact by
 * a post-tool hook (no parser can tell every writer beforehand). Two decisions: which locks of
 * others a command could trespass on (looked at before it runs), and the record of what it did.
 */
import type { StoreEvent } from '../events.js';
import type { Lock, LockRecord } from '../lock.js';
import { Decision, type DecisionContext } from './context.js';
import type { Decided, StoreState } from './outcomes.js';

/** What a stamp keeps of a lock: enough to name it, its holder and what it holds. */
export type HeldLock = Pick<
  Lock,
  'id' | 'scope' | 'kind' | 'mode' | 'agent_id' | 'parent_agent_id' | 'intent' | 'tree' | 'fence'
>;

/** The fields of a lock a stamp keeps, from any lock or record that has them (and more). */
export function heldLockOf(r: HeldLock): HeldLock {
  const { id, scope, kind, mode, agent_id, parent_agent_id, intent, tree, fence } = r;
  return { id, scope, kind, mode, agent_id, parent_agent_id, intent, tree, fence };
}

/**
 * A held lock with what tells whether it still stands at a later time (context.ts lockStands): a
 * hook keeps these between shell calls (integrations/held-cache.ts).
 */
export type HeldRecord = HeldLock &
  Pick<LockRecord, 'host' | 'pid' | 'started' | 'updated_at' | 'expires_at'> & { readonly claim?: true };

/**
 * The active path locks of `tree` that stand in the caller's way: every agent's but its own and its
 * parent's, as a check would answer (a child's lock stands in its parent's way too). Only the
 * fields a stamp keeps, and what tells whether each still stands: a hook reads this before every
 * shell command, and a full view of each lock (its times as text, its notes) was most of the cost
 * with a hundred locks held.
 */
export function decideHeldByOthers(
  state: StoreState,
  ctx: DecisionContext,
  req: { tree: string },
): Decided<HeldRecord[]> {
  const d = Decision.open(state, ctx);
  const { agentId, parentAgentId } = ctx.caller;
  const others: HeldRecord[] = [];
  for (const r of d.locks()) {
    if (
      !r.unreadable &&
      r.status === 'active' &&
      r.kind === 'path' &&
      r.tree === req.tree &&
      r.agent_id !== agentId &&
      r.agent_id !== parentAgentId
    ) {
      const { host, pid, started, updated_at, expires_at } = r;
      others.push({
        ...heldLockOf(r),
        host,
        pid,
        started,
        updated_at,
        expires_at,
        ...(r.claim === undefined ? {} : { claim: true as const }),
      });
    }
  }
  return d.done(others);
}

/** One held file a command changed, with the lock as it stood before the command ran. */
export interface Trespass {
  readonly file: string;
  readonly lock: HeldLock;
}

/**
 * Records a `trespassed` event per file: about the lock (its holder is the event's agent), by the
 * caller, the command as the reason. A lock released while the command ran is recorded as it stood
 * when the command started: it was held then.
 */
export function decideTrespass(
  state: StoreState,
  ctx: DecisionContext,
  req: { trespasses: readonly Trespass[]; command: string },
): Decided<StoreEvent[]> {
  const d = Decision.open(state, ctx);
  const recorded: StoreEvent[] = [];
  for (const { file, lock } of req.trespasses) {
    const live: LockRecord | undefined = d.locks().find((r) => r.id === lock.id && !r.unreadable);
    const about = live ?? lock;
    const event: StoreEvent = {
      at: ctx.now,
      type: 'trespassed',
      agent_id: about.agent_id,
      parent_agent_id: about.parent_agent_id,
      by: ctx.caller.agentId,
      scope: about.scope,
      kind: about.kind,
      tree: about.tree,
      mode: about.mode,
      fence: about.fence,
      lock_id: lock.id,
      intent: about.intent,
      reason: req.command,
      files: [file],
    };
    d.events.push(event);
    recorded.push(event);
  }
  return d.done(recorded);
}
