/**
 * What the stores that keep a state in memory share: applying committed changes to it, standing in
 * for a record that cannot be read, and restarting fences from the clock when one may be lost.
 */
import type { Changes, Tombstone } from '../../core/decide.js';
import type { LockRecord } from '../../core/lock.js';
import { isLockRecord, unreadableRecord } from '../../core/lock.js';

/** The mutable state a store caches: its locks, fence counter and tombstones. */
export interface CachedState {
  locks: Map<string, LockRecord>;
  fence: number;
  tombstones: Tombstone[];
}

/** Applies committed changes to a mutable state. */
export function applyChanges(
  state: CachedState,
  changes: Pick<Changes, 'put' | 'del' | 'fence' | 'tombstones'>,
): void {
  for (const id of changes.del) state.locks.delete(id);
  for (const record of changes.put) state.locks.set(record.id, record);
  state.fence = Math.max(state.fence, changes.fence);
  if (changes.tombstones !== null) state.tombstones = changes.tombstones;
}

/**
 * The lowest fence that is safe when the counter may have been lost (a line or snapshot that cannot
 * be read, a log removed, a repair): the clock in microseconds, which exceeds every counter that
 * grew by less than one grant per microsecond, so no grant reuses a fence granted before.
 */
export function fenceFromClock(now: number): number {
  return now * 1000;
}

/**
 * The records of a list read from storage. One that cannot be read becomes an unreadable record
 * (it blocks every scope until someone breaks it: we cannot know what it granted), under its own id
 * when that can be read, else `<from>-<index>`; `onUnreadable` is told.
 */
export function readRecords(
  list: unknown,
  from: string,
  now: number,
  onUnreadable: () => void,
): LockRecord[] {
  return (Array.isArray(list) ? list : []).map((value, i) => {
    if (isLockRecord(value)) return value;
    onUnreadable();
    const id =
      typeof (value as { id?: unknown })?.id === 'string' ? (value as { id: string }).id : `${from}-${i}`;
    return unreadableRecord(id, now);
  });
}
