import type { Decided, StoreEvent, StoreState, Tombstone } from '../../core/decide.js';
import { isEmpty } from '../../core/decide.js';
import { EVENTS_KEPT } from '../../core/events.js';
import type { LockRecord } from '../../core/lock.js';
import type { Backend, WatchListener } from '../backend.js';
import { coalesced, tell } from '../shared/listeners.js';
import { applyChanges } from '../shared/state.js';

/**
 * The in-process store, for the library and tests. Every handle returned by `connect()` shares the
 * one state, as processes share a folder; decisions run synchronously, so each is atomic.
 */
export class MemoryStore {
  private readonly state = { locks: new Map<string, LockRecord>(), fence: 0, tombstones: [] as Tombstone[] };
  private readonly log: StoreEvent[] = [];
  /** Events ever recorded: the next one's id. */
  private recorded = 0;
  private readonly listeners = new Set<WatchListener>();
  /** Wakes every watcher once, after the committing decision has returned (never inside it). */
  private readonly notify = coalesced(() => tell(this.listeners, null));

  connect(): Backend {
    let closed = false;
    const check = () => {
      if (closed) throw new Error('memory store handle is closed');
    };
    const watch = async (listener: WatchListener) => {
      check();
      let on = true;
      const wrapped = () => {
        if (on) listener(null);
      };
      this.listeners.add(wrapped);
      return async () => {
        on = false;
        this.listeners.delete(wrapped);
      };
    };
    return {
      kind: 'memory',
      location: 'memory',
      transact: async <T>(
        decide: (state: StoreState, now: number) => Decided<T>,
        clock: () => number = Date.now,
      ): Promise<T> => {
        check();
        const { result, changes } = decide(this.state, clock());
        const changed = !isEmpty(changes, this.state);
        applyChanges(this.state, changes);
        for (const event of changes.events) this.log.push({ ...event, id: String(++this.recorded) });
        if (this.log.length > 2 * EVENTS_KEPT) this.log.splice(0, this.log.length - EVENTS_KEPT);
        if (changed && this.listeners.size > 0) this.notify();
        return result;
      },
      watch,
      // In one process a wake-up costs nothing: every waiter hears every commit.
      watchWaiter: (_waiter: string, listener: WatchListener) => watch(listener),
      events: async (limit: number, after?: string) => {
        const from = after === undefined ? 0 : Number(after);
        return this.log.filter((event) => Number(event.id) > from).slice(-limit);
      },
      close: async () => {
        closed = true;
      },
    };
  }
}
