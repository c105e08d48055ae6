import type { Decided, StoreEvent, StoreState } from '../core/decide.js';

export type BackendKind = 'memory' | 'file' | 'redis';

/** What `repair` found and did. */
export interface RepairReport {
  /** What was wrong, one line each; empty when nothing was. */
  readonly damage: readonly string[];
  /** Where the damaged data was kept. */
  readonly keptAt: readonly string[];
  /** Locks the repaired store still holds (read from the undamaged part). */
  readonly locksKept: number;
}

/**
 * Called after a commit: with the ids of the records it touched when the store knows them (Redis
 * publishes them), else null (something changed). A lease whose records were not touched may
 * skip its check.
 */
export interface TransactOptions {
  /**
   * A decision that changes nothing may be answered without asking the store (Redis: from this
   * handle's snapshot, which may be behind; file: from the log read without the mutex): for a
   * waiter that a wake-up told its locks were handed over. A "held" answered so is not trusted:
   * the waiter asks the store again at once. `'whole'`, for an answer that permits (a hook's
   * "free"): the file store answers without its mutex only from a log it read whole, to its last
   * byte, undamaged, so a cut or torn tail goes to the mutex and fails closed there.
   */
  readonly cached?: boolean | 'whole';
  /**
   * The conflict domains (core/domains) of the scopes the decision is about: it reads and writes
   * nothing else. A store that versions domains (Redis) decides on their records only and compares
   * only their versions, so that decisions on unrelated scopes commit independently; one that
   * would change a record outside them is made again on the whole store. Others ignore it.
   * Absent: the decision may read anything (list, release --all, by id).
   */
  readonly domains?: readonly string[];
}

export type WatchListener = (touched: readonly string[] | null) => void;

/**
 * A store of locks. Its one obligation: `transact` runs `decide` on a consistent snapshot, at the
 * store's own time, and commits the changes it returns as one indivisible step, against every
 * other process. `decide` may run more than once (a Redis store decides again on a lost race);
 * only the last run's changes are committed.
 */
export interface Backend {
  readonly kind: BackendKind;
  /** Where the store is, for messages: a folder, or a URL without its password. */
  readonly location: string;
  /** Redis: the key prefix (namespace) of this store on its server; others share the server. */
  readonly namespace?: string;
  /**
   * `now` is the store's clock (the server's for Redis). `clock` replaces it, for tests that move
   * time by hand; a Redis store then trusts the caller's clock instead of checking it.
   */
  transact<T>(
    decide: (state: StoreState, now: number) => Decided<T>,
    clock?: () => number,
    options?: TransactOptions,
  ): Promise<T>;
  /**
   * Calls `listener` soon after any process commits a change to the store: best effort and
   * coalesced, so waiters wake promptly but still poll. Resolves to a function that stops it.
   * Memory: in-process; file: fs.watch on the store folder with a polling fallback; Redis: pub/sub.
   * `domains` (core/domains, each exactly, not its subtree): only commits that change records of
   * those domains need be told, or of the whole store's domain (records that cannot be read); a
   * store may tell more. Redis then listens on those domains' channels only, so that a lease does
   * not wake on every commit of every agent. Absent or empty: every commit. Memory and file ignore it.
   */
  watch(listener: WatchListener, domains?: readonly string[]): Promise<() => Promise<void>>;
  /**
   * Calls `listener` soon after a commit names this waiting process (a waiterKey) in its
   * `changes.wake`: it handed the process's request its locks, or freed its way. Unlike watch(),
   * other commits stay silent, so waiters in line do not all wake on every hand-off. Best effort:
   * waiters still poll. Memory: in-process; file: a wake file per process under the store folder;
   * Redis: a channel per process.
   */
  watchWaiter(waiter: string, listener: WatchListener): Promise<() => Promise<void>>;
  /**
   * Moves what cannot be read aside (kept, timestamped) and lets the store go on with the rest:
   * only when a person asks (`alock repair`). Absent on stores that cannot be damaged (memory).
   */
  repair?(): Promise<RepairReport>;
  /**
   * The store's history (core/events), newest last: the last `limit` events, only those recorded
   * after the event whose id is `after` when given. Each carries its id.
   */
  events(limit: number, after?: string): Promise<StoreEvent[]>;
  close(): Promise<void>;
}
