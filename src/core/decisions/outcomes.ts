/**
 * What decisions take and give back: the store snapshot a decision reads (StoreState), the
 * changes it hands the store to commit (Changes), the requests, and the typed outcomes with their
 * statuses. Types only, plus the two helpers every verb and store shares (outcome, isEmpty).
 */
import type { StoreEvent } from '../events.js';
import type { Checkout, Holder, Lock, LockRecord, Mode } from '../lock.js';
import type { Scope } from '../scope.js';

/** A scope together with the tree it belongs to (null for resources). */
export interface Target {
  readonly scope: Scope;
  readonly tree: string | null;
  /**
   * A path target in a git checkout: the host and real path of that checkout. Records taken in the
   * same checkout meet it whatever tree key they were taken under (AGENT_LOCK_TREE set for one
   * agent and not another): one checkout is one tree.
   */
  readonly checkout?: { readonly host: string; readonly worktree: string };
}

/** A lease that expired: remembered for a while so that its holder's `renew` answers `expired`. */
export interface Tombstone {
  readonly scope: string;
  readonly tree: string | null;
  readonly agent_id: string;
  readonly token_hash: string;
  readonly fence: number;
  readonly at: number;
  /**
   * On a notice left by a lock that ended while others had asked its holder (agent_id and
   * token_hash are then empty, so no renew ever matches it): the askers not yet told that its
   * scope is free, the holder, and why it ended.
   */
  readonly askers?: readonly string[];
  readonly holder?: string;
  readonly why?: string;
  /** The holder's answers those askers had not heard yet, by asker. */
  readonly replies?: Readonly<Record<string, string>>;
}

export interface StoreState {
  readonly locks: ReadonlyMap<string, LockRecord>;
  /** The largest fence ever granted by this store. */
  readonly fence: number;
  readonly tombstones: readonly Tombstone[];
}

export interface Changes {
  readonly put: LockRecord[];
  readonly del: string[];
  readonly fence: number;
  /** The whole new tombstone list, or null when unchanged. */
  readonly tombstones: Tombstone[] | null;
  readonly events: StoreEvent[];
  /**
   * The waiting processes this step concerns (see waiterKey): it handed them their locks, or freed
   * their way for a decision only they can make. The store tells just them, not every watcher.
   * Absent: nobody to tell.
   */
  readonly wake?: string[];
  /**
   * The processes that took (while waiting) the locks this step queued a new request behind, when
   * it is first in line: their next step is most likely the release, which must hand over to it. A
   * store that keeps a snapshot per process (Redis) sends them this step, so that the release needs
   * no second round trip. Stores without one ignore it. Absent: nobody.
   */
  readonly inform?: string[];
  /**
   * Present when new tickets (waiting records queued behind every other one) are all the store could
   * have gained since the snapshot without changing this step, unless a ticket is of one of these
   * agents (as agent or as child). It holds for a step that only hands locks over in line, each
   * freed lock to an exclusive one on the same scope: a later ticket that waited for the old lock
   * waits for the new one (see rebaseAgents). Only releases say so: their answers do not depend on
   * tickets, while a look (list, check, a refused acquire) whose reaping handed a lock over would
   * answer from the snapshot. A store that commits by compare-and-set (Redis) may then apply the
   * step to a newer store instead of sending it back. Absent: it may not.
   */
  readonly rebase?: string[];
}

/** Something the caller should know that changes nothing about the answer (status, exit code). */
export interface Warning {
  /** Stable, `W_` plus a name (W_OTHER_WORKTREE). */
  readonly code: string;
  readonly message: string;
  readonly [detail: string]: unknown;
}

export interface Outcome<S extends string> {
  readonly status: S;
  readonly locks: Lock[];
  readonly conflicts: Lock[];
  /** Absent when there is nothing to warn about. */
  readonly warnings?: Warning[];
  /**
   * `release` of several scopes: those with no lock on exactly that scope, as normalised patterns
   * (the released ones are in `locks`, the refused ones' locks in `conflicts`).
   */
  readonly notFound?: readonly string[];
  /**
   * A hook's check or claim: messages wait for the caller (decisions/ask.ts), seen in the same
   * snapshot; the hook then takes them. Absent when none waits.
   */
  readonly mail?: true;
}

/** `other_worktree`: AGENT_LOCK_WORKTREES=block and another worktree of the repository holds an overlap. */
export type AcquireStatus =
  | 'acquired'
  | 'already_mine'
  | 'held'
  | 'parent_scope'
  | 'interrupted'
  | 'timeout'
  | 'other_worktree';
export type ReleaseStatus = 'released' | 'not_found' | 'refused';
export type RenewStatus = 'renewed' | 'expired' | 'not_found' | 'refused';
export type CheckStatus = 'free' | 'mine' | 'held' | 'other_worktree';
export type ListStatus = 'listed';
/** What a lease learns of its locks: all still there (`mine`), lapsed (`expired`), or gone. */
export type LeaseCheckStatus = 'mine' | 'expired' | 'not_found';
export type NoteStatus = 'noted' | 'not_found' | 'refused';
export type ResumeStatus = 'resumed' | 'not_found' | 'held';
export type BreakStatus = 'broken' | 'not_found';

/** `list` and `mine` also show the queue: tickets of waiting requests, never counted as locks. */
export interface ListOutcome extends Outcome<ListStatus> {
  readonly waiting: Lock[];
}

export interface Decided<T> {
  readonly result: T;
  readonly changes: Changes;
}

/** A file to make read-only for a lock, with the mode to restore it to. */
export interface FrozenFile {
  readonly path: string;
  readonly mode: number;
}

export interface AcquireRequest {
  readonly targets: readonly Target[];
  /** With --enforce: per target, the files to freeze once the claim is won (recorded before touched). */
  readonly freeze?: readonly (readonly FrozenFile[])[];
  readonly mode: Mode;
  readonly intent: string | null;
  readonly ttlSeconds: number | null;
  /** Set by a waiting acquire: its place in line, kept in the store while it waits. */
  readonly wait?: WaitTicket;
  /** Inside git: recorded on the path locks (and tickets) it makes, for the worktree rule (worktrees.ts). */
  readonly checkout?: Checkout;
}

/**
 * A waiting request's ticket. Arrival order is ticket order: a request conflicts with the earlier
 * tickets that overlap it (as their locks would), so a queued wide claim is not starved by a stream
 * of narrow ones, whoever asks and on whichever host.
 */
export interface WaitTicket {
  /** sha256 of the waiter's ticket secret: finds its tickets again on every attempt. */
  readonly hash: string;
  /** The waiting process (not the lock holder): its death on this host frees the place at once. */
  readonly waiter: Holder;
  /** Ticket lease: a waiter elsewhere that stops refreshing its ticket loses its place. */
  readonly ttlMs: number;
  /** The deadline has come: answer `timeout` instead of `held`, and leave the line. */
  readonly last: boolean;
  /** The ticket secret (its hash is `hash`): the token of locks handed over to this request. */
  readonly secret: string;
}

/** One lock of a lease: found again by id, and proven by its token's hash (null: by the caller's id). */
export interface LeaseRef {
  readonly id: string;
  readonly tokenHash: string | null;
}

export function outcome<S extends string>(status: S, locks: Lock[] = [], conflicts: Lock[] = []): Outcome<S> {
  return { status, locks, conflicts };
}

/** True when the changes would write nothing (reads need no commit). */
export function isEmpty(changes: Changes, state: StoreState): boolean {
  return (
    changes.put.length === 0 &&
    changes.del.length === 0 &&
    changes.fence === state.fence &&
    changes.tombstones === null &&
    changes.events.length === 0
  );
}
