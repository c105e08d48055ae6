/** Reading stored events back: what the stores share of core/events. */
import type { StoreEvent } from '../../core/decide.js';
import { readEvent } from '../../core/events.js';

/** An event with its place (`n`) in the store's history. */
export type NumberedEvent = StoreEvent & { readonly n: number };

/** A number an event can have: a whole number from 1 up, exact as a double. */
export function isEventNumber(n: unknown): n is number {
  return Number.isSafeInteger(n) && (n as number) > 0;
}

/** The numbered events of a stored list (anything else in it is skipped: events are a record). */
export function numbered(list: unknown): NumberedEvent[] {
  if (!Array.isArray(list)) return [];
  const events: NumberedEvent[] = [];
  for (const value of list) {
    const n = (value as { n?: unknown } | null)?.n;
    const event = readEvent(value);
    if (event !== null && isEventNumber(n)) events.push({ ...event, n });
  }
  return events;
}
