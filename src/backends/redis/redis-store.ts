/**
 * The Redis store, for agents on several machines. Decisions are the same pure functions as on
 * every backend: each handle keeps a cached snapshot of the store, decides on it locally, and
 * commits through one Lua script that applies the changes only if the store is still at the
 * snapshot's version (compare-and-set) and the server's clock is still inside the window the
 * decision holds for. A lost race answers the missing changes, and the handle decides again.
 *
 * So a handle whose snapshot is current (the usual case for a daemon or a library user) pays one
 * round trip per decision; a new handle (each CLI run) pays one more to load the snapshot. Time
 * comes from the server: a decision runs at a lower bound of the server's clock, estimated from
 * the last answer, and the script refuses it if the server's time lies past a lease's expiry, a
 * holder's staleness or a short bound (which also keeps a server that was paused from committing,
 * on waking, a decision its client already gave up on).
 */
import { createRequire } from 'node:module';
import type { Changes, Decided, StoreEvent, StoreState, Tombstone } from '../../core/decide.js';
import { readEvent } from '../../core/events.js';
import { isEmpty } from '../../core/decide.js';
import { AgentLockError } from '../../core/errors.js';
import type { LockRecord } from '../../core/lock.js';
import { isLockRecord, unreadableRecord } from '../../core/lock.js';
import {
  type RepairReport,
  type Backend,
  stopper,
  type TransactOptions,
  tell,
  type WatchListener,
  waiterTag,
} from '../backend.js';
import { applyChanges } from '../memory/memory-store.js';
import { randomBytesPooled } from '../../host/random.js';
import { COMMIT_LUA, REPAIR_LUA, WATCH_LUA } from './commit-script.js';
import { type CommitArgs, commitArgv, commitHow, type StoreKeys, withFences } from './commit.js';
import { owns, readKeys, recordDomain, STORE_DOMAIN, writeKeys } from '../../core/domains.js';
import { parseRedisUrl, type RedisTarget } from '../../core/redis-url.js';

export interface RedisStoreOptions {
  /** The server's URL, password included (it is used for the connection only). */
  readonly url: string;
  /** Keys live under `{prefix}:`, one hash slot, so the store works on a Redis Cluster. */
  readonly prefix: string;
  /** Bound on connecting and on each command: past it the store is unavailable (exit 2). */
  readonly timeoutMs: number;
  /** How long a decision may keep losing races to other clients before E_STORE_BUSY. */
  readonly busyTimeoutMs: number;
  /** AGENT_LOCK_STALE_MINUTES in ms: holders on other hosts are gone past it, a time threshold. */
  readonly staleMs: number;
}

/** The commands of ioredis this store uses, so that the library is loaded only when needed. */
interface Client {
  agentLockCommit(...args: string[]): Promise<string[]>;
  agentLockWatch(key: string, ms: string): Promise<unknown>;
  agentLockRepair(...args: string[]): Promise<number>;
  hgetall(key: string): Promise<Record<string, string>>;
  select(db: number): Promise<unknown>;
  type(key: string): Promise<string>;
  rename(key: string, to: string): Promise<unknown>;
  lrange(key: string, start: number, stop: number): Promise<string[]>;
  xrevrange(
    key: string,
    end: string,
    start: string,
    count: 'COUNT',
    n: number,
  ): Promise<[string, string[]][]>;
  connect(): Promise<void>;
  disconnect(): void;
  on(event: 'error', listener: (error: Error) => void): unknown;
  on(event: 'message', listener: (channel: string, message: string) => void): unknown;
  duplicate(): Client;
  subscribe(channel: string): Promise<unknown>;
  defineCommand(name: string, definition: { numberOfKeys: number; lua: string }): void;
  call(command: string, ...args: string[]): Promise<unknown>;
}

/** What `alock doctor` asks the server: null where it would not say (CONFIG is often refused). */
export interface RedisServerFacts {
  readonly version: string | null;
  /** The server's clock (TIME), and this host's clock halfway through the round trip. */
  readonly serverMs: number;
  readonly localMs: number;
  readonly maxmemoryPolicy: string | null;
}

interface Cache {
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

/** What a handle's commits met: for tests and benchmarks (a lost race is a sync answer). */
export interface CommitStats {
  /** Change sets committed. */
  committed: number;
  /** Commits (or validations) refused because what the decision read had changed: decided again. */
  conflicts: number;
  /** Refused because the server's clock had left the decision's window: decided again. */
  late: number;
  /** Decisions on some domains made again on the whole store (they would change a record outside). */
  widened: number;
}

/** Parsed records kept by their JSON (recordOf), at most so many and so many bytes of JSON. */
const PARSED_KEPT = 512;
const PARSED_BYTES = 1 << 20;
/** Longest a decision may wait between being made and being committed. */
const WINDOW_MS = 1000;
/** How far ahead a watcher keeps the store publishing (renewed every third of it). */
const WATCH_MS = 30_000;

declare const __BUNDLED_IOREDIS__: boolean;

/**
 * ioredis is CommonJS. The CLI's bundle carries it inside (a dynamic import esbuild resolves). The
 * library keeps it in node_modules and loads it with require: an ESM import of a CommonJS module
 * makes Node lex its source for named exports, which costs ~17 ms here and, worse, a ~60-300 ms
 * optimising compile of the lexer on a background thread that competes with the first commits.
 */
type Ioredis = Pick<typeof import('ioredis'), 'Redis' | 'Cluster'>;
function loadIoredis(): Promise<Ioredis> {
  if (typeof __BUNDLED_IOREDIS__ === 'boolean' && __BUNDLED_IOREDIS__) return import('ioredis');
  return Promise.resolve(createRequire(import.meta.url)('ioredis') as Ioredis);
}

export class RedisStore implements Backend {
  readonly kind = 'redis' as const;
  readonly location: string;
  readonly prefix: string;
  readonly namespace: string;
  private readonly target: RedisTarget;
  private readonly keys: StoreKeys;
  readonly stats: CommitStats = { committed: 0, conflicts: 0, late: 0, widened: 0 };
  private readonly channel: string;
  private client: Client | null = null;
  private connecting: Promise<Client> | null = null;
  private lastError: Error | null = null;
  private cache: Cache | null = null;
  /** Server time (epoch ms) in the last answer, and our monotonic clock when it arrived. */
  private serverNow = 0;
  private receivedAt = 0;
  private queue: Promise<unknown> = Promise.resolve();
  /** Commits folded in from the channel: a cache that moved is no longer the last answer's state. */
  private followed = 0;
  private readonly listeners = new Set<WatchListener>();
  /** Record JSON -> the record it parses to (see recordOf), for about as many records as a store holds. */
  private readonly parsed = new Map<string, LockRecord>();
  private parsedBytes = 0;
  /** Wake channel -> the listeners of watchWaiter() on it. */
  private readonly waiters = new Map<string, Set<WatchListener>>();
  private subscriber: Client | null = null;
  private subscribing: Promise<Client> | null = null;
  /** Channels subscribed (or being subscribed) on the subscriber connection. */
  private readonly channels = new Map<string, Promise<unknown>>();
  private announcer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(private readonly options: RedisStoreOptions) {
    this.target = parseRedisUrl(options.url);
    this.location = this.target.display;
    this.prefix = options.prefix;
    this.namespace = options.prefix;
    const tag = `{${options.prefix}}`;
    // The history is a stream under a name of its own: stores that kept breaks in a list at
    // `:events` go on working (that list is left as it was).
    this.keys = {
      store: `${tag}:store`,
      changes: `${tag}:changes`,
      history: `${tag}:history`,
      domains: `${tag}:domains`,
    };
    this.channel = `${tag}:changed`;
  }

  /** Decisions of one handle run one at a time: each needs the snapshot the last one left. */
  transact<T>(
    decide: (state: StoreState, now: number) => Decided<T>,
    clock?: () => number,
    options: TransactOptions = {},
  ): Promise<T> {
    const domains = options.domains !== undefined && options.domains.length > 0 ? options.domains : null;
    const run = this.queue.then(() => this.decideAndCommit(decide, clock, options.cached === true, domains));
    this.queue = run.catch(() => undefined);
    return run;
  }

  /**
   * Each stream entry holds one commit's events (at least one): the last `limit` entries hold the
   * last `limit` events. An event's id is its entry's id and its place in it (`ENTRY/i`).
   */
  async events(limit: number, after?: string): Promise<StoreEvent[]> {
    const client = await this.connection();
    const key = this.keys.history;
    const start = after === undefined ? '-' : `(${after.split('/')[0]}`;
    const entries = await this.call(() => client.xrevrange(key, '+', start, 'COUNT', limit));
    const events: StoreEvent[] = [];
    for (const [entry, fields] of entries.reverse()) {
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

  async serverFacts(): Promise<RedisServerFacts> {
    const client = await this.connection();
    const info = String(await this.call(() => client.call('INFO', 'server')));
    const sent = Date.now();
    const time = (await this.call(() => client.call('TIME'))) as [string, string];
    const localMs = (sent + Date.now()) / 2;
    const policy = await this.call(() => client.call('CONFIG', 'GET', 'maxmemory-policy')).catch(() => null);
    return {
      version: /^redis_version:(\S+)/m.exec(info)?.[1] ?? null,
      serverMs: Number(time[0]) * 1000 + Number(time[1]) / 1000,
      localMs,
      maxmemoryPolicy: Array.isArray(policy) && typeof policy[1] === 'string' ? policy[1] : null,
    };
  }

  /**
   * While someone listens, every commit publishes the ids it touched. One subscriber connection
   * per handle serves every listener (a wait, a lease) and stays open until close(): opening one
   * per wait costs milliseconds, which is the whole budget of a hand-off.
   */
  async watch(listener: WatchListener): Promise<() => Promise<void>> {
    const client = await this.connection();
    this.listeners.add(listener);
    try {
      await this.subscribeTo(client, this.channel);
      // Commits publish only while the store's #watch lies ahead: renew it well before it lapses.
      if (this.announcer === null) {
        await this.announce(client);
        this.announcer = setInterval(() => {
          if (this.listeners.size > 0) this.announce(client).catch(() => undefined);
        }, WATCH_MS / 3);
        this.announcer.unref();
      }
    } catch (error) {
      this.listeners.delete(listener);
      throw error;
    }
    return stopper(this.listeners, listener);
  }

  /**
   * A waiter hears only the commits that name it, on a channel of its own (one per process, see
   * waiterKey), subscribed once per handle and kept until close().
   */
  async watchWaiter(waiter: string, listener: WatchListener): Promise<() => Promise<void>> {
    const client = await this.connection();
    const channel = this.wakeChannel(waiter);
    let set = this.waiters.get(channel);
    if (!set) {
      set = new Set();
      this.waiters.set(channel, set);
    }
    set.add(listener);
    try {
      await this.subscribeTo(client, channel);
    } catch (error) {
      set.delete(listener);
      throw error;
    }
    return stopper(set, listener);
  }

  private wakeChannel(waiter: string): string {
    return `{${this.prefix}}:wake:${waiterTag(waiter)}`;
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
      let record = this.parsed.get(json);
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
  private recordOf(id: string, json: string, value?: unknown): LockRecord {
    const known = this.parsed.get(json);
    if (known !== undefined && known.id === id) return known;
    const record = parseRecord(id, json, this.serverNow, value);
    // An unreadable record stands for what was seen at that moment: it is not kept.
    if (record.unreadable) return record;
    this.remember(json, record);
    return record;
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

  private announce(client: Client): Promise<unknown> {
    return this.call(() => client.agentLockWatch(this.keys.store, String(WATCH_MS)));
  }

  /** One subscriber connection per handle; each channel is subscribed once and stays. */
  private async subscribeTo(client: Client, channel: string): Promise<void> {
    const subscriber = await this.subscriberOf(client);
    let subscribed = this.channels.get(channel);
    if (!subscribed) {
      subscribed = this.call(() => subscriber.subscribe(channel)).catch((error: unknown) => {
        this.channels.delete(channel);
        throw error;
      });
      this.channels.set(channel, subscribed);
    }
    await subscribed;
  }

  private subscriberOf(client: Client): Promise<Client> {
    this.subscribing ??= (async () => {
      const subscriber = client.duplicate();
      subscriber.on('error', (error) => {
        this.lastError = error;
      });
      subscriber.on('message', (channel, message) => this.hear(channel, message));
      this.subscriber = subscriber;
      return subscriber;
    })();
    return this.subscribing;
  }

  /** A published commit: folded into the cache, then told to the listeners of its channel. */
  private hear(channel: string, message: string): void {
    if (this.closed) return;
    const global = channel === this.channel;
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
      if (this.cache) forget(this.cache);
      touched = null;
    }
    if (inform) return;
    const listeners = global ? this.listeners : this.waiters.get(channel);
    if (listeners) tell(listeners, touched);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.queue;
    if (this.announcer) clearInterval(this.announcer);
    this.listeners.clear();
    this.waiters.clear();
    this.subscriber?.disconnect();
    this.subscriber = null;
    this.client?.disconnect();
    this.client = null;
  }

  private async decideAndCommit<T>(
    decide: (state: StoreState, now: number) => Decided<T>,
    clock: (() => number) | undefined,
    cached: boolean,
    domains: readonly string[] | null,
  ): Promise<T> {
    if (this.closed) throw new AgentLockError('E_CLOSED', 'this store handle is closed');
    const client = await this.connection();
    // With a subscription, commits already on the wire are folded in first (setImmediate runs
    // after the event loop's I/O poll): deciding on them saves the round trip of a lost race. Not
    // for a look at the cache on purpose: a waiter woken by a message has just folded it in, and
    // that turn of the event loop lay between the hand-off and its grant.
    if (this.subscriber !== null && !cached) await new Promise((resolve) => setImmediate(resolve));
    const giveUp = performance.now() + this.options.busyTimeoutMs;
    // `exact`: the cache is the server's state at `serverNow` (just answered), so a decision that
    // changes nothing needs no second trip.
    let exact = false;
    let followed = this.followed;
    if (this.cache === null) {
      await this.commit(client, { changes: null, now: 0, validUntil: 0, checkTime: false });
      exact = true;
      followed = this.followed;
    }
    let within = domains;
    for (;;) {
      if (this.followed !== followed) exact = false;
      const cache = this.cache!;
      const now = clock ? clock() : exact ? this.serverNow : this.estimateNow();
      // Fences follow the server's clock in microseconds (or one past the last, if larger): so
      // they keep growing even after the server lost its data or came back from an older snapshot.
      const base = Math.max(cache.fence, now * 1000);
      // A decision on some domains still sees the whole snapshot, so that it reaps a dead holder's
      // lock wherever it lies (DESIGN 9.2: on the next decision). What it answers depends only on
      // its domains' records, which the script compares: scopes of other domains can neither
      // conflict with its scopes, nor cover them, nor queue behind them (core/domains).
      const state: StoreState = { locks: cache.locks, fence: base, tombstones: cache.tombstones };
      const decided = decide(state, now);
      if (within !== null && !inside(decided.changes, cache.locks, within)) {
        // It changes something outside its domains' subtrees (a reap elsewhere, a wider lock handed
        // over, whose effects reach domains it did not compare) or the tombstones: made again and
        // compared whole.
        this.stats.widened += 1;
        within = null;
        continue;
      }
      const readOnly = isEmpty(decided.changes, state);
      if (readOnly && (exact || cached) && clock === undefined) return decided.result;
      // The store's fence moves only when the decision granted one.
      const changes = {
        ...decided.changes,
        fence: decided.changes.fence > base ? decided.changes.fence : cache.fence,
      };
      const answer = await this.commit(client, {
        changes: readOnly ? null : changes,
        now,
        validUntil: this.validUntil(now),
        checkTime: clock === undefined,
        domains: within,
        seenFence: base,
      });
      if (answer.kind === 'folded' || answer.kind === 'rebased' || answer.kind === 'ok') {
        if (!readOnly) this.stats.committed += 1;
        // Fences the script moved up (FENCES in commit-script.ts): the result says what was granted.
        const fences = new Map<string, number>();
        if (!readOnly && answer.offset !== 0) {
          for (const record of changes.put) {
            if (record.fence > base) fences.set(record.id, this.fenceOf(record, answer.offset));
          }
        }
        if (answer.kind === 'ok' && !readOnly) {
          const put =
            fences.size === 0
              ? changes.put
              : changes.put.map((r) => (fences.has(r.id) ? { ...r, fence: fences.get(r.id)! } : r));
          applyChanges(this.cache!, {
            ...changes,
            put,
            fence: changes.fence > base ? changes.fence + answer.offset : changes.fence,
          });
        }
        return withFences(decided.result, fences);
      }
      if (answer.kind === 'time') this.stats.late += 1;
      else this.stats.conflicts += 1;
      exact = true;
      followed = this.followed;
      if (performance.now() > giveUp) {
        throw new AgentLockError(
          'E_STORE_BUSY',
          `the redis store at ${this.location} kept changing under this decision for ${Math.round(this.options.busyTimeoutMs / 1000)} s`,
          { hint: 'try again' },
        );
      }
    }
  }

  /** A new grant's fence as the store moved it: read back from the cache when the move is unknown. */
  private fenceOf(record: LockRecord, offset: number): number {
    if (Number.isFinite(offset)) return record.fence + offset;
    return this.cache?.locks.get(record.id)?.fence ?? record.fence;
  }

  /** A lower bound of the server's clock: its last answer plus the time elapsed since, less 1 ms. */
  private estimateNow(): number {
    return this.serverNow + Math.floor(performance.now() - this.receivedAt) - 1;
  }

  /** The first instant after `now` at which some decision on the cached state could differ. */
  private validUntil(now: number): number {
    let until = now + Math.min(WINDOW_MS, this.options.timeoutMs);
    for (const record of this.cache!.locks.values()) {
      const edge = record.expires_at ?? record.updated_at + this.options.staleMs + 1;
      if (edge > now && edge < until) until = edge;
    }
    return until;
  }

  /**
   * Sends a change set (or null: validate only) and folds the answer into the cache: 'ok' when
   * committed, 'folded' when committed and already in the cache (it came on the channel first),
   * 'rebased' when committed on a newer store (the cache is synced to it), 'time' and 'again' when
   * the caller must decide again on the refreshed cache. `offset`: how far the script moved the new
   * fences up (NaN: it did, by an unknown amount; the cache is then synced).
   */
  private async commit(
    client: Client,
    sent: {
      changes: Changes | null;
      now: number;
      validUntil: number;
      checkTime: boolean;
      domains?: readonly string[] | null;
      seenFence?: number;
    },
  ): Promise<{ kind: 'ok' | 'folded' | 'rebased' | 'time' | 'again'; offset: number }> {
    const { changes } = sent;
    const cache = this.cache;
    const domains = sent.domains ?? null;
    const reads: [string, number][] = [];
    if (cache && domains !== null) {
      const at = Number(cache.version);
      for (const key of readKeys(domains)) reads.push([key, Math.max(at, cache.known.get(key) ?? 0)]);
    }
    const writes = new Set<string>();
    const put: [string, string][] = [];
    const notify: string[] = [];
    if (changes !== null) {
      for (const record of changes.put) {
        const json = JSON.stringify(record);
        put.push([record.id, json]);
        // Answers and messages send it back as written: found, not parsed again (see recordOf).
        // Decisions write only JSON-safe records (no undefined fields, finite numbers), so the
        // object stands for what parsing that JSON gives.
        this.remember(json, record);
        writeKeys(recordDomain(record), writes);
      }
      for (const id of changes.del) {
        const record = cache?.locks.get(id);
        writeKeys(record === undefined ? STORE_DOMAIN : recordDomain(record), writes);
      }
      // Waiters to wake, then holders to inform (their channels marked '~'): see COMMIT_LUA.
      const wake = changes.wake ?? [];
      for (const waiter of wake) notify.push(this.wakeChannel(waiter));
      for (const holder of changes.inform ?? []) {
        if (!wake.includes(holder)) notify.push(`~${this.wakeChannel(holder)}`);
      }
    }
    const args: CommitArgs = {
      keys: this.keys,
      epoch: cache?.epoch ?? '',
      version: cache?.version ?? '',
      checkTime: sent.checkTime,
      how:
        changes !== null && cache
          ? commitHow(changes, cache.locks, sent.checkTime ? null : this.estimateNow())
          : '',
      now: sent.now,
      validUntil: sent.validUntil,
      fence: changes?.fence ?? cache?.fence ?? 0,
      seenFence: domains === null ? null : (sent.seenFence ?? null),
      tombstones: changes?.tombstones ? JSON.stringify(changes.tombstones) : '',
      channel: this.channel,
      commitId: changes ? randomBytesPooled(6).toString('base64url') : '',
      reads,
      writes,
      put,
      del: changes?.del ?? [],
      notify,
      events: changes !== null && changes.events.length > 0 ? JSON.stringify(changes.events) : null,
    };
    const reply = await this.call(() => client.agentLockCommit(...commitArgv(args)));
    const [kind, epoch, version, serverNow] = reply as [string, string, string, string];
    if (kind === 'damaged') throw this.damaged(`field ${epoch} cannot be read`);
    this.serverNow = Number(serverNow);
    this.receivedAt = performance.now();
    if (kind === 'ok') {
      // Compared whole, the commit was made on the snapshot's version and moved no fence.
      const previous = reply[4] ?? cache?.version ?? '';
      const offset = reply[5] === '?' && domains !== null ? Number.NaN : Number(reply[5] ?? 0) || 0;
      // The channel may have carried this commit, and later ones, before its answer came back:
      // then the cache has it already (and maybe what came after): leave it as it is.
      if (changes !== null && cache && Number(cache.version) >= Number(version)) {
        return { kind: 'folded', offset };
      }
      if (cache && Number.isNaN(offset)) {
        // A commit sent again whose first answer was lost: the next decision syncs.
        forget(cache);
        return { kind: 'folded', offset };
      }
      if (cache && (previous === cache.version || version === cache.version)) {
        // Nothing else committed between the snapshot and this: the whole cache is current.
        cache.version = version;
        cache.known.clear();
      } else if (cache) {
        // Others committed meanwhile, elsewhere: only what this decision read is current.
        const at = Number(version);
        for (const [key] of reads) cache.known.set(key, at);
      }
      return { kind: 'ok', offset };
    }
    if (kind === 'time') return { kind: 'time', offset: 0 };
    // 'sync'; 'merged': our new tickets went in at the server's place in line, and the answer
    // brings the cache up to date with them, deciding again finds them (and maybe a free way);
    // 'rebased': our changes went in on a newer store, the decision stands. A cache that a named
    // message moved past the answer's version meanwhile is newer still: it stays.
    const current = this.cache;
    if (!(current && current.epoch === epoch && Number(current.version) > Number(version)))
      this.applySync(reply, epoch, version);
    return kind === 'rebased' ? { kind: 'rebased', offset: Number.NaN } : { kind: 'again', offset: 0 };
  }

  private applySync(reply: string[], epoch: string, version: string): void {
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

  private connection(): Promise<Client> {
    if (this.client) return Promise.resolve(this.client);
    this.connecting ??= this.open().then(
      (client) => {
        this.client = client;
        return client;
      },
      (error: unknown) => {
        this.connecting = null;
        throw error;
      },
    );
    return this.connecting;
  }

  private async open(): Promise<Client> {
    const { Redis, Cluster } = await loadIoredis();
    const { target, options } = this;
    const common = {
      username: target.username,
      password: target.password,
      tls: target.tls ? {} : undefined,
      connectTimeout: options.timeoutMs,
      commandTimeout: options.timeoutMs,
      maxRetriesPerRequest: 1,
      // The ready check costs a round trip per connection; a server still loading its data
      // answers LOADING to the first command instead, which is reported like any other error.
      enableReadyCheck: false,
      lazyConnect: true,
      // A refused connection would otherwise keep the process alive for 2 s after disconnect().
      disconnectTimeout: 20,
      connectionName: 'agent-lock',
      // CLIENT SETINFO is unknown before Redis 7.2: skip it rather than pay an error per connection.
      disableClientInfo: true,
      // At least 100 ms: COMMIT_LUA takes a merge only within 50 ms of its decision, so a merge that
      // ioredis sends again after reconnecting is never applied twice (MERGE in commit-script.ts).
      retryStrategy: (attempt: number) => Math.min(attempt * 100, 1000),
    };
    let client: Client;
    if (target.cluster) {
      client = new Cluster(
        target.hosts.map((h) => ({ host: h.host, port: h.port })),
        {
          lazyConnect: true,
          enableReadyCheck: true,
          slotsRefreshTimeout: options.timeoutMs,
          clusterRetryStrategy: (attempt: number) => (attempt > 3 ? null : attempt * 100),
          redisOptions: common,
        },
      ) as unknown as Client;
    } else if (target.sentinel !== null) {
      client = new Redis({
        ...common,
        sentinels: target.hosts.map((h) => ({ host: h.host, port: h.port })),
        name: target.sentinel,
        db: target.db,
      }) as unknown as Client;
    } else {
      const [endpoint] = target.hosts;
      client = new Redis({
        ...common,
        host: endpoint!.host,
        port: endpoint!.port,
        db: target.db,
      }) as unknown as Client;
    }
    client.on('error', (error) => {
      this.lastError = error;
    });
    client.defineCommand('agentLockCommit', { numberOfKeys: 4, lua: COMMIT_LUA });
    client.defineCommand('agentLockWatch', { numberOfKeys: 1, lua: WATCH_LUA });
    client.defineCommand('agentLockRepair', { numberOfKeys: 3, lua: REPAIR_LUA });
    try {
      await withDeadline(client.connect(), options.timeoutMs);
    } catch (error) {
      client.disconnect();
      throw this.unavailable(error);
    }
    // ioredis selects the URL's database on connect but carries on in database 0 when the server
    // has no such database: the store would live where nobody looks. Selected once more, awaited.
    if (!target.cluster && target.db > 0) {
      try {
        await withDeadline(client.select(target.db), options.timeoutMs);
      } catch (error) {
        client.disconnect();
        if (error instanceof Error && /out of range|invalid DB index/i.test(error.message)) {
          throw new AgentLockError(
            'E_BACKEND_UNAVAILABLE',
            `the redis server at ${this.location} has no database ${target.db}`,
            { cause: error, hint: 'use a database number the server has: 0 to 15 by default' },
          );
        }
        throw this.unavailable(error);
      }
    }
    return client;
  }

  /**
   * Runs a command; any failure of the server or the connection is E_BACKEND_UNAVAILABLE, but a key
   * of another type, or data a script cannot read, is damage: E_STORE_UNREADABLE.
   */
  private async call<T>(command: () => Promise<T>): Promise<T> {
    try {
      // ioredis bounds each command (commandTimeout, also while queued offline); a cluster that
      // is not ready yet queues commands of its own, without that bound.
      return await (this.target.cluster ? withDeadline(command(), this.options.timeoutMs + 100) : command());
    } catch (error) {
      // The scripts check the store's data themselves before writing; the one damage left for the
      // server to find is a key of another type (our keys are a hash and lists).
      const message = error instanceof Error ? error.message : String(error);
      if (/^WRONGTYPE|\bWRONGTYPE Operation/.test(message)) {
        throw this.damaged('cannot be read (one of its keys is of another type)', error);
      }
      throw this.unavailable(error);
    }
  }

  private damaged(what: string, cause?: unknown): AgentLockError {
    return new AgentLockError(
      'E_STORE_UNREADABLE',
      `the redis store ${this.keys.store} at ${this.location} ${what}: nothing is granted over it`,
      {
        ...(cause === undefined ? {} : { cause }),
        hint: 'run alock repair: it moves the damage aside, kept, and the store goes on with what can be read',
      },
    );
  }

  /**
   * Moves what cannot be read aside, into {PREFIX}:damaged:<time> (kept): records that do not parse,
   * metadata that is no number or no JSON; a store key of another type is renamed there whole.
   */
  async repair(): Promise<RepairReport> {
    const client = await this.connection();
    const { store, changes, history } = this.keys;
    const aside = `{${this.prefix}}:damaged:${new Date().toISOString()}`;
    const damage: string[] = [];
    const wanted: [string, string, string][] = [
      [store, 'hash', 'store'],
      [changes, 'list', 'changes'],
      [history, 'stream', 'history'],
    ];
    for (const [key, type, name] of wanted) {
      const found = await this.call(() => client.type(key));
      if (found !== 'none' && found !== type) {
        await this.call(() => client.rename(key, `${aside}:${name}`));
        damage.push(`${key} was a ${found}, not a ${type}`);
      }
    }
    const fields = await this.call(() => client.hgetall(store));
    const move: string[] = [];
    let locksKept = 0;
    for (const [field, value] of Object.entries(fields)) {
      let bad: boolean;
      if (field === '#tombstones') bad = parseTombstones(value) === null;
      else if (field === '#version' || field === '#fence' || field === '#tomb_v' || field === '#watch')
        bad = !/^\d+$/.test(value);
      else if (field.startsWith('#')) bad = false;
      else bad = parseRecord(field, value, 0).unreadable === true;
      if (bad) {
        move.push(field, value);
        damage.push(`${field.startsWith('#') ? 'metadata' : 'record'} ${field} cannot be read`);
      } else if (!field.startsWith('#')) locksKept += 1;
    }
    const keptAt = damage.length > 0 ? [aside] : [];
    if (move.length > 0) await this.call(() => client.agentLockRepair(store, changes, aside, ...move));
    // Whatever this handle had cached is from before: it resyncs.
    this.cache = null;
    return { damage, keptAt, locksKept };
  }

  private unavailable(error: unknown): AgentLockError {
    const cause = (error instanceof Error ? error : new Error(String(error))) as NodeJS.ErrnoException;
    const last = this.lastError as NodeJS.ErrnoException | null;
    const code = cause.code ?? last?.code;
    const seconds = `${Math.round(this.options.timeoutMs / 100) / 10} s`;
    let reason: string;
    if (cause instanceof DeadlineError || /timed? ?out/i.test(cause.message))
      reason = `no answer within ${seconds}`;
    else if (code === 'ECONNREFUSED') reason = 'connection refused';
    else if (/NOAUTH|unauthenticated/i.test(`${cause.message} ${last?.message ?? ''}`))
      reason = 'the server wants a password (redis://:PASSWORD@host)';
    else if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') reason = 'host not found';
    else if (code) reason = `${code}${last?.message ? ` (${firstLine(last.message)})` : ''}`;
    else reason = firstLine(last && /closed/i.test(cause.message) ? last.message : cause.message);
    return new AgentLockError(
      'E_BACKEND_UNAVAILABLE',
      `the redis server at ${this.location} is unavailable: ${reason}`,
      {
        cause: error,
        hint: 'check that it runs and AGENT_LOCK_REDIS_URL (or REDIS_URL) points at it',
      },
    );
  }
}

class DeadlineError extends Error {}

function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlineError('timed out')), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

/** Marks a snapshot as behind, domains included: the next decision syncs. */
function forget(cache: Cache): void {
  cache.version = '';
  cache.known.clear();
}

/** Do the changes keep to the domains' subtrees (and leave the tombstones, which are the store's)? */
function inside(
  changes: Changes,
  seen: ReadonlyMap<string, LockRecord>,
  domains: readonly string[],
): boolean {
  if (changes.tombstones !== null) return false;
  for (const record of changes.put) if (!owns(domains, record)) return false;
  for (const id of changes.del) {
    const record = seen.get(id);
    if (record === undefined || !owns(domains, record)) return false;
  }
  return true;
}

function firstLine(text: string): string {
  return text.split('\n', 1)[0]!.slice(0, 200);
}

/** The tombstone list a store holds, or null when it cannot be read. */
function parseTombstones(json: string): Tombstone[] | null {
  try {
    const value = JSON.parse(json) as unknown;
    return Array.isArray(value) ? (value as Tombstone[]) : null;
  } catch {
    return null;
  }
}

function parseRecord(id: string, json: string, now: number, parsed?: unknown): LockRecord {
  try {
    const value = parsed ?? (JSON.parse(json) as unknown);
    if (isLockRecord(value) && value.id === id) return value;
  } catch {
    // Fails closed below.
  }
  return unreadableRecord(id, now);
}
