/**
 * The embedded store: one folder per repository, shared by every worktree and process on the host.
 *
 * State lives in `locks.log`, a snapshot line followed by one line per committed decision. A
 * decision is appended with a single write(2) while the store mutex is held, so a multi-scope
 * acquire is all or nothing, and a process killed mid-write leaves at most a trailing line without
 * its newline, which the next mutex holder cuts off (the writer is dead: it held the mutex). Each
 * process caches the parsed state and, under the mutex, reads only what was appended since, so a
 * decision costs a few system calls whatever the number of locks. The log is compacted into a new
 * snapshot (written aside, renamed over) once it has grown well past the live state.
 *
 * Events (core/events) ride in the very line of the decision that makes them, numbered (`n`) in
 * store order, so that no crash can keep a change without its event or the reverse. Compaction
 * first appends them to `events.log` (skipping any a crashed compaction moved already), then
 * rotates that to `events.1.log` once it holds EVENTS_KEPT events and EVENTS_ROTATE_BYTES: the
 * history keeps at least the last EVENTS_KEPT events, and at most about twice that.
 *
 * Beside this file, by concern: log.ts reads the log into the cached state (and its events),
 * mutex.ts and mutex-line.ts are the store mutex and its line of waiters, wake-ups.ts wakes the
 * processes waiting in line for a lock, watch.ts tells watchers of commits, and log-damage.ts
 * judges and keeps aside what cannot be read.
 */
import { closeSync, fstatSync, lstatSync, truncateSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import type { Changes, Decided, StoreEvent, StoreState } from '../../core/decide.js';
import { isEmpty } from '../../core/decide.js';
import { AgentLockError } from '../../core/errors.js';
import type { Holder } from '../../core/lock.js';
import type { Backend, RepairReport, TransactOptions, WatchListener } from '../backend.js';
import type { NumberedEvent } from '../shared/events.js';
import { applyChanges, fenceFromClock } from '../shared/state.js';
import {
  type Cache,
  type LogReading,
  applyBytes,
  emptyCache,
  eventLines,
  lastNumber,
  logEvents,
  moveEvents,
  NEWLINE,
  pendingEvents,
} from './log.js';
import { checkLogStart, cutTornTail, damaged, keepAside, logStartDamage } from './log-damage.js';
import { FileMutex } from './mutex.js';
import {
  openAppend,
  openRead,
  readPrivate,
  readPrivateOrNull,
  readRange,
  writeAll,
  writeAtomic,
} from './safe-fs.js';
import { openWakeFiles, WakeFiles } from './wake-ups.js';
import { watchLog } from './watch.js';

export interface FileStoreOptions {
  readonly dir: string;
  /**
   * The process running this store handle: it owns the internal mutex while it decides. Never the
   * lock holder, which for the CLI is an ancestor that outlives a killed `alock` process.
   */
  readonly self: Holder;
  readonly mutexTimeoutMs: number;
  readonly processAlive: (pid: number, started: string) => boolean;
  readonly now: () => number;
  /** The store was created by this open: a missing log starts fences at 0, not from the clock. */
  readonly fresh: boolean;
  /**
   * The store's marker says a log was written with it: a missing log was then removed behind the
   * store's back (damage), not yet to be made (a store marked by an older version, or a new one).
   */
  readonly logExpected?: boolean;
}

const COMPACT_AFTER_LINES = 512;
const COMPACT_AFTER_BYTES = 1 << 20;
const openMutexes = new Set<FileMutex>();
let exitHookInstalled = false;

export class FileStore implements Backend {
  readonly kind = 'file' as const;
  readonly location: string;
  private readonly logPath: string;
  /** What log.ts needs to read the log: where it is and the store's clock. */
  private readonly reading: LogReading;
  private readonly eventsPath: string;
  private readonly oldEventsPath: string;
  private readonly mutex: FileMutex;
  private cache: Cache | null = null;
  private appendFd: number | null = null;
  private appendIno = -1;
  private closed = false;
  private readonly wakeFiles: WakeFiles;

  constructor(private readonly options: FileStoreOptions) {
    this.location = options.dir;
    this.logPath = path.join(options.dir, 'locks.log');
    this.reading = { logPath: this.logPath, now: options.now };
    this.eventsPath = path.join(options.dir, 'events.log');
    this.oldEventsPath = path.join(options.dir, 'events.1.log');
    this.wakeFiles = new WakeFiles(options.dir, options.self.host, options.processAlive);
    // A takeover from a dead owner cuts the commit it left half-written, before anyone else is let in.
    this.mutex = new FileMutex(
      options.dir,
      options.self,
      options.mutexTimeoutMs,
      options.processAlive,
      (stillTakingOver) => cutTornTail(options.dir, this.logPath, options.now(), stillTakingOver),
    );
    openMutexes.add(this.mutex);
    if (!exitHookInstalled) {
      exitHookInstalled = true;
      process.once('exit', () => {
        for (const mutex of openMutexes) mutex.dispose();
        for (const file of openWakeFiles) {
          try {
            unlinkSync(file);
          } catch {
            // Gone already; a sweep removes what is left.
          }
        }
      });
    }
  }

  async transact<T>(
    decide: (state: StoreState, now: number) => Decided<T>,
    clock: () => number = this.options.now,
    options: TransactOptions = {},
  ): Promise<T> {
    if (this.closed) throw new AgentLockError('E_CLOSED', 'this store handle is closed');
    // A woken waiter mostly finds its locks handed over, a hook's check mostly finds its file free:
    // a decision that changes nothing is answered from the log as it stands, read without the mutex
    // (it holds whole commits only).
    if (options.cached) {
      const state =
        this.cache === null ? this.peekCold() : options.cached === 'whole' ? this.peekWhole() : this.peek();
      if (state !== null) {
        const { result, changes } = decide(state, clock());
        if (isEmpty(changes, state)) return result;
      }
    }
    // Catch up with what others appended before taking the mutex: under it, only what lands in
    // the meantime is read and parsed, which keeps the critical section short when many decide.
    this.peek();
    await this.mutex.lock();
    let wake: readonly string[] | undefined;
    // From here to unlock everything is synchronous: no other decision of this process can interleave.
    try {
      const state = this.sync();
      const { result, changes } = decide(state, clock());
      if (!isEmpty(changes, state)) {
        if (!this.mutex.holds()) {
          throw new AgentLockError('E_STORE_BUSY', `lost the store mutex of ${this.location} mid-decision`, {
            hint: 'try again',
          });
        }
        this.commit(state as Cache, changes);
        wake = changes.wake;
      }
      return result;
    } finally {
      this.mutex.unlock();
      if (wake) this.wakeFiles.wakeUp(wake);
    }
  }

  /** A waiter watches a file of its own (wake-ups.ts), which the commits that name it touch. */
  async watchWaiter(waiter: string, listener: WatchListener): Promise<() => Promise<void>> {
    if (this.closed) throw new AgentLockError('E_CLOSED', 'this store handle is closed');
    return this.wakeFiles.watch(waiter, listener);
  }

  /**
   * Read without the mutex: locks.log first, then events.log and events.1.log, so that events a
   * compaction moves meanwhile are found in one or the other (duplicates are dropped by number).
   * A caller that follows (`after` at or past what the last compaction moved) reads locks.log alone.
   */
  async events(limit: number, after?: string): Promise<StoreEvent[]> {
    const from = after === undefined ? -1 : Number(after);
    const { moved, pending } = logEvents(readPrivate(this.logPath));
    const found: NumberedEvent[] = [...pending];
    if (!(from >= moved)) {
      for (const file of [this.eventsPath, this.oldEventsPath]) {
        found.push(...eventLines(readPrivate(file), true));
      }
    }
    const seen = new Set<number>();
    const events = found
      .filter((event) => event.n > from && !seen.has(event.n) && seen.add(event.n))
      .sort((a, b) => a.n - b.n)
      .slice(-limit);
    return events.map(({ n, ...event }) => ({ ...event, id: String(n) }));
  }

  /**
   * Every commit appends to `locks.log` (or renames a compacted one over it): watch.ts sees both.
   */
  async watch(listener: WatchListener): Promise<() => Promise<void>> {
    if (this.closed) throw new AgentLockError('E_CLOSED', 'this store handle is closed');
    return watchLog(this.location, this.logPath, listener);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.appendFd !== null) closeSync(this.appendFd);
    this.appendFd = null;
    this.dropCache();
    this.wakeFiles.close();
    this.mutex.dispose();
    openMutexes.delete(this.mutex);
  }

  /**
   * The cached state brought up to date without the mutex: only whole lines are read (a commit
   * being written is left for later) and nothing is repaired. Null when that cannot be done so
   * simply (no cache yet, the log replaced or missing): the caller takes the mutex.
   */
  private peek(): Cache | null {
    const cache = this.cache;
    if (cache === null) return null;
    try {
      const stat = lstatSync(this.logPath);
      if (!stat.isFile() || stat.ino !== cache.ino || stat.size < cache.size) return null;
      if (stat.size > cache.size) {
        applyBytes(this.reading, cache, readRange(cache.fd, cache.size, stat.size), cache.size, false);
        // Read to the end as stat saw it: sync() then knows this state is the log's (as after its
        // own catch-up), rather than reading the whole log again for an mtime it has not seen.
        if (cache.size === stat.size) cache.mtime = stat.mtimeMs;
      }
      return cache;
    } catch {
      return null;
    }
  }

  /**
   * peek(), for an answer given without the mutex: null unless every byte of the log was read as
   * whole lines, nothing read was damaged, and the log is the file (and the mtime) the cache knows,
   * so that the answer is the one the mutex would give. Otherwise the caller takes the mutex.
   */
  private peekWhole(): Cache | null {
    const cache = this.peek();
    if (cache === null || cache.damaged) return null;
    try {
      const stat = lstatSync(this.logPath);
      return stat.ino === cache.ino && stat.size === cache.size && stat.mtimeMs === cache.mtime
        ? cache
        : null;
    } catch {
      return null;
    }
  }

  /**
   * The log read whole without the mutex, for a handle with nothing cached yet (a hook's one
   * check), and not kept. Null whenever the mutex could make a difference: no log yet, damage, or a
   * partial last line (a write in progress, or a dead writer's torn commit that the next mutex
   * holder cuts): the caller then decides under the mutex as usual.
   */
  private peekCold(): StoreState | null {
    if (this.cache !== null) return null;
    let fd: number;
    try {
      if (!lstatSync(this.logPath).isFile()) return null;
      fd = openRead(this.logPath);
    } catch {
      return null;
    }
    try {
      const { ino, size, mtimeMs } = fstatSync(fd);
      const bytes = readRange(fd, 0, size);
      if (bytes.length === 0 || bytes[bytes.length - 1] !== NEWLINE || logStartDamage(bytes) !== null) {
        return null;
      }
      const cache: Cache = emptyCache({ fd, ino, mtime: mtimeMs });
      applyBytes(this.reading, cache, bytes, 0, false);
      return cache.damaged ? null : cache;
    } catch {
      return null;
    } finally {
      closeSync(fd);
    }
  }

  /** Brings the cached state up to date with the log. Caller holds the mutex. */
  private sync(): Cache {
    let stat: ReturnType<typeof lstatSync>;
    try {
      stat = lstatSync(this.logPath);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      if (this.options.logExpected === true || this.cache !== null) {
        throw damaged(this.logPath, 'is missing (removed behind the store)');
      }
      return this.createLog();
    }
    if (!stat.isFile()) {
      throw new AgentLockError('E_STORE_UNSAFE', `${this.logPath} is not a regular file`, {
        hint: 'remove it; the store will start empty',
      });
    }
    const cache = this.cache;
    if (cache !== null && cache.ino === stat.ino) {
      if (stat.size === cache.size && stat.mtimeMs === cache.mtime) return cache;
      if (stat.size > cache.size) {
        applyBytes(this.reading, cache, readRange(cache.fd, cache.size, stat.size), cache.size);
        cache.mtime = stat.mtimeMs;
        return cache;
      }
      if (stat.size === cache.size) return this.reload();
      // Our cache counts whole lines only, and only a dead writer's partial line is ever cut: a log
      // that shrank below them lost commits.
      this.dropCache();
      throw damaged(this.logPath, 'was cut short behind the store');
    }
    return this.reload();
  }

  private reload(): Cache {
    const fd = openRead(this.logPath);
    try {
      const { ino, size, mtimeMs } = fstatSync(fd);
      const bytes = readRange(fd, 0, size);
      checkLogStart(this.logPath, bytes);
      const fence = this.cache?.fence ?? 0;
      const cache: Cache = emptyCache(
        { fd, ino, mtime: mtimeMs },
        { fence, eventSeq: this.cache?.eventSeq ?? 0 },
      );
      applyBytes(this.reading, cache, bytes, 0);
      // A log from before events were numbered (or one lost): go on from the last number moved.
      if (cache.eventSeq === 0) cache.eventSeq = lastNumber(readPrivateOrNull(this.eventsPath));
      this.dropCache();
      this.cache = cache;
      return cache;
    } catch (error) {
      closeSync(fd);
      throw error;
    }
  }

  private dropCache(): void {
    if (this.cache !== null) closeSync(this.cache.fd);
    this.cache = null;
  }

  private createLog(): Cache {
    // A log that vanished while the store existed must not restart fences at 1: seed from the clock
    // (microseconds), which exceeds every counter that grew by less than one grant per microsecond.
    const fence = this.cache?.fence ?? (this.options.fresh ? 0 : fenceFromClock(this.options.now()));
    const snapshot = `${JSON.stringify({ t: 'snap', fence, locks: [], tomb: [] })}\n`;
    writeAtomic(this.logPath, snapshot);
    return this.reload();
  }

  private appendHandle(ino: number): number {
    if (this.appendFd !== null && this.appendIno === ino) return this.appendFd;
    if (this.appendFd !== null) closeSync(this.appendFd);
    this.appendFd = openAppend(this.logPath, false);
    this.appendIno = fstatSync(this.appendFd).ino;
    return this.appendFd;
  }

  private commit(cache: Cache, changes: Changes): void {
    const events = changes.events.map((event, i) => ({ ...event, n: cache.eventSeq + i + 1 }));
    const line = `${JSON.stringify({
      t: 'tx',
      fence: changes.fence,
      put: changes.put,
      del: changes.del,
      tomb: changes.tombstones,
      ...(events.length > 0 ? { ev: events } : {}),
    })}\n`;
    const fd = this.appendHandle(cache.ino);
    if (this.appendIno !== cache.ino) {
      throw new AgentLockError('E_STORE_BUSY', 'the lock log was replaced mid-decision', {
        hint: 'try again',
      });
    }
    const bytes = Buffer.from(line);
    try {
      writeAll(fd, bytes);
    } catch (error) {
      // A part written (a full disk) must not stay: the next decision would read it as damage.
      try {
        truncateSync(this.logPath, cache.size);
      } catch {
        // Then it is reported as damage, which is the safe side.
      }
      throw error;
    }
    cache.size += bytes.length;
    cache.mtime = fstatSync(fd).mtimeMs;
    cache.lines += 1;
    applyChanges(cache, changes);
    if (events.length > 0) {
      pendingEvents(cache).push(...events);
      cache.eventSeq += events.length;
    }
    const longLog = cache.lines > COMPACT_AFTER_LINES && cache.lines > cache.locks.size;
    // Notes rewrite their whole record, so bytes can outgrow lines: compact on either.
    const bigLog = cache.size > 4 * cache.snapshotBytes + COMPACT_AFTER_BYTES;
    if (longLog || bigLog) this.compact(cache);
  }

  /**
   * Moves damage aside, only when asked (`alock repair`): the log as it is is kept under damaged/,
   * and a new one holds what could be read of it (records that cannot be read are dropped from the
   * live store, not from the kept copy); fences go on from the clock, above anything granted.
   */
  async repair(): Promise<RepairReport> {
    if (this.closed) throw new AgentLockError('E_CLOSED', 'this store handle is closed');
    await this.mutex.lock();
    try {
      const now = this.options.now();
      const damage: string[] = [];
      let data = readPrivate(this.logPath);
      if (data === null) {
        if (this.options.logExpected !== true) return { damage, keptAt: [], locksKept: 0 };
        damage.push(`${this.logPath} is missing`);
        data = Buffer.alloc(0);
      }
      const start = damage.length === 0 ? logStartDamage(data) : null;
      if (start !== null) damage.push(`${this.logPath} ${start}`);
      const cache: Cache = emptyCache(
        { fd: -1, ino: -1, mtime: 0 },
        { eventSeq: lastNumber(readPrivateOrNull(this.eventsPath)) },
      );
      // Read to keep every lock a line can give, whatever precedes it (log.ts, salvage).
      applyBytes(this.reading, cache, data, 0, false, true);
      if (cache.size < data.length && start === null) damage.push(`${this.logPath} ends in a partial line`);
      const unreadable = [...cache.locks.values()].filter((record) => record.unreadable === true);
      if (unreadable.length > 0) damage.push(`${unreadable.length} record(s) cannot be read`);
      else if (cache.damaged && start === null) damage.push(`${this.logPath} holds a line out of place`);
      if (damage.length === 0) return { damage, keptAt: [], locksKept: cache.locks.size };
      for (const record of unreadable) cache.locks.delete(record.id);
      const keptAt = data.length > 0 ? [keepAside(this.location, this.logPath, now)] : [];
      // Whatever the damage hid may have taken fences: go on from the clock, above all of them.
      const fence = Math.max(cache.fence, fenceFromClock(now));
      // The readable lines' events go to events.log first, as at a compaction.
      moveEvents(this.eventsPath, this.oldEventsPath, pendingEvents(cache));
      writeAtomic(
        this.logPath,
        `${JSON.stringify({ t: 'snap', fence, locks: [...cache.locks.values()], tomb: cache.tombstones, evn: cache.eventSeq })}\n`,
      );
      this.dropCache();
      return { damage, keptAt, locksKept: cache.locks.size };
    } finally {
      this.mutex.unlock();
    }
  }

  private compact(cache: Cache): void {
    // The snapshot would no longer hold the lines that could not be read: keep them beside it.
    if (cache.damaged) {
      keepAside(this.location, this.logPath, this.options.now());
      cache.damaged = false;
    }
    // The events leave this log for events.log before the snapshot replaces it: a crash between
    // the two leaves them in both, and the next compaction skips the ones events.log has.
    moveEvents(this.eventsPath, this.oldEventsPath, pendingEvents(cache));
    const snapshot = `${JSON.stringify({
      t: 'snap',
      fence: cache.fence,
      locks: [...cache.locks.values()],
      tomb: cache.tombstones,
      evn: cache.eventSeq,
    })}\n`;
    writeAtomic(this.logPath, snapshot);
    cache.pending = [];
    cache.unread = [];
    const fd = openRead(this.logPath);
    closeSync(cache.fd);
    cache.fd = fd;
    const stat = fstatSync(fd);
    cache.ino = stat.ino;
    cache.size = stat.size;
    cache.mtime = stat.mtimeMs;
    cache.snapshotBytes = stat.size;
    cache.lines = 0;
    this.mutex.sweepDeadOwners();
    this.wakeFiles.sweep();
  }
}
