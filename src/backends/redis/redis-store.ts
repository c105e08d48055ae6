/**
 * The Redis store, for agents on several machines. Decisions are the same pure functions as on
 * every backend: each handle keeps a cached snapshot of the store, decides on it locally, and
 * commits through one Lua script that applies the changes only if the store is still at the
 * snapshot's version (compare-and-set) and the server's clock is still inside the window the
 * decision holds for. A lost race answers the missing changes, and the handle decides again.
 * A decision about some scopes (TransactOptions.domains) is compared on the versions of their
 * conflict domains only (core/domains), so that decisions on unrelated scopes never lose a race to
 * each other (issue 19). Files: connection.ts (ioredis), snapshot.ts (the cached store and the
 * messages folded into it), commit.ts (what a commit sends and how its answer is read),
 * domain-channels.ts (the channels a lease listens on: only its domains' commits).
 *
 * So a handle whose snapshot is current (the usual case for a daemon or a library user) pays one
 * round trip per decision; a new handle (each CLI run) pays one more to load the snapshot. Time
 * comes from the server: a decision runs at a lower bound of the server's clock, estimated from
 * the last answer, and the script refuses it if the server's time lies past a lease's expiry, a
 * holder's staleness or a short bound (which also keeps a server that was paused from committing,
 * on waking, a decision its client already gave up on).
 */
import type { Decided, StoreEvent, StoreState } from '../../core/decide.js';
import { isEmpty } from '../../core/decide.js';
import { AgentLockError, isAgentLockError } from '../../core/errors.js';
import type { LockRecord } from '../../core/lock.js';
import type { Backend, RepairReport, TransactOptions, WatchListener } from '../backend.js';
import { stopper, tell, waiterTag } from '../shared/listeners.js';
import { applyChanges, fenceFromClock } from '../shared/state.js';
import { type CommitLine, commit, inside, type Sent, type StoreKeys, withFences } from './commit.js';
import { type Client, Connection } from './connection.js';
import { Announcer, DomainChannels, touchedIds } from './domain-channels.js';
import { eventsOf } from './history.js';
import { layoutDamage, repairStore } from './repair.js';
import { type Cache, Snapshot } from './snapshot.js';
import { parseRedisUrl } from '../../core/redis-url.js';

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

/** What `alock doctor` asks the server: null where it would not say (CONFIG is often refused). */
export interface RedisServerFacts {
  readonly version: string | null;
  /** The server's clock (TIME), and this host's clock halfway through the round trip. */
  readonly serverMs: number;
  readonly localMs: number;
  readonly maxmemoryPolicy: string | null;
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

/** Metadata fields that hold a number (the commit script refuses the store when one does not). */
/** Longest a decision may wait between being made and being committed. */
const WINDOW_MS = 1000;

/** No fence moved: shared, never written. */
const NO_FENCES: ReadonlyMap<string, number> = new Map();

export class RedisStore implements Backend {
  readonly kind = 'redis' as const;
  readonly location: string;
  readonly prefix: string;
  readonly namespace: string;
  private readonly keys: StoreKeys;
  readonly stats: CommitStats = { committed: 0, conflicts: 0, late: 0, widened: 0 };
  private readonly channel: string;
  private readonly connection: Connection;
  private readonly snapshot: Snapshot;
  private queue: Promise<unknown> = Promise.resolve();
  private readonly listeners = new Set<WatchListener>();
  /** Wake channel -> the listeners of watchWaiter() on it. */
  private readonly waiters = new Map<string, Set<WatchListener>>();
  private subscriber: Client | null = null;
  private subscribing: Promise<Client> | null = null;
  /** Channels subscribed (or being subscribed) on the subscriber connection. */
  private readonly channels = new Map<string, Promise<unknown>>();
  /** Listeners of some domains, on their channels (see watch). */
  private readonly domainChannels: DomainChannels;
  private readonly announcer: Announcer;
  private closed = false;

  constructor(private readonly options: RedisStoreOptions) {
    const target = parseRedisUrl(options.url);
    this.location = target.display;
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
    this.domainChannels = new DomainChannels(
      this.channel,
      async (channel) => this.subscribeTo(await this.connection.get(), channel),
      (channel) => this.unsubscribeFrom(channel),
    );
    this.announcer = new Announcer(
      async (field, ms) => {
        const client = await this.connection.get();
        await this.call(() => client.agentLockWatch(this.keys.store, String(ms), field));
      },
      (field) => (field === '#watch' ? this.listeners.size : this.domainChannels.size) > 0,
    );
    this.connection = new Connection(target, options.timeoutMs, this.location, (what, cause) =>
      this.damaged(what, cause),
    );
    this.snapshot = new Snapshot((what) => this.damaged(what));
  }

  /** @internal The snapshot's cache, for tests that look inside. */
  get cache(): Cache | null {
    return this.snapshot.cache;
  }
  /** @internal The connected client (null before the first command), for tests that look inside. */
  get client(): Client | null {
    return this.connection.current;
  }

  private call<T>(command: () => Promise<T>): Promise<T> {
    return this.connection.call(command).catch((error: unknown) => this.nameWrongKey(error));
  }

  /**
   * A WRONGTYPE error says no key: the layout's keys are looked at, and the error names the ones of
   * another type (`{p}:domains is a string, not a hash`), so that the person sees what repair moves.
   */
  private async nameWrongKey(error: unknown): Promise<never> {
    if (
      !isAgentLockError(error) ||
      error.code !== 'E_STORE_UNREADABLE' ||
      !/WRONGTYPE/.test(String(error.cause))
    )
      throw error;
    const client = await this.connection.get();
    const wrong = await layoutDamage(client, this.keys, (command) => this.connection.call(command)).catch(
      () => [],
    );
    if (wrong.length === 0) throw error;
    throw this.damaged(
      `cannot be read: ${wrong.map((w) => `${w.key} is a ${w.found}, not a ${w.type}`).join('; ')}`,
      error.cause,
    );
  }

  /** The layout's keys of another type, as sentences (doctor). */
  async layoutDamage(): Promise<string[]> {
    const client = await this.connection.get();
    const wrong = await layoutDamage(client, this.keys, (command) => this.connection.call(command));
    return wrong.map((w) => `${w.key} is a ${w.found}, not a ${w.type}`);
  }

  /** Decisions of one handle run one at a time: each needs the snapshot the last one left. */
  transact<T>(
    decide: (state: StoreState, now: number) => Decided<T>,
    clock?: () => number,
    options: TransactOptions = {},
  ): Promise<T> {
    const domains = options.domains !== undefined && options.domains.length > 0 ? options.domains : null;
    const run = this.queue.then(() => this.decideAndCommit(decide, clock, Boolean(options.cached), domains));
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** The last `limit` events of the history stream (./history.ts reads them). */
  async events(limit: number, after?: string): Promise<StoreEvent[]> {
    const client = await this.connection.get();
    const key = this.keys.history;
    const start = after === undefined ? '-' : `(${after.split('/')[0]}`;
    return eventsOf(await this.call(() => client.xrevrange(key, '+', start, 'COUNT', limit)), limit);
  }

  async serverFacts(): Promise<RedisServerFacts> {
    const client = await this.connection.get();
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
  async watch(listener: WatchListener, domains?: readonly string[]): Promise<() => Promise<void>> {
    const client = await this.connection.get();
    // A lease hears only the commits on its domains: a commit no longer wakes every agent's.
    if (domains !== undefined && domains.length > 0) {
      const stop = await this.domainChannels.add(listener, domains);
      try {
        await this.announcer.keep('#dwatch');
      } catch (error) {
        await stop();
        throw error;
      }
      return stop;
    }
    this.listeners.add(listener);
    try {
      await this.subscribeTo(client, this.channel);
      await this.announcer.keep('#watch');
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
    const client = await this.connection.get();
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

  /** Ends a subscription nobody needs any more (a domain's channel whose last lease ended). */
  private async unsubscribeFrom(channel: string): Promise<void> {
    const subscriber = this.subscriber;
    // Synchronously, so that a new subscription to it goes after this on the connection.
    if (!this.channels.delete(channel) || subscriber === null || this.closed) return;
    await this.call(() => subscriber.unsubscribe(channel));
  }

  private subscriberOf(client: Client): Promise<Client> {
    this.subscribing ??= (async () => {
      const subscriber = client.duplicate();
      subscriber.on('error', (error) => {
        this.connection.lastError = error;
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
    if (!global && channel.startsWith(`${this.channel}:`)) {
      // A domain's channel (maybe just left): in the layout of the store's, told as it is.
      const { touched } = this.snapshot.fold(message, true);
      tell(this.domainChannels.of(channel) ?? [], touched ?? touchedIds(message));
      return;
    }
    const { touched, inform } = this.snapshot.fold(message, global);
    if (inform) return;
    const listeners = global ? this.listeners : this.waiters.get(channel);
    if (listeners) tell(listeners, touched);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.queue;
    this.announcer.stop();
    this.listeners.clear();
    this.domainChannels.clear();
    this.waiters.clear();
    this.subscriber?.disconnect();
    this.subscriber = null;
    this.connection.disconnect();
  }

  private async decideAndCommit<T>(
    decide: (state: StoreState, now: number) => Decided<T>,
    clock: (() => number) | undefined,
    cached: boolean,
    domains: readonly string[] | null,
  ): Promise<T> {
    if (this.closed) throw new AgentLockError('E_CLOSED', 'this store handle is closed');
    const client = await this.connection.get();
    // With a subscription, commits already on the wire are folded in first (setImmediate runs
    // after the event loop's I/O poll): deciding on them saves the round trip of a lost race. Not
    // for a look at the cache on purpose: a waiter woken by a message has just folded it in, and
    // that turn of the event loop lay between the hand-off and its grant.
    if (this.subscriber !== null && !cached) await new Promise((resolve) => setImmediate(resolve));
    const giveUp = performance.now() + this.options.busyTimeoutMs;
    // `exact`: the cache is the server's state at `serverNow` (just answered), so a decision that
    // changes nothing needs no second trip.
    let exact = false;
    const { snapshot } = this;
    let followed = snapshot.followed;
    const line = this.line(client);
    const send = (sent: Sent) => commit(line, sent);
    if (snapshot.cache === null) {
      await send({ changes: null, now: 0, validUntil: 0, checkTime: false });
      exact = true;
      followed = snapshot.followed;
    }
    let within = domains;
    for (;;) {
      if (snapshot.followed !== followed) exact = false;
      const cache = snapshot.cache!;
      const now = clock ? clock() : exact ? snapshot.serverNow : snapshot.estimateNow();
      // Fences follow the server's clock in microseconds (or one past the last, if larger): so
      // they keep growing even after the server lost its data or came back from an older snapshot.
      const base = Math.max(cache.fence, fenceFromClock(now));
      // A decision on some domains still sees the whole snapshot, so that it reaps a dead holder's
      // lock wherever it lies (docs/concepts.md: on the next decision). What it answers depends only on
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
      const answer = await send({
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
        // By how much is unknown for a commit sent again (its first answer lost): read them back.
        if (!readOnly && Number.isNaN(answer.offset) && snapshot.cache === null)
          await send({ changes: null, now: 0, validUntil: 0, checkTime: false });
        let fences = NO_FENCES;
        if (!readOnly && answer.offset !== 0) {
          const moved = new Map<string, number>();
          for (const record of changes.put) {
            if (record.fence > base) moved.set(record.id, this.fenceOf(record, answer.offset));
          }
          fences = moved;
        }
        if (answer.kind === 'ok' && !readOnly) {
          const put =
            fences.size === 0
              ? changes.put
              : changes.put.map((r) => (fences.has(r.id) ? { ...r, fence: fences.get(r.id)! } : r));
          applyChanges(snapshot.cache!, {
            put,
            del: changes.del,
            tombstones: changes.tombstones,
            fence: changes.fence > base ? changes.fence + answer.offset : changes.fence,
          });
        }
        return withFences(decided.result, fences);
      }
      if (answer.kind === 'time') this.stats.late += 1;
      else this.stats.conflicts += 1;
      exact = true;
      followed = snapshot.followed;
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
    return this.snapshot.cache?.locks.get(record.id)?.fence ?? record.fence;
  }

  /** The last line made, for its client: one per decision cost five closures. */
  private lastLine: CommitLine | null = null;

  private line(client: Client): CommitLine {
    if (this.lastLine !== null && this.lastLine.client === client) return this.lastLine;
    this.lastLine = {
      client,
      call: (command) => this.call(command),
      keys: this.keys,
      channel: this.channel,
      wakeChannel: (waiter) => this.wakeChannel(waiter),
      damaged: (what) => this.damaged(what),
      snapshot: this.snapshot,
    };
    return this.lastLine;
  }

  /** The first instant after `now` at which some decision on the cached state could differ. */
  private validUntil(now: number): number {
    let until = now + Math.min(WINDOW_MS, this.options.timeoutMs);
    for (const record of this.snapshot.cache!.locks.values()) {
      const edge = record.expires_at ?? record.updated_at + this.options.staleMs + 1;
      if (edge > now && edge < until) until = edge;
    }
    return until;
  }

  /** Moves what cannot be read aside, kept (./repair.ts); this handle then resyncs. */
  async repair(): Promise<RepairReport> {
    const client = await this.connection.get();
    const report = await repairStore(client, this.keys, this.prefix, (command) => this.call(command));
    this.snapshot.cache = null;
    return report;
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
}
