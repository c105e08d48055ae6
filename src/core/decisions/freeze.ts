/**
 * Freeze bookkeeping (acquire --enforce): the modes recorded for files a new lock freezes, the
 * `thawed` events of a step, and the files a committed step lets go of, which the store's caller
 * makes writable again (frozenDropped).
 */
import type { LockRecord } from '../lock.js';
import type { Decision } from './context.js';
import type { AcquireRequest, Changes, FrozenFile, StoreState } from './outcomes.js';

/**
 * Calls `visit` with each lock a step changed that had files frozen, and what became of it
 * (undefined: gone): the deleted ones first, then the written ones, in the step's order.
 */
function forEachUnfreezing(
  state: StoreState,
  del: readonly string[],
  put: readonly LockRecord[],
  visit: (before: LockRecord, after: LockRecord | undefined) => void,
): void {
  for (const id of del) {
    const before = state.locks.get(id);
    if (before !== undefined && before.frozen_paths.length > 0) visit(before, undefined);
  }
  for (const after of put) {
    const before = state.locks.get(after.id);
    if (before !== undefined && before.frozen_paths.length > 0) visit(before, after);
  }
}

/**
 * Per target of an acquire, the files to freeze with the mode to restore them to. A file another
 * lock already froze reads as read-only now: record the mode that lock saved, so the last lock to
 * let go restores the file's real mode.
 */
export function frozenFor(d: Decision, freeze: AcquireRequest['freeze']): (i: number) => FrozenFile[] {
  const original = new Map<string, number>();
  if (freeze) {
    for (const record of d.live()) {
      record.frozen_paths.forEach((file, i) => {
        original.set(file, record.frozen_modes?.[i] ?? 0o644);
      });
    }
  }
  return (i) => (freeze?.[i] ?? []).map((f) => ({ path: f.path, mode: original.get(f.path) ?? f.mode }));
}

/** Thawed: each lock this step let go of frozen files (released, broken, reaped or orphaned). */
export function recordThawed(
  d: Decision,
  state: StoreState,
  del: readonly string[],
  put: readonly LockRecord[],
): void {
  forEachUnfreezing(state, del, put, (before, after) => {
    const still = new Set(after?.frozen_paths ?? []);
    const files = before.frozen_paths.filter((file) => !still.has(file));
    if (files.length > 0) d.record('thawed', before, { files });
  });
}

/** Frozen files a decision lets go of (released, broken, reaped or orphaned locks): to be thawed. */
export function frozenDropped(state: StoreState, changes: Changes, host: string | null = null): FrozenFile[] {
  const dropped: FrozenFile[] = [];
  forEachUnfreezing(state, changes.del, changes.put, (before, after) => {
    if (host !== null && before.host !== host) return;
    const still = new Set(after?.frozen_paths ?? []);
    before.frozen_paths.forEach((file, i) => {
      if (!still.has(file)) dropped.push({ path: file, mode: before.frozen_modes?.[i] ?? 0o644 });
    });
  });
  if (dropped.length === 0) return dropped;
  // A file that a surviving lock still has frozen stays frozen until that lock lets go too.
  const removed = new Set(changes.del);
  const written = new Map(changes.put.map((r) => [r.id, r]));
  const stillFrozen = new Set<string>();
  for (const [id, record] of state.locks) {
    if (removed.has(id)) continue;
    for (const file of (written.get(id) ?? record).frozen_paths) stillFrozen.add(file);
  }
  for (const record of changes.put) {
    if (!state.locks.has(record.id)) for (const file of record.frozen_paths) stillFrozen.add(file);
  }
  return dropped.filter((f) => !stillFrozen.has(f.path));
}
