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
