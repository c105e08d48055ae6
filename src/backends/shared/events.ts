/** Reading stored events back: what the stores share of core/events. */
import type { StoreEvent } from '../../core/decide.js';
import { readEvent } from '../../core/events.js';

/** An event with its place (`n`) in the store's history. */
export type NumberedEvent = StoreEvent & { readonly n: number };

/** The numbered events of a stored list (anything else in it is skipped: events are a record). */
export function numbered(list: unknown): NumberedEvent[] {
  if (!Array.isArray(list)) return [];
  const events: NumberedEvent[] = [];
  for (const value of list) {
    const n = (value as { n?: unknown } | null)?.n;
    const event = readEvent(value);
    if (event !== null && typeof n === 'number') events.push({ ...event, n });
  }
  return events;
}
