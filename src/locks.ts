/**
 * The library's entry: `openLocks()` opens a store (src/store) and acts in it as one identity.
 * A `Locks` is that session plus the store's history, repair and close; every decision is made by
 * the store, which thaws the files of the locks it drops.
 */
import type { RepairReport } from './backends/backend.js';
import type { StoreEvent } from './core/decide.js';
import {
  completeIdentity,
  type EventQuery,
  type IdentityOption,
  openStore,
  type StoreOptions,
} from './store/store.js';
import type { Session } from './store/session.js';

export type { AcquireOptions, ClaimOptions, Session } from './store/session.js';
export type { HoldOptions, HoldResult, WithLockResult } from './store/hold.js';
export type { EventQuery, IdentityOption, Store, StoreOptions } from './store/store.js';
export { openStore } from './store/store.js';

export interface OpenLocksOptions extends Omit<StoreOptions, 'host'> {
  /** Who is asking. Default: from the environment and the process tree (this process holds). */
  identity?: IdentityOption;
}

// The hook's trespass records are no part of the library's API.
export interface Locks extends Omit<Session, 'checkPaths' | 'heldByOthers' | 'recordTrespass'> {
  /**
   * The store's history (core/events), newest last: the last `limit` (50) events, or only those
   * after the event whose id is `after`, narrowed by time, agent and scope (scopes are read like
   * acquire's, relative to the tree).
   */
  events(query?: number | EventQuery): Promise<StoreEvent[]>;
  /** The test events() applies for `query`'s time, agent and scopes (a scope is checked at once). */
  eventFilter(query: EventQuery): (event: StoreEvent) => boolean;
  /**
   * Moves damage in the store aside (kept, timestamped) and goes on with what can be read: only
   * when a person asks. A store without damage is left as it is (`damage` empty).
   */
  repair(): Promise<RepairReport>;
  /** Closes the store (and so every session of it). */
  close(): Promise<void>;
}

export async function openLocks(options: OpenLocksOptions = {}): Promise<Locks> {
  const { identity: asked, ...rest } = options;
  const identity = completeIdentity(asked, options.env ?? process.env);
  const store = await openStore({ ...rest, host: identity.holder.host });
  return locksOf(store.as(identity));
}

/** A session with its store's history, repair and close: what `openLocks` hands out. */
export function locksOf(session: Session): Locks {
  const { store } = session;
  return {
    agent: session.agent,
    identity: session.identity,
    store,
    tree: session.tree,
    acquire: session.acquire,
    release: session.release,
    renew: session.renew,
    check: session.check,
    list: session.list,
    mine: session.mine,
    claim: session.claim,
    endClaims: session.endClaims,
    hold: session.hold,
    withLock: session.withLock,
    note: session.note,
    resume: session.resume,
    breakLock: session.breakLock,
    ask: session.ask,
    reply: session.reply,
    takeMail: session.takeMail,
    events: (query) => store.events(query),
    eventFilter: (query) => store.eventFilter(query),
    repair: () => store.repair(),
    close: () => store.close(),
  };
}
