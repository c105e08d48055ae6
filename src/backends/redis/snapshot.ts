/**
 * A Redis store handle's snapshot of the store: every record, the fence and the tombstones, with the
 * epoch and version the whole is current at (and the domain versions known past it), kept current
 * by the commit script's answers and by the commits the handle hears on its channels.
 */
import type { Tombstone } from '../../core/decide.js';
import type { LockRecord } from '../../core/lock.js';
import { isLockRecord, unreadableRecord } from '../../core/lock.js';

export interface Cache {
  epoch: string;
  /** The store's version that the whole snapshot is current at. */
  version: string;
  /**
   * Domain version keys (core/domains) this handle knows past `version`: its own commits on some
   * domains, made while others committed elsewhere, leave those domains current at a later version.
   */
  known: Map<string, number>;
  locks: Map<string, LockRecord>;
  fence: number;
  tombstones: Tombstone[];
}

/** Parsed records kept by their JSON (recordOf), at most so many and so many bytes of JSON. */
const PARSED_KEPT = 512;
const PARSED_BYTES = 1 << 20;
/** Records this handle wrote lately, kept by their JSON until they come back (see wrote). */
const RECENT_KEPT = 16;

export class Snapshot {
  cache: Cache | null = null;
  /** Commits folded in from the channels: a cache that moved is no longer the last answer's state. */
  followed = 0;
  /** Server time (epoch ms) in the last answer, and our monotonic clock when it arrived. */
  serverNow = 0;
  private receivedAt = 0;
  /** Record JSON -> the record it parses to (see recordOf), for about as many records as a store holds. */
  private readonly parsed = new Map<string, LockRecord>();
  private parsedBytes = 0;
  /** The last records this handle wrote, and their JSON: a ring, at `recentAt` the oldest. */
  private readonly recentJson: string[] = [];
  private readonly recentRecords: LockRecord[] = [];
  private recentAt = 0;

  /** `damaged`: the error for a store whose data cannot be read, named by the store. */
  constructor(private readonly damaged: (what: string) => Error) {}

  /** An answer from the server, at its time `serverNow` (epoch ms). */
  heard(serverNow: string): void {
    this.serverNow = Number(serverNow);
    this.receivedAt = performance.now();
  }

  /** A lower bound of the server's clock: its last answer plus the time elapsed since, less 1 ms. */
  estimateNow(): number {
    return this.serverNow + Math.floor(performance.now() - this.receivedAt) - 1;
  }

  /**
   * A message on one of the handle's channels (see COMMIT_LUA): folded into the cache. Answers the
   * ids it touched (null: something changed, the listeners must look again), and whether it only
   * informed this process as a holder (news for its snapshot, not for its waits).
   */
  fold(message: string, global: boolean): { touched: string[] | null; inform: boolean } {
    let touched: string[] | null;
    let inform = false;
    try {
      const lines = message.split('\n');
      const words = lines[0]!.split(' ');
      // Marks at the end of the first line (see COMMIT_LUA): '~' when this process is told as a
      // holder (news for its snapshot, not for its waits), then '=' and the epoch for a whole store.
      if (!global && words[words.length - 1] === '~') {
        inform = true;
        words.pop();
      }
      const last = words[words.length - 1]!;
      if (!global && last.charCodeAt(0) === 61) {
        words.pop();
        touched = this.replace(lines, words, last.slice(1));
      } else {
        touched = this.follow(lines, words);
      }
      // A waiter's own news (its locks handed over) is worth having even on a snapshot that is
      // behind: see mix().
      if (touched === null && !global && !inform) touched = this.mix(lines, words);
    } catch {
      // A message we cannot read: the next decision syncs, and listeners look again.
      this.forget();
      touched = null;
    }
    return { touched, inform };
  }

  /** Marks the snapshot as behind, domains included: the next decision syncs. */
  forget(): void {
    if (this.cache === null) return;
    this.cache.version = '';
    this.cache.known.clear();
  }

  /**
   * Folds a published commit into the cache when the cache is at the version it was made on (so
   * the next decision pays one round trip, not two), and answers the ids it touched (null when the
   * cache is behind, so that nobody decides on it without asking the store). The commit
   * script checks the version anyway: a cache this gets wrong could not commit anything.
   */
  private follow(lines: readonly string[], words: readonly string[]): string[] | null {
    const touched = words.slice(3);
    const cache = this.cache;
    // Also while a decision of ours is in flight: its commit either lost to this one (and syncs
    // from its own version, which this only anticipates) or is this one (applied twice, alike).
    if (cache === null || cache.version !== words[1]) {
      // A snapshot that is behind (a message was lost): the listeners must not trust it, so they
      // hear "something changed" rather than which records.
      return cache !== null && Number(cache.version) >= Number(words[0]) ? touched : null;
    }
    this.writeRecords(cache, lines, touched);
    if (lines[2]) cache.tombstones = JSON.parse(lines[2]) as Tombstone[];
    cache.version = words[0]!;
    return touched;
  }

  /**
   * A commit sent to the processes it names (waiters, holders to inform) with the whole store after
   * it, when the store is small (see COMMIT_LUA): a cache that is behind becomes that state at once,
   * so that the woken waiter's release, or the holder's, commits in one round trip. The layout is a
   * published commit's, with every record of the store and the tombstones in full.
   */
  private replace(lines: readonly string[], words: readonly string[], epoch: string): string[] | null {
    const touched = words.slice(3);
    const cache = this.cache;
    if (cache === null || cache.epoch !== epoch) return null;
    // In place, and only forward: a decision in flight compares this very object's version with
    // its answer's (see commit), exactly as when follow() moved it.
    if (Number(cache.version) >= Number(words[0])) return touched;
    this.followed += 1;
    // A new Map, not clear(): V8 links a cleared Map's old table to its new one (for iterators), and
    // a scavenge keeps whatever a table in the old generation points to. Cleared on every such
    // message, the chain of tables and their records since the last full collection survived every
    // scavenge (--trace-gc-nvp, three handles waiting in one process: ~0.47 MB copied per scavenge
    // with clear(), ~0.14 MB with a new Map).
    const locks = new Map<string, LockRecord>();
    for (const json of lines.slice(3)) {
      // The script sends only records that begin with their own field as id: that id, not whatever
      // the JSON says further on (parseRecord reads a record whose id differs as unreadable).
      const id = json.slice(7, json.indexOf('"', 7));
      locks.set(id, this.recordOf(id, json));
    }
    cache.locks = locks;
    cache.fence = Number(lines[1]);
    cache.tombstones = JSON.parse(lines[2]!) as Tombstone[];
    cache.version = words[0]!;
    cache.known.clear();
    return touched;
  }

  /**
   * Writes a published commit's records into a cache that is behind it, leaving the cache's version
   * as it was: every commit from this handle still fails its compare-and-set and syncs (which
   * rewrites these records too), but a waiter finds the locks handed to it without asking. Only
   * answers made from the cache on purpose (TransactOptions.cached) may see the mix.
   */
  private mix(lines: readonly string[], words: readonly string[]): string[] | null {
    const cache = this.cache;
    if (cache === null) return null;
    const touched = words.slice(3);
    this.writeRecords(cache, lines, touched);
    return touched;
  }

  /** A published commit's records and fence into the cache: its lines after the third, then deletes. */
  private writeRecords(cache: Cache, lines: readonly string[], touched: readonly string[]): void {
    this.followed += 1;
    const written = new Set<string>();
    for (const json of lines.slice(3)) {
      let record = this.known(json);
      if (record === undefined) {
        const value = JSON.parse(json) as { id?: unknown };
        if (typeof value.id !== 'string') throw new Error('a published record without an id');
        record = this.recordOf(value.id, json, value);
      }
      written.add(record.id);
      cache.locks.set(record.id, record);
    }
    for (const id of touched) if (!written.has(id)) cache.locks.delete(id);
    cache.fence = Math.max(cache.fence, Number(lines[1]));
  }

  /**
   * The record a store's JSON says, parsed once: the same JSON comes back in many answers and
   * messages (every hand-off sends the whole store to the next holder), and records are never
   * changed in place, so one parsed object serves them all. `value` is the JSON already parsed.
   */
  recordOf(id: string, json: string, value?: unknown): LockRecord {
    const known = this.known(json);
    if (known !== undefined && known.id === id) return known;
    const record = parseRecord(id, json, this.serverNow, value);
    // An unreadable record stands for what was seen at that moment: it is not kept.
    if (record.unreadable) return record;
    this.remember(json, record);
    return record;
  }

  /**
   * A record this handle writes, as the JSON it sends: answers and messages that bring that JSON
   * back (the commit's own message, a sync) find it, not parsed again. Only the last few are kept,
   * and go into the memo only when they do come back: remembered on every write, each record and
   * its JSON outlived the young generation (copied, promoted, then collected by a full GC), which
   * cost ~6 of the ~27 us of JavaScript in one agent's acquire/release pair (answers faked).
   */
  wrote(json: string, record: LockRecord): void {
    this.recentJson[this.recentAt] = json;
    this.recentRecords[this.recentAt] = record;
    this.recentAt = (this.recentAt + 1) % RECENT_KEPT;
  }

  /** The record this JSON parses to, if it is in the memo or among the handle's last writes. */
  private known(json: string): LockRecord | undefined {
    const record = this.parsed.get(json);
    if (record !== undefined) return record;
    const at = this.recentJson.indexOf(json);
    if (at === -1) return undefined;
    const mine = this.recentRecords[at]!;
    this.remember(json, mine);
    return mine;
  }

  /** Into the memo of recordOf, which starts over when full (a record's notes make it grow). */
  private remember(json: string, record: LockRecord): void {
    if (this.parsed.size >= PARSED_KEPT || this.parsedBytes + json.length > PARSED_BYTES) {
      this.parsed.clear();
      this.parsedBytes = 0;
    }
    this.parsed.set(json, record);
    this.parsedBytes += json.length;
  }

  /** A sync answer (see COMMIT_LUA) into the cache: a delta since its version, or every lock. */
  applySync(reply: string[], epoch: string, version: string): void {
    const fence = Number(reply[4] ?? 0);
    const tombstones = reply[5] ?? '';
    const delta = reply[6] === 'delta' && this.cache !== null;
    const locks = delta ? this.cache!.locks : new Map<string, LockRecord>();
    for (let i = 7; i + 1 < reply.length; i += 2) {
      const id = reply[i]!;
      const json = reply[i + 1]!;
      if (json === '') locks.delete(id);
      else locks.set(id, this.recordOf(id, json));
    }
    let parsedTombstones = delta ? this.cache!.tombstones : [];
    if (tombstones !== '') {
      const parsed = parseTombstones(tombstones);
      if (parsed === null) throw this.damaged('field #tombstones cannot be read');
      parsedTombstones = parsed;
    }
    this.cache = { epoch, version, known: new Map(), locks, fence, tombstones: parsedTombstones };
  }
}

/** The tombstone list a store holds, or null when it cannot be read. */
export function parseTombstones(json: string): Tombstone[] | null {
  try {
    const value = JSON.parse(json) as unknown;
    return Array.isArray(value) ? (value as Tombstone[]) : null;
  } catch {
    return null;
  }
}

export function parseRecord(id: string, json: string, now: number, parsed?: unknown): LockRecord {
  try {
    const value = parsed ?? (JSON.parse(json) as unknown);
    if (isLockRecord(value) && value.id === id) return value;
  } catch {
    // Fails closed below.
  }
  return unreadableRecord(id, now);
}
