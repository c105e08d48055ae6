/** Watch listeners, as every store calls them: told safely, stopped once, notified in batches. */
import { createHash } from 'node:crypto';
import type { WatchListener } from '../backend.js';

/** Calls each listener (a copy of the set: one may remove itself); a listener's failure is its own. */
export function tell(listeners: Iterable<WatchListener>, touched: readonly string[] | null): void {
  for (const listener of [...listeners]) {
    try {
      listener(touched);
    } catch {
      // It must not reach the store, the connection or the other listeners.
    }
  }
}

/** The stopper a watch answers: takes `listener` out of `listeners`, the first time it is called. */
export function stopper(listeners: Set<WatchListener>, listener: WatchListener): () => Promise<void> {
  let listening = true;
  return async () => {
    if (!listening) return;
    listening = false;
    listeners.delete(listener);
  };
}

/**
 * Batches notifications: however often the answer is called before the next turn of the event
 * loop, `notify` runs once then (never inside the commit that caused it).
 */
export function coalesced(notify: () => void): () => void {
  let queued = false;
  return () => {
    if (queued) return;
    queued = true;
    setImmediate(() => {
      queued = false;
      notify();
    });
  };
}

const waiterTags = new Map<string, string>();

/**
 * A waiter key (core/decide waiterKey) as a short name safe for files and channels. Every commit
 * that hands a lock over names its waiters: the hashes of the few seen lately are kept.
 */
export function waiterTag(waiter: string): string {
  let tag = waiterTags.get(waiter);
  if (tag === undefined) {
    tag = createHash('sha256').update(waiter).digest('base64url').slice(0, 22);
    if (waiterTags.size >= 256) waiterTags.clear();
    waiterTags.set(waiter, tag);
  }
  return tag;
}
