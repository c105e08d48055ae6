/**
 * The Redis store's history stream read back as events. Each stream entry holds one commit's
 * events (at least one): the last `limit` entries hold the last `limit` events. An event's id is
 * its entry's id and its place in it (`ENTRY/i`).
 */
import type { StoreEvent } from '../../core/decide.js';
import { readEvent } from '../../core/events.js';

/** The stream entries as ioredis answers XREVRANGE: `[id, [field, value, ...]]`. */
type Entries = [id: string, fields: string[]][];

export function eventsOf(newestFirst: Entries, limit: number): StoreEvent[] {
  const events: StoreEvent[] = [];
  for (const [entry, fields] of [...newestFirst].reverse()) {
    let list: unknown;
    try {
      list = JSON.parse(fields[1] ?? '');
    } catch {
      // An unreadable entry is skipped: events are a record, not state.
      continue;
    }
    if (!Array.isArray(list)) continue;
    list.forEach((value, i) => {
      const event = readEvent(value, `${entry}/${i}`);
      if (event !== null) events.push(event);
    });
  }
  return events.slice(-limit);
}
