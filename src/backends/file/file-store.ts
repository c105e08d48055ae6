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
 */
import {
  closeSync,
  existsSync,
  type FSWatcher,
  fstatSync,
  lstatSync,
  lutimesSync,
  readdirSync,
  realpathSync,
  renameSync,
  truncateSync,
  unlinkSync,
  watch,
} from 'node:fs';
import path from 'node:path';
import type { Changes, Decided, StoreEvent, StoreState, Tombstone } from '../../core/decide.js';
import { isEmpty } from '../../core/decide.js';
import { EVENTS_KEPT, readEvent } from '../../core/events.js';
import { AgentLockError } from '../../core/errors.js';
import type { Holder, LockRecord } from '../../core/lock.js';
import { isLockRecord, unreadableRecord } from '../../core/lock.js';
import { makeDirs } from '../../host/make-dirs.js';
import {
  type Backend,
  type RepairReport,
  stopper,
  type TransactOptions,
  tell,
  type WatchListener,
  waiterTag,
} from '../backend.js';
import { applyChanges } from '../memory/memory-store.js';
import {
  checkLogStart,
  cutTornTail,
  damaged,
  keepAside,
  logStartDamage,
  looksLikeTornCommit,
} from './log-damage.js';
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

interface Cache {
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
  locks: Map<string, LockRecord>;
  fence: number;
  tombstones: Tombstone[];
  /** Lines that could not be read were applied (as `<unknown>` locks): keep the log at compaction. */
  damaged: boolean;
  /** The number of the last event recorded (in this log or moved to events.log before it). */
  eventSeq: number;
  /** Events in this log's lines (not yet moved to events.log), each with its number `n`. */
  pending: NumberedEvent[];
}

type NumberedEvent = StoreEvent & { readonly n: number };

/** events.log is rotated once it holds EVENTS_KEPT events and at least this many bytes. */
const EVENTS_ROTATE_BYTES = 4 << 20;

const COMPACT_AFTER_LINES = 512;
/**
 * fs.watch misses changes on some file systems (network mounts, some containers) and may not be
 * available at all, so watchers also compare the log's inode, size and mtime this often.
 */
const WATCH_POLL_MS = 100;
const COMPACT_AFTER_BYTES = 1 << 20;
const NEWLINE = 0x0a;
const openMutexes = new Set<FileMutex>();
/** Wake files of this process's handles: removed on the way out. */
const openWakeFiles = new Set<string>();
let exitHookInstalled = false;

/** A waiter's wake file: its pid first, so that a sweep can tell the files of dead processes. */
function wakeName(waiter: string): string {
  const pid = waiter.split('|')[1] ?? '0';
  return `${pid}-${waiterTag(waiter)}`;
}

/** The names wakeName() gives: nothing else under wake/ is ever removed by a sweep. */
const WAKE_NAME = /^\d+-[A-Za-z0-9_-]{22}$/;

/** Creates (or re-creates) a wake file, naming its waiter so that a sweep can judge it. */
function writeWakeFile(file: string, waiter: string): void {
  const fd = openAppend(file, true);
  try {
    if (fstatSync(fd).size === 0) writeAll(fd, Buffer.from(waiter));
  } finally {
    closeSync(fd);
  }
}

interface WakeWatch {
  readonly listeners: Set<WatchListener>;
  /** Handles of this process using it: the last to close removes the file. */
  handles: number;
  /** Makes the file again (it was removed under us) and watches the new one. */
  renew(): void;
  close(): void;
}
/** Wake file path -> its watch, shared by the handles of this process (one waiter key each). */
const wakeWatches = new Map<string, WakeWatch>();

function isMissing(error: unknown): boolean {
  return (error as NodeJS.ErrnoException).code === 'ENOENT';
}

export class FileStore implements Backend {
  readonly kind = 'file' as const;
  readonly location: string;
  private readonly logPath: string;
  private readonly eventsPath: string;
  private readonly oldEventsPath: string;
  private readonly mutex: FileMutex;
  private cache: Cache | null = null;
  private appendFd: number | null = null;
  private appendIno = -1;
  private closed = false;
  private readonly wakeDir: string;
  /** Wake files this handle uses (see wakeWatches). */
  private readonly wakes = new Set<string>();
  private wakeReal: string | null = null;

  constructor(private readonly options: FileStoreOptions) {
    this.location = options.dir;
    this.logPath = path.join(options.dir, 'locks.log');
    this.eventsPath = path.join(options.dir, 'events.log');
    this.oldEventsPath = path.join(options.dir, 'events.1.log');
    this.wakeDir = path.join(options.dir, 'wake');
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
    // A woken waiter mostly finds its locks handed over: a decision that changes nothing is
    // answered from the log as it stands, read without the mutex (it holds whole commits only).
    if (options.cached) {
      const state = this.peek();
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
      if (wake) this.wakeUp(wake);
    }
  }

  /** Touches the wake files of the waiters a commit names (a missing one is a waiter gone). */
  private wakeUp(waiters: readonly string[]): void {
    const now = new Date();
    for (const waiter of waiters) {
      try {
        lutimesSync(path.join(this.wakeDir, wakeName(waiter)), now, now);
      } catch {
        // Best effort: the waiter also polls.
      }
    }
  }

  /**
   * A waiter watches a file of its own under wake/ (fs.watch, with a stat poll for file systems
   * where that sees nothing), which the commits that name it touch. One per process and handle,
   * kept until close().
   */
  async watchWaiter(waiter: string, listener: WatchListener): Promise<() => Promise<void>> {
    if (this.closed) throw new AgentLockError('E_CLOSED', 'this store handle is closed');
    const file = this.wakeFile(waiter);
    let wake = wakeWatches.get(file);
    if (!wake) {
      wake = this.openWake(file, waiter);
      wakeWatches.set(file, wake);
    } else if (!existsSync(file)) {
      // Removed under us (someone cleaned the folder): make it again.
      this.ensureWakeDir();
      wake.renew();
    }
    if (!this.wakes.has(file)) {
      this.wakes.add(file);
      wake.handles += 1;
    }
    wake.listeners.add(listener);
    return stopper(wake.listeners, listener);
  }

  /**
   * The wake file of a waiter, by the real path of the folder (found once per handle): two
   * spellings of one store folder in one process share one watch.
   */
  private wakeFile(waiter: string): string {
    if (this.wakeReal === null) {
      this.ensureWakeDir();
      this.wakeReal = realpathSync.native(this.wakeDir);
    }
    return path.join(this.wakeReal, wakeName(waiter));
  }

  /** Makes the wake folder; a symlink in its place is refused (the waiter then relies on its poll). */
  private ensureWakeDir(): void {
    makeDirs(this.wakeDir, 0o700);
    if (lstatSync(this.wakeDir).isSymbolicLink()) {
      throw new AgentLockError('E_STORE_UNSAFE', `${this.wakeDir} is a symlink, not a folder`, {
        hint: 'remove it; the store makes a real one',
      });
    }
  }

  private openWake(file: string, waiter: string): WakeWatch {
    writeWakeFile(file, waiter);
    openWakeFiles.add(file);
    const listeners = new Set<WatchListener>();
    let queued = false;
    const fire = () => {
      if (queued) return;
      queued = true;
      setImmediate(() => {
        queued = false;
        tell(listeners, null);
      });
    };
    const arm = () =>
      watchWithPoll(
        file,
        () => true,
        () => statStamp(file),
        fire,
      );
    let stop = arm();
    return {
      listeners,
      handles: 0,
      renew: () => {
        // The watch followed the old file: watch the new one.
        writeWakeFile(file, waiter);
        stop();
        stop = arm();
      },
      close: () => {
        wakeWatches.delete(file);
        stop();
        listeners.clear();
        openWakeFiles.delete(file);
        try {
          unlinkSync(file);
        } catch {
          // Gone already.
        }
      },
    };
  }

  /**
   * Removes the wake files of processes that are gone (killed before they could): only files of
   * our own naming in a real folder, each judged by the waiter it names (host, pid, start stamp).
   */
  private sweepWakeFiles(): void {
    let names: string[];
    try {
      if (!lstatSync(this.wakeDir).isDirectory()) return;
      names = readdirSync(this.wakeDir);
    } catch {
      return;
    }
    const host = this.options.self.host;
    for (const name of names) {
      if (!WAKE_NAME.test(name)) continue;
      const file = path.join(this.wakeDir, name);
      const [waiterHost, pid, started] = (readPrivateOrNull(file)?.toString('utf8') ?? '').split('|');
      if (waiterHost !== host || pid === undefined || started === undefined) continue;
      if (this.options.processAlive(Number(pid), started)) continue;
      try {
        unlinkSync(file);
      } catch {
        // Someone else swept it.
      }
    }
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
   * Every commit appends to `locks.log` (or renames a compacted one over it): an fs.watch on the
   * store folder sees both, and a stat poll catches what it misses. Calls are coalesced.
   */
  async watch(listener: WatchListener): Promise<() => Promise<void>> {
    if (this.closed) throw new AgentLockError('E_CLOSED', 'this store handle is closed');
    let on = true;
    let queued = false;
    const tail = this.logTail();
    const fire = () => {
      if (!on || queued) return;
      queued = true;
      setImmediate(() => {
        queued = false;
        if (!on) return;
        try {
          listener(tail());
        } catch {
          // A watcher's failure is its own; it must never surface from a timer.
        }
      });
    };
    const stop = watchWithPoll(
      this.location,
      (name) => name === null || name === 'locks.log',
      () => statStamp(this.logPath),
      fire,
    );
    return async () => {
      on = false;
      stop();
    };
  }

  /**
   * What the decisions appended since the last call touched: the ids their lines put or delete,
   * read without the mutex (a line is appended whole by one write; a partial last line waits for
   * the next call). Null when that cannot be told: the log was compacted or replaced.
   */
  private logTail(): () => string[] | null {
    let ino = -1;
    let offset = 0;
    const reset = () => {
      try {
        const stat = lstatSync(this.logPath);
        ino = stat.ino;
        offset = stat.size;
      } catch {
        ino = -1;
      }
    };
    reset();
    return () => {
      let fd: number;
      try {
        fd = openRead(this.logPath);
      } catch {
        ino = -1;
        return null;
      }
      try {
        const stat = fstatSync(fd);
        if (stat.ino !== ino || stat.size < offset) {
          ino = stat.ino;
          offset = stat.size;
          return null;
        }
        const bytes = readRange(fd, offset, stat.size);
        const end = bytes.lastIndexOf(NEWLINE) + 1;
        offset += end;
        const touched: string[] = [];
        for (const line of bytes.subarray(0, end).toString('utf8').split('\n')) {
          if (line === '') continue;
          const entry = JSON.parse(line) as { t?: string; put?: { id: string }[]; del?: string[] };
          if (entry.t !== 'tx' || !Array.isArray(entry.put) || !Array.isArray(entry.del)) return null;
          for (const record of entry.put) touched.push(record.id);
          touched.push(...entry.del);
        }
        return touched;
      } catch {
        reset();
        return null;
      } finally {
        closeSync(fd);
      }
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.appendFd !== null) closeSync(this.appendFd);
    this.appendFd = null;
    this.dropCache();
    for (const file of this.wakes) {
      const wake = wakeWatches.get(file);
      if (wake && --wake.handles === 0) wake.close();
    }
    this.wakes.clear();
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
        this.applyBytes(cache, readRange(cache.fd, cache.size, stat.size), cache.size, false);
        // Read to the end as stat saw it: sync() then knows this state is the log's (as after its
        // own catch-up), rather than reading the whole log again for an mtime it has not seen.
        if (cache.size === stat.size) cache.mtime = stat.mtimeMs;
      }
      return cache;
    } catch {
      return null;
    }
  }

  /** Brings the cached state up to date with the log. Caller holds the mutex. */
  private sync(): Cache {
    let stat: ReturnType<typeof lstatSync>;
    try {
      stat = lstatSync(this.logPath);
    } catch (error) {
      if (!isMissing(error)) throw error;
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
        this.applyBytes(cache, readRange(cache.fd, cache.size, stat.size), cache.size);
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
      const cache: Cache = {
        fd,
        ino,
        size: 0,
        mtime: mtimeMs,
        snapshotBytes: 0,
        lines: 0,
        locks: new Map(),
        fence,
        tombstones: [],
        damaged: false,
        eventSeq: this.cache?.eventSeq ?? 0,
        pending: [],
      };
      this.applyBytes(cache, bytes, 0);
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

  /** Applies complete lines; a torn last line (its writer died mid-write) is cut off. */
  private applyBytes(cache: Cache, bytes: Buffer, offset: number, repair = true): void {
    const end = bytes.lastIndexOf(NEWLINE) + 1;
    let start = 0;
    while (start < end) {
      const stop = bytes.indexOf(NEWLINE, start);
      this.applyLine(cache, bytes.subarray(start, stop).toString('utf8'), offset + start);
      cache.lines += 1;
      start = stop + 1;
    }
    cache.size = offset + end;
    // Without the mutex a partial last line may be a write in progress. Under it, it is damage: the
    // taker of a dead writer's mutex cuts that writer's torn commit before anyone else gets in.
    if (repair && end < bytes.length) {
      const tail = bytes.subarray(end);
      throw damaged(
        this.logPath,
        looksLikeTornCommit(tail)
          ? 'ends in a partial commit that no crashed writer left (cut short)'
          : 'ends in bytes that are no commit (overwritten)',
      );
    }
  }

  private applyLine(cache: Cache, line: string, offset: number): void {
    const now = this.options.now();
    let entry: Record<string, unknown>;
    try {
      entry = JSON.parse(line) as Record<string, unknown>;
      if (typeof entry !== 'object' || entry === null || typeof entry.fence !== 'number')
        throw new Error('shape');
      // Only these two shapes are ever written: a snapshot as the log's first line, commits after
      // it. Anything else (a snapshot further down would wipe every lock before it) is damage.
      const snapshot = entry.t === 'snap' && offset === 0 && Array.isArray(entry.locks);
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
      cache.fence = Math.max(cache.fence, now * 1000);
      cache.damaged = true;
      return;
    }
    const records = (list: unknown, from: string): LockRecord[] =>
      (Array.isArray(list) ? list : []).map((value, i) => {
        if (isLockRecord(value)) return value;
        cache.damaged = true;
        const id =
          typeof (value as { id?: unknown })?.id === 'string' ? (value as { id: string }).id : `${from}-${i}`;
        return unreadableRecord(id, now);
      });
    if (entry.t === 'snap') {
      cache.snapshotBytes = Buffer.byteLength(line) + 1;
      cache.locks = new Map(records(entry.locks, `corrupt-${offset}`).map((r) => [r.id, r]));
      cache.fence = Math.max(cache.fence, entry.fence as number);
      cache.tombstones = Array.isArray(entry.tomb) ? (entry.tomb as Tombstone[]) : [];
      cache.lines = 0;
      if (typeof entry.evn === 'number') cache.eventSeq = Math.max(cache.eventSeq, entry.evn);
      cache.pending = [];
      return;
    }
    for (const event of numbered(entry.ev)) {
      cache.pending.push(event);
      cache.eventSeq = Math.max(cache.eventSeq, event.n);
    }
    const tomb = Array.isArray(entry.tomb) ? (entry.tomb as Tombstone[]) : null;
    applyChanges(cache, {
      put: records(entry.put, `corrupt-${offset}`),
      del: Array.isArray(entry.del) ? (entry.del as string[]).filter((id) => typeof id === 'string') : [],
      fence: entry.fence as number,
      tombstones: tomb,
    });
  }

  private createLog(): Cache {
    // A log that vanished while the store existed must not restart fences at 1: seed from the clock
    // (microseconds), which exceeds every counter that grew by less than one grant per microsecond.
    const fence = this.cache?.fence ?? (this.options.fresh ? 0 : this.options.now() * 1000);
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
      cache.pending.push(...events);
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
      const cache: Cache = {
        fd: -1,
        ino: -1,
        size: 0,
        mtime: 0,
        snapshotBytes: 0,
        lines: 0,
        locks: new Map(),
        fence: 0,
        tombstones: [],
        damaged: false,
        eventSeq: lastNumber(readPrivateOrNull(this.eventsPath)),
        pending: [],
      };
      this.applyBytes(cache, data, 0, false);
      if (cache.size < data.length && start === null) damage.push(`${this.logPath} ends in a partial line`);
      const unreadable = [...cache.locks.values()].filter((record) => record.unreadable === true);
      if (unreadable.length > 0) damage.push(`${unreadable.length} record(s) cannot be read`);
      if (damage.length === 0) return { damage, keptAt: [], locksKept: cache.locks.size };
      for (const record of unreadable) cache.locks.delete(record.id);
      const keptAt = data.length > 0 ? [keepAside(this.location, this.logPath, now)] : [];
      // Whatever the damage hid may have taken fences: go on from the clock, above all of them.
      const fence = Math.max(cache.fence, now * 1000);
      // The readable lines' events go to events.log first, as at a compaction.
      this.moveEvents(cache.pending);
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
    this.moveEvents(cache.pending);
    const snapshot = `${JSON.stringify({
      t: 'snap',
      fence: cache.fence,
      locks: [...cache.locks.values()],
      tomb: cache.tombstones,
      evn: cache.eventSeq,
    })}\n`;
    writeAtomic(this.logPath, snapshot);
    cache.pending = [];
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
    this.sweepWakeFiles();
  }

  /** Appends the events not yet in events.log to it, and rotates it when due. Caller holds the mutex. */
  private moveEvents(pending: readonly NumberedEvent[]): void {
    if (pending.length === 0) return;
    const fd = openAppend(this.eventsPath, true);
    let grown: number;
    try {
      const last = lastNumber(readPrivateTail(this.eventsPath, fstatSync(fd).size));
      const fresh = pending.filter((event) => event.n > last);
      writeAll(fd, Buffer.from(fresh.map((event) => `${JSON.stringify(event)}\n`).join('')));
      grown = fstatSync(fd).size;
    } finally {
      closeSync(fd);
    }
    if (grown < EVENTS_ROTATE_BYTES) return;
    const first = /"n":(\d+)/.exec(readPrivateHead(this.eventsPath).toString('utf8'));
    const held = (pending.at(-1)?.n ?? 0) - Number(first?.[1] ?? 0) + 1;
    if (held >= EVENTS_KEPT) renameSync(this.eventsPath, this.oldEventsPath);
  }
}

/** The events of a log's lines, numbered, and the number of the last one moved out of it. */
function logEvents(data: Buffer | null): { moved: number; pending: NumberedEvent[] } {
  let moved = 0;
  const pending: NumberedEvent[] = [];
  if (data === null) return { moved, pending };
  for (const line of data.toString('utf8').split('\n')) {
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

/** The numbered events of a line's `ev` (anything else in it is skipped: events are a record). */
function numbered(list: unknown): NumberedEvent[] {
  if (!Array.isArray(list)) return [];
  const events: NumberedEvent[] = [];
  for (const value of list) {
    const n = (value as { n?: unknown } | null)?.n;
    const event = readEvent(value);
    if (event !== null && typeof n === 'number') events.push({ ...event, n });
  }
  return events;
}

/**
 * The events of events.log (one JSON per line). Breaks recorded before events were numbered have
 * no number: they sort first, numbered below every numbered event (`old`).
 */
function eventLines(data: Buffer | null, old: boolean): NumberedEvent[] {
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
function lastNumber(data: Buffer | null): number {
  if (data === null) return 0;
  const tail = data
    .subarray(Math.max(0, data.length - 65_536))
    .toString('utf8')
    .split('\n');
  for (let i = tail.length - 1; i >= 0; i--) {
    const n = /"n":(\d+)/.exec(tail[i]!);
    if (n && tail[i]!.endsWith('}')) return Number(n[1]);
  }
  return 0;
}

/** What a stat poll compares: the inode, size and mtime ('' when the file is missing). */
function statStamp(file: string): string {
  try {
    const stat = lstatSync(file);
    return `${stat.ino}:${stat.size}:${stat.mtimeMs}`;
  } catch {
    return '';
  }
}

/**
 * fs.watch on `target` (events for which `relevant` holds), plus a stat poll of `stamp` every
 * WATCH_POLL_MS for file systems where fs.watch sees nothing; both call `fire`. A watch that breaks
 * (the folder removed, too many watches) leaves the poll to do the work. Answers the stopper.
 */
function watchWithPoll(
  target: string,
  relevant: (name: string | null) => boolean,
  stamp: () => string,
  fire: () => void,
): () => void {
  let last = stamp();
  const poll = setInterval(() => {
    const now = stamp();
    if (now !== last) {
      last = now;
      fire();
    }
  }, WATCH_POLL_MS);
  poll.unref();
  let watcher: FSWatcher | null = null;
  try {
    watcher = watch(target, { persistent: false }, (_event, name) => {
      if (!relevant(name)) return;
      last = stamp();
      fire();
    });
    watcher.on('error', () => {
      watcher?.close();
      watcher = null;
    });
  } catch {
    watcher = null;
  }
  return () => {
    clearInterval(poll);
    watcher?.close();
  };
}
