/**
 * The store's history: every change a decision makes is an event, returned with its other changes
 * so that the store writes both in one atomic step (a crash can never keep one without the other).
 */
import type { LockRecord, Mode } from './lock.js';
import { type Scope, scopeFromPattern, scopesOverlap } from './scope.js';

export const EVENT_TYPES = [
  'acquired',
  'already_mine',
  'queued',
  'handed_over',
  'timeout',
  'released',
  'renewed',
  'expired',
  'reaped',
  'orphaned',
  'resumed',
  'noted',
  'broken',
  'frozen',
  'thawed',
  'claimed',
  /** A shell command of another agent changed a held file (seen by a post-tool hook). */
  'trespassed',
  /** Another agent left a request on the lock (`by` the asker, `reason` its text). */
  'asked',
  /** The holder answered an asker (`reason`: `to ASKER: text`). */
  'replied',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

export interface StoreEvent {
  /**
   * The event's place in the store's history, set by the store when it reads the event back: an
   * opaque cursor (a number in the file and memory stores, a stream id in Redis). Later events
   * have later ids in one store.
   */
  readonly id?: string;
  /** The store's clock, epoch milliseconds. */
  readonly at: number;
  readonly type: EventType;
  /** The lock's holder (a waiting request's agent for queued and timeout). */
  readonly agent_id: string;
  readonly parent_agent_id: string | null;
  /** Who made the change, when not the holder: the breaker, the reaper, the one who released it. */
  readonly by: string | null;
  readonly scope: string;
  readonly kind: 'path' | 'resource';
  /** Tree key for path scopes; null for resources. */
  readonly tree: string | null;
  readonly mode: Mode;
  /** The lock's fence; null for a waiting request (its number is a place in line, not a fence). */
  readonly fence: number | null;
  readonly lock_id: string;
  readonly intent: string | null;
  /** Why: the break's reason, the note's text, what reaped or orphaned it, a trespass's command. */
  readonly reason: string | null;
  /** Frozen and thawed: the files; trespassed: the held file that was changed. */
  readonly files?: readonly string[];
}

/** The event of `type` about `record`; `by` is null when it is the holder itself (but for a break). */
export function eventOf(
  type: EventType,
  record: LockRecord,
  at: number,
  by: string | null,
  extra: { reason?: string | null; files?: readonly string[]; fence?: number | null } = {},
): StoreEvent {
  return {
    at,
    type,
    agent_id: record.agent_id,
    parent_agent_id: record.parent_agent_id,
    // Who broke a lock is the point of a break, also when it was the holder.
    by: by === record.agent_id && type !== 'broken' ? null : by,
    scope: record.scope,
    kind: record.kind,
    tree: record.tree,
    mode: record.mode,
    fence: extra.fence === undefined ? record.fence : extra.fence,
    lock_id: record.id,
    intent: record.intent,
    reason: extra.reason ?? null,
    ...(extra.files === undefined ? {} : { files: extra.files }),
  };
}

const TYPES = new Set<string>(EVENT_TYPES);

const str = (value: unknown): string | null => (typeof value === 'string' ? value : null);

/**
 * An event as read back from a store, or null when it is not one (a torn or foreign line: events
 * are a record, not state, so it is skipped). Breaks recorded before every change was an event
 * (`{type: 'break', by, reason, lock}`) read as `broken`.
 */
export function readEvent(value: unknown, id?: string): StoreEvent | null {
  if (typeof value !== 'object' || value === null) return null;
  const raw = value as Record<string, unknown>;
  if (typeof raw.at !== 'number') return null;
  const withId = id === undefined ? {} : { id };
  if (raw.type === 'break' && typeof raw.lock === 'object' && raw.lock !== null) {
    const lock = raw.lock as Record<string, unknown>;
    return {
      ...withId,
      at: raw.at,
      type: 'broken',
      agent_id: str(lock.agent_id) ?? '<unknown>',
      parent_agent_id: null,
      by: str(raw.by),
      scope: str(lock.scope) ?? '',
      kind: str(lock.scope)?.startsWith('@') ? 'resource' : 'path',
      tree: null,
      mode: 'exclusive',
      fence: typeof lock.fence === 'number' ? lock.fence : null,
      lock_id: str(lock.id) ?? '',
      intent: null,
      reason: str(raw.reason),
    };
  }
  if (typeof raw.type !== 'string' || !TYPES.has(raw.type)) return null;
  if (typeof raw.agent_id !== 'string' || typeof raw.scope !== 'string') return null;
  const files = Array.isArray(raw.files)
    ? raw.files.filter((f): f is string => typeof f === 'string')
    : undefined;
  return {
    ...withId,
    at: raw.at,
    type: raw.type as EventType,
    agent_id: raw.agent_id,
    parent_agent_id: str(raw.parent_agent_id),
    by: str(raw.by),
    scope: raw.scope,
    kind: raw.kind === 'resource' ? 'resource' : 'path',
    tree: str(raw.tree),
    mode: raw.mode === 'shared' ? 'shared' : 'exclusive',
    fence: typeof raw.fence === 'number' ? raw.fence : null,
    lock_id: str(raw.lock_id) ?? '',
    intent: str(raw.intent),
    reason: str(raw.reason),
    ...(files === undefined ? {} : { files }),
  };
}

/** How many events a store keeps at least (the file store's rotation, Redis's stream trim). */
export const EVENTS_KEPT = 10_000;

/** Which events a reader wants (all given conditions hold). */
export interface EventFilter {
  /** Recorded at or after this time (epoch ms, the store's clock). */
  readonly since?: number;
  /** About this agent: held or waited for by it or a child of it, or done by it. */
  readonly agent?: string;
  /** About a lock whose scope overlaps one of these (paths only within the same tree). */
  readonly targets?: readonly { readonly scope: Scope; readonly tree: string | null }[];
}

export function eventMatches(event: StoreEvent, filter: EventFilter): boolean {
  if (filter.since !== undefined && event.at < filter.since) return false;
  const agent = filter.agent;
  if (
    agent !== undefined &&
    event.agent_id !== agent &&
    event.parent_agent_id !== agent &&
    event.by !== agent
  )
    return false;
  if (filter.targets === undefined) return true;
  return filter.targets.some((target) => {
    if (target.scope.kind !== event.kind) return false;
    if (event.kind === 'resource') return target.scope.pattern === event.scope;
    if (event.tree !== target.tree) return false;
    try {
      return scopesOverlap(scopeFromPattern(event.scope, 'path'), target.scope);
    } catch {
      return false;
    }
  });
}
