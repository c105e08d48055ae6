/**
 * Thawing inside the decision: a decision that drops a lock with frozen files (released, broken,
 * reaped from a dead holder, lapsed) makes them writable again before its changes are committed.
 * A crash in between leaves the records, and the next decision thaws again. The store applies this
 * to every decision, whoever asked: a git guard run that reaps a dead holder thaws its files too.
 */
import { type Decided, frozenDropped, type StoreState } from '../core/decide.js';
import { thaw } from '../host/freeze.js';

/**
 * `host`: frozen paths are paths on their holder's host, so a store shared across hosts (Redis)
 * thaws only this host's; null thaws every dropped path.
 */
export function thawDropped<T>(state: StoreState, decided: Decided<T>, host: string | null): Decided<T> {
  const dropped = frozenDropped(state, decided.changes, host);
  if (dropped.length > 0) thaw(dropped);
  return decided;
}

/**
 * The Redis store decides again after a lost compare-and-set, on a fresher snapshot: a run on a
 * stale one may see an `--enforce` lease as lapsed that the next run finds alive. Thawing inside such
 * a run restored the modes of a live lock's files. There, each run only notes what it would drop
 * (computed against its own snapshot, which the store may change once committed), and only the
 * last run's list, the one committed, is thawed, after the commit.
 */
export function thawAfterCommit<T>(
  transact: (decide: (state: StoreState, now: number) => Decided<T>) => Promise<T>,
  decide: (state: StoreState, now: number) => Decided<T>,
  host: string | null,
): Promise<T> {
  let dropped: ReturnType<typeof frozenDropped> = [];
  return transact((state, now) => {
    const decided = decide(state, now);
    dropped = frozenDropped(state, decided.changes, host);
    return decided;
  }).then((result) => {
    if (dropped.length > 0) thaw(dropped);
    return result;
  });
}
