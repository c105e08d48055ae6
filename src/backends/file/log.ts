/**
 * Reading `locks.log` into the state a handle caches, and the events its lines carry (see
 * file-store.ts for the log's shape). Reading only, but for moveEvents, which the mutex holder
 * calls at compaction and repair.
 */
import { closeSync, fstatSync, renameSync } from 'node:fs';
import { EVENTS_KEPT, readEvent } from '../../core/events.js';
import type { Tombstone } from '../../core/decide.js';
import type { LockRecord } from '../../core/lock.js';
import { unreadableRecord } from '../../core/lock.js';
import { isEventNumber, type NumberedEvent, numbered } from '../shared/events.js';
import { applyChanges, type CachedState, fenceFromClock, readRecords } from '../shared/state.js';
import { damaged, looksLikeTornCommit } from './log-damage.js';
import { openAppend, openRead, readRange, writeAll } from './safe-fs.js';

export const NEWLINE = 0x0a;

/** events.log is rotated once it holds EVENTS_KEPT events and at least this many bytes. */
const EVENTS_ROTATE_BYTES = 4 << 20;

/** The state a handle caches, read from the log, and where in the log it stands. */
export interface Cache extends CachedState {
  /**
   * Read handle on the log this cache was built from. Holding it open pins the inode: a replaced
   * log's inode number cannot be reused while we hold the old one, so `ino` equal to the path's
   * inode really means the same file (write-aside plus rename alternates two numbers on ext4).
   */
  fd: number;
  ino: number;
  size: number;
  /**
   * The log's mtime when the cache last matched it: a log rewritten in place to the same size (by
   * hand, by a tool) is read again, not answered from the cache.
   */
  mtime: number;
  /** Size of the snapshot line the log starts with: compaction is due when the log outgrows it. */
  snapshotBytes: number;
  lines: number;
  /** Lines that could not be read were applied (as `<unknown>` locks): keep the log at compaction. */
  damaged: boolean;
  /** The number of the last event recorded (in this log or moved to events.log before it). */
  eventSeq: number;
  /**
   * Events in this log's lines (not yet moved to events.log), each with its number `n`; read
   * through pendingEvents(), which first reads the lists in `unread`.
   */
  pending: NumberedEvent[];
  /**
   * Event lists of lines applied but not yet read as events: only a commit or a compaction needs
   * them, and a hook's check, which reads the whole log and writes nothing, must not pay for them.
   */
  unread: unknown[][];
}

/** The events of the log's lines not yet moved to events.log, in order (see Cache.unread). */
export function pendingEvents(cache: Cache): NumberedEvent[] {
  for (const list of cache.unread) cache.pending.push(...numbered(list));
  cache.unread = [];
  return cache.pending;
}

/** What reading a log needs to know: where it is (for messages) and the store's clock. */
export interface LogReading {
  readonly logPath: string;
  readonly now: () => number;
}

/** A cache with nothing read yet: `fd`, `ino` and `mtime` of the log it will read, the rest zero. */
export function emptyCache(
  log: { fd: number; ino: number; mtime: number },
  from: { fence?: number; eventSeq?: number } = {},
): Cache {
  return {
    ...log,
    size: 0,
    snapshotBytes: 0,
    lines: 0,
    locks: new Map(),
    fence: from.fence ?? 0,
    tombstones: [],
    damaged: false,
    eventSeq: from.eventSeq ?? 0,
    pending: [],
    unread: [],
  };
}

/** Applies complete lines; a torn last line (its writer died mid-write) is cut off. */
export function applyBytes(
  log: LogReading,
  cache: Cache,
  bytes: Buffer,
  offset: number,
  repair = true,
  salvage = false,
): void {
  const end = bytes.lastIndexOf(NEWLINE) + 1;
  let start = 0;
  while (start < end) {
    const stop = bytes.indexOf(NEWLINE, start);
    applyLine(log, cache, bytes.subarray(start, stop).toString('utf8'), offset + start, salvage);
    cache.lines += 1;
    start = stop + 1;
  }
  cache.size = offset + end;
  // Without the mutex a partial last line may be a write in progress. Under it, it is damage: the
  // taker of a dead writer's mutex cuts that writer's torn commit before anyone else gets in.
  if (repair && end < bytes.length) {
    const tail = bytes.subarray(end);
    throw damaged(
      log.logPath,
      looksLikeTornCommit(tail)
        ? 'ends in a partial commit that no crashed writer left (cut short)'
        : 'ends in bytes that are no commit (overwritten)',
    );
  }
}

/** A UTF-8 byte-order mark, as a string reads it: an editor may put one before the first line. */
const BOM = '\uFEFF';

/**
 * Applies one line. `salvage` is repair's reading: every lock a line can give is kept, whatever
 * precedes it on its line (a line is read from its first `{"t":"` when it cannot be read whole), and
 * a snapshot found below the first line adds its locks instead of replacing the ones before it.
 */
function applyLine(log: LogReading, cache: Cache, text: string, offset: number, salvage = false): void {
  const now = log.now();
  // A byte-order mark before the first line is read through: the line after it is whole.
  let line = offset === 0 && text.startsWith(BOM) ? text.slice(BOM.length) : text;
  if (salvage && !isJsonObject(line) && line.indexOf('{"t":"') > 0) {
    line = line.slice(line.indexOf('{"t":"'));
    cache.damaged = true;
  }
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(line) as Record<string, unknown>;
    if (typeof entry !== 'object' || entry === null || typeof entry.fence !== 'number')
      throw new Error('shape');
    // Only these two shapes are ever written: a snapshot as the log's first line, commits after
    // it. Anything else (a snapshot further down would wipe every lock before it) is damage.
    const snapshot = entry.t === 'snap' && (offset === 0 || salvage) && Array.isArray(entry.locks);
    const commit =
      entry.t === 'tx' &&
      Array.isArray(entry.put) &&
      Array.isArray(entry.del) &&
      (entry.del as unknown[]).every((id) => typeof id === 'string');
    if (!snapshot && !commit) throw new Error('shape');
  } catch {
    // We cannot know what this line granted: fail closed until someone breaks it. Nor which fence
    // it took (a lost snapshot even took the counter), so fences restart from the clock, above
    // anything granted before: the next grant must not reuse the fence of the grant we lost.
    const id = `corrupt-${offset}`;
    cache.locks.set(id, unreadableRecord(id, now));
    cache.fence = Math.max(cache.fence, fenceFromClock(now));
    cache.damaged = true;
    return;
  }
  const records = (list: unknown, from: string): LockRecord[] =>
    readRecords(list, from, now, () => {
      cache.damaged = true;
    });
  if (entry.t === 'snap' && offset > 0) {
    // Only repair gets here: the locks of a snapshot out of place are kept beside the others.
    cache.damaged = true;
    for (const record of records(entry.locks, `corrupt-${offset}`)) cache.locks.set(record.id, record);
    cache.fence = Math.max(cache.fence, entry.fence as number);
    return;
  }
  if (entry.t === 'snap') {
    cache.snapshotBytes = Buffer.byteLength(line) + 1;
    cache.locks = new Map(records(entry.locks, `corrupt-${offset}`).map((r) => [r.id, r]));
    cache.fence = Math.max(cache.fence, entry.fence as number);
    cache.tombstones = Array.isArray(entry.tomb) ? (entry.tomb as Tombstone[]) : [];
    cache.lines = 0;
    if (isEventNumber(entry.evn)) cache.eventSeq = Math.max(cache.eventSeq, entry.evn);
    cache.pending = [];
    cache.unread = [];
    return;
  }
  if (Array.isArray(entry.ev) && entry.ev.length > 0) {
    cache.unread.push(entry.ev);
    // The number the next event takes goes past every number here, read as an event or not; a
    // number no event can have (damage: Infinity, past 2^53) is not counted, or every later event
    // would get it too.
    for (const value of entry.ev as unknown[]) {
      const n = (value as { n?: unknown } | null)?.n;
      if (isEventNumber(n) && n > cache.eventSeq) cache.eventSeq = n;
    }
  }
  const tomb = Array.isArray(entry.tomb) ? (entry.tomb as Tombstone[]) : null;
  applyChanges(cache, {
    put: records(entry.put, `corrupt-${offset}`),
    del: Array.isArray(entry.del) ? (entry.del as string[]).filter((id) => typeof id === 'string') : [],
    fence: entry.fence as number,
    tombstones: tomb,
  });
}

function isJsonObject(line: string): boolean {
  try {
    return typeof JSON.parse(line) === 'object';
  } catch {
    return false;
  }
}

/** Appends the events not yet in events.log to it, and rotates it when due. Caller holds the mutex. */
export function moveEvents(
  eventsPath: string,
  oldEventsPath: string,
  pending: readonly NumberedEvent[],
): void {
  if (pending.length === 0) return;
  const fd = openAppend(eventsPath, true);
  let grown: number;
  try {
    const last = lastNumber(readPrivateTail(eventsPath, fstatSync(fd).size));
    const fresh = pending.filter((event) => event.n > last);
    writeAll(fd, Buffer.from(fresh.map((event) => `${JSON.stringify(event)}\n`).join('')));
    grown = fstatSync(fd).size;
  } finally {
    closeSync(fd);
  }
  if (grown < EVENTS_ROTATE_BYTES) return;
  const first = /"n":(\d+)/.exec(readPrivateHead(eventsPath).toString('utf8'));
  const held = (pending.at(-1)?.n ?? 0) - Number(first?.[1] ?? 0) + 1;
  if (held >= EVENTS_KEPT) renameSync(eventsPath, oldEventsPath);
}

/** The events of a log's lines, numbered, and the number of the last one moved out of it. */
export function logEvents(data: Buffer | null): { moved: number; pending: NumberedEvent[] } {
  let moved = 0;
  const pending: NumberedEvent[] = [];
  if (data === null) return { moved, pending };
  for (const line of data
    .toString('utf8')
    .replace(/^\uFEFF/, '')
    .split('\n')) {
    // Only lines that carry events are parsed: most decisions' do not, and parsing costs.
    if (line.startsWith('{"t":"snap"')) {
      const evn = /"evn":(\d+)}$/.exec(line);
      moved = evn ? Number(evn[1]) : 0;
      pending.length = 0;
    } else if (line.includes('"ev":[')) {
      try {
        pending.push(...numbered((JSON.parse(line) as { ev?: unknown }).ev));
      } catch {
        // A torn or damaged line: the store's own reading decides what it means for locks.
      }
    }
  }
  return { moved, pending };
}

/**
 * The events of events.log (one JSON per line). Breaks recorded before events were numbered have
 * no number: they sort first, numbered below every numbered event (`old`).
 */
export function eventLines(data: Buffer | null, old: boolean): NumberedEvent[] {
  if (data === null) return [];
  const events: NumberedEvent[] = [];
  let unnumbered = -1_000_000_000;
  for (const line of data.toString('utf8').split('\n')) {
    if (line === '') continue;
    try {
      const value = JSON.parse(line) as { n?: unknown };
      const event = readEvent(value);
      if (event === null) continue;
      if (typeof value.n === 'number') events.push({ ...event, n: value.n });
      else if (old) events.push({ ...event, n: unnumbered++ });
    } catch {
      // A torn line (a compaction killed mid-write) is skipped.
    }
  }
  return events;
}

/** The last 64 KiB of a file of `size` bytes (read without following a symlink). */
function readPrivateTail(file: string, size: number): Buffer | null {
  if (size === 0) return null;
  const fd = openRead(file);
  try {
    return readRange(fd, Math.max(0, size - 65_536), size);
  } finally {
    closeSync(fd);
  }
}

/** The first 64 KiB of a file. */
function readPrivateHead(file: string): Buffer {
  const fd = openRead(file);
  try {
    return readRange(fd, 0, Math.min(fstatSync(fd).size, 65_536));
  } finally {
    closeSync(fd);
  }
}

/** The number of the last numbered event of events.log (0: none), from its tail. */
export function lastNumber(data: Buffer | null): number {
  if (data === null) return 0;
  const tail = data
    .subarray(Math.max(0, data.length - 65_536))
    .toString('utf8')
    .split('\n');
  for (let i = tail.length - 1; i >= 0; i--) {
    const n = /"n":(\d+)/.exec(tail[i]!);
    if (n && tail[i]!.endsWith('}') && isEventNumber(Number(n[1]))) return Number(n[1]);
  }
  return 0;
}
