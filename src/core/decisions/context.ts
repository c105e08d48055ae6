/**
 * One decision in progress (Decision): a copy-on-write view of a store snapshot, its first step
 * (reap) and its last (done, which hands freed locks over in line and returns the changes). Also
 * what every decision is given: the caller and the context (clock, liveness, new ids).
 */
import { type EventType, eventOf, type StoreEvent } from '../events.js';
import type { Holder, Lock, LockRecord } from '../lock.js';
import { toLock } from '../lock.js';
import { recordThawed } from './freeze.js';
import { handOver, ticketGone } from './line.js';
import type { Decided, StoreState, Tombstone } from './outcomes.js';

export interface Caller {
  readonly agentId: string;
  readonly parentAgentId: string | null;
  readonly holder: Holder;
}

export interface DecisionContext {
  readonly now: number;
  readonly caller: Caller;
  readonly staleMs: number;
  /** Is this process (on the caller's host) still running with that start time? */
  readonly processAlive: (pid: number, started: string) => boolean;
  /**
   * The same question for the processes behind waiters' tickets, where an answer a moment old
   * will do (a dead waiter keeps its place a moment longer; no lock is at stake). Default:
   * processAlive.
   */
  readonly waiterAlive?: (pid: number, started: string) => boolean;
  readonly newLock: () => { id: string; token: string; tokenHash: string };
  /** A new lock id alone (a ticket's, which has no token of its own). Default: newLock's id. */
  readonly newId?: () => string;
  readonly hashToken: (token: string) => string;
}

/** What kind of decision this is, fixed when it opens. */
export interface DecisionOptions {
  /** A release: its answer does not depend on tickets, so it may say Changes.rebase. */
  readonly releasing?: boolean;
}

const TOMBSTONE_LIMIT = 256;
/** The events that end a lock: its askers are then told that its scope is free. */
const ENDINGS: ReadonlySet<EventType> = new Set(['released', 'expired', 'reaped', 'broken']);
const TOMBSTONE_MS = 24 * 60 * 60 * 1000;

/**
 * Whether an active lock still stands at `now`: not past its lease, and, when it lives by its holder
 * (no lease, or a claim: a claim lives by its idle lease and by the harness process that made it,
 * whichever ends first), its holder not gone. What every decision's first step (reap) asks of each
 * active lock, and a hook asks of the locks it kept from an earlier read (integrations/held-cache.ts).
 */
export function lockStands(
  record: Pick<LockRecord, 'expires_at'> & { readonly claim?: unknown },
  now: number,
  gone: () => boolean,
): boolean {
  if (record.expires_at !== null && record.expires_at <= now) return false;
  const livesByHolder = record.expires_at === null || record.claim !== undefined;
  return !(livesByHolder && gone());
}

/**
 * Provably gone: on the caller's host, no such process (pid reuse is not life); on another host, by
 * age (not updated within staleMs).
 */
export function holderGone(
  record: Pick<LockRecord, 'host' | 'pid' | 'started' | 'updated_at'>,
  ctx: Pick<DecisionContext, 'now' | 'staleMs'> & { readonly caller: { readonly holder: Holder } },
  alive: (pid: number, started: string) => boolean,
): boolean {
  const { caller, now, staleMs } = ctx;
  if (record.host !== caller.holder.host) return now - record.updated_at > staleMs;
  if (record.pid === caller.holder.pid && record.started === caller.holder.started) return false;
  return !alive(record.pid, record.started);
}

/** `alive`, asked at most once per process (pid and start time) for as long as it is kept. */
export function aliveOnce(
  alive: (pid: number, started: string) => boolean,
): (pid: number, started: string) => boolean {
  const memo = new Map<string, boolean>();
  return (pid, started) => {
    const key = `${pid}|${started}`;
    let answer = memo.get(key);
    if (answer === undefined) {
      answer = alive(pid, started);
      memo.set(key, answer);
    }
    return answer;
  };
}

/** One decision in progress: a copy-on-write view of the snapshot plus the changes made so far. */
export class Decision {
  private readonly removed = new Set<string>();
  private readonly written = new Map<string, LockRecord>();
  private fence: number;
  private tombstones: Tombstone[] | null = null;
  readonly events: StoreEvent[] = [];
  private alive: ((pid: number, started: string) => boolean) | null = null;
  private liveRecords: LockRecord[] | null = null;
  private lockRecords: LockRecord[] | null = null;
  private ticketRecords: LockRecord[] | null = null;
  private readonly releasing: boolean;
  /** Tickets this step handed over in line: ticket id -> the lock that replaced it (none: null). */
  private promoted: Map<string, LockRecord> | null = null;
  /** Set when reaping may have freed a waiter's way without removing a record (an orphan). */
  private promoting = false;
  /** Waiting processes to tell about this step (waiterKey): see Changes.wake. */
  readonly wake = new Set<string>();
  /** Processes to bring up to date with this step (waiterKey): see Changes.inform. */
  readonly inform = new Set<string>();

  /** Opens a decision on a snapshot, and takes its first step: every decision reaps. */
  static open(state: StoreState, ctx: DecisionContext, options: DecisionOptions = {}): Decision {
    const d = new Decision(state, ctx, options);
    d.reap();
    return d;
  }

  private constructor(
    private readonly state: StoreState,
    readonly ctx: DecisionContext,
    options: DecisionOptions,
  ) {
    this.fence = state.fence;
    this.releasing = options.releasing === true;
  }

  /**
   * The records as this decision has left them, in the snapshot's order, then the new ones: locks
   * and tickets. Kept until the next put or remove: a decision reads them several times between
   * writes (a generator cost an object per record on every read).
   */
  live(): readonly LockRecord[] {
    if (this.liveRecords !== null) return this.liveRecords;
    const records: LockRecord[] = [];
    const { removed, written } = this;
    const locks = this.state.locks;
    for (const [id, record] of locks) {
      if (removed.size > 0 && removed.has(id)) continue;
      records.push(written.size > 0 ? (written.get(id) ?? record) : record);
    }
    for (const [id, record] of written) if (!locks.has(id)) records.push(record);
    this.liveRecords = records;
    return records;
  }

  /**
   * The live locks (active, orphaned, unreadable), in live() order, without the tickets kept
   * beside them: what every verb but the waiting line acts on. Kept as live() is.
   */
  locks(): readonly LockRecord[] {
    this.lockRecords ??= this.live().filter((record) => record.status !== 'waiting');
    return this.lockRecords;
  }

  /** The live tickets of waiting requests (line.ts), in live() order. Kept as live() is. */
  tickets(): readonly LockRecord[] {
    this.ticketRecords ??= this.live().filter((record) => record.status === 'waiting');
    return this.ticketRecords;
  }

  put(record: LockRecord): void {
    this.forget();
    this.removed.delete(record.id);
    this.written.set(record.id, record);
  }

  remove(record: LockRecord): void {
    this.forget();
    this.written.delete(record.id);
    if (this.state.locks.has(record.id)) this.removed.add(record.id);
  }

  private forget(): void {
    this.liveRecords = null;
    this.lockRecords = null;
    this.ticketRecords = null;
  }

  nextFence(): number {
    this.fence += 1;
    return this.fence;
  }

  bury(record: LockRecord): void {
    const now = this.ctx.now;
    const kept = (this.tombstones ?? [...this.state.tombstones]).filter((t) => now - t.at < TOMBSTONE_MS);
    kept.push({
      scope: record.scope,
      tree: record.tree,
      agent_id: record.agent_id,
      token_hash: record.token_hash,
      fence: record.fence,
      at: now,
    });
    this.tombstones = kept.slice(-TOMBSTONE_LIMIT);
  }

  currentTombstones(): readonly Tombstone[] {
    return this.tombstones ?? this.state.tombstones;
  }

  /** Replaces the tombstone list (the notices of decisions/ask.ts), aged and bounded as bury's. */
  setTombstones(list: readonly Tombstone[]): void {
    const now = this.ctx.now;
    this.tombstones = list.filter((t) => now - t.at < TOMBSTONE_MS).slice(-TOMBSTONE_LIMIT);
  }

  /**
   * A lock that others asked about ended: a notice stays in the store (as a tombstone, which every
   * store keeps beside its records) until each asker's next hook call is told its scope is free,
   * with any answer of the holder it had not heard yet.
   */
  private tellAskers(record: LockRecord, why: string): void {
    const mail = record.mail ?? [];
    const askers = [...new Set(mail.filter((m) => m.type === 'ask').map((m) => m.from))];
    if (askers.length === 0) return;
    const replies: Record<string, string> = {};
    for (const m of mail) if (m.type === 'reply' && m.delivered_at === null) replies[m.to] = m.text;
    this.setTombstones([
      ...this.currentTombstones(),
      {
        scope: record.scope,
        tree: record.tree,
        agent_id: '',
        token_hash: '',
        fence: record.fence,
        at: this.ctx.now,
        askers,
        holder: record.agent_id,
        why,
        ...(Object.keys(replies).length > 0 ? { replies } : {}),
      },
    ]);
  }

  /** Records that this step did `type` to `record` (see core/events): committed with the step. */
  record(
    type: EventType,
    record: LockRecord,
    extra?: { reason?: string | null; files?: readonly string[]; fence?: number | null },
  ): void {
    this.events.push(eventOf(type, record, this.ctx.now, this.ctx.caller.agentId, extra));
    if (record.mail !== undefined && ENDINGS.has(type)) this.tellAskers(record, extra?.reason ?? type);
  }

  /** Remembers that `lock` replaced the ticket `ticketId`, handed over in line (see rebaseAgents). */
  handedOver(ticketId: string, lock: LockRecord): void {
    this.promoted ??= new Map();
    this.promoted.set(ticketId, lock);
  }

  view(record: LockRecord, token?: string): Lock {
    return toLock(record, this.ctx.now, this.ctx.staleMs, token);
  }

  done<T>(result: T): Decided<T> {
    // Whatever this decision freed goes to the first in line at once, in the same step.
    if (this.removed.size > 0 || this.promoting) handOver(this);
    const put = [...this.written.values()];
    const del = [...this.removed];
    recordThawed(this, this.state, del, put);
    return {
      result,
      changes: {
        put,
        del,
        fence: this.fence,
        tombstones: this.tombstones,
        events: this.events,
        ...(this.wake.size > 0 ? { wake: [...this.wake] } : {}),
        ...(this.inform.size > 0 ? { inform: [...this.inform] } : {}),
        ...(this.releasing && this.promoted !== null ? this.rebaseAgents(this.promoted) : {}),
      },
    };
  }

  /**
   * Changes.rebase for a step whose every write is a lock handed over in line (handOver) and whose
   * every delete is a ticket so handed over or an active lock whose scope one of those exclusive
   * locks now holds. A ticket queued later than the snapshot waited for something the step left as
   * it was, or for a freed lock, whose scope is now held exclusively: it still waits, unless the
   * new holder is its own agent or its parent (blocks()), hence the agents named.
   */
  private rebaseAgents(promoted: ReadonlyMap<string, LockRecord>): { rebase?: string[] } {
    // Events are appended, not compared: the ones such a step records (released, handed_over)
    // hold as well on the newer store.
    if (this.tombstones !== null || this.written.size !== promoted.size) return {};
    const agents = new Set<string>();
    for (const [ticket, lock] of promoted) {
      if (this.written.get(lock.id) !== lock || !this.removed.has(ticket)) return {};
      agents.add(lock.agent_id);
    }
    const locks = [...promoted.values()];
    let freed = false;
    for (const id of this.removed) {
      if (promoted.has(id)) continue;
      const record = this.state.locks.get(id)!;
      if (record.unreadable || record.status !== 'active') return {};
      const taken = locks.some(
        (lock) =>
          lock.mode === 'exclusive' &&
          lock.kind === record.kind &&
          lock.tree === record.tree &&
          lock.scope === record.scope,
      );
      if (!taken) return {};
      freed = true;
    }
    return freed ? { rebase: [...agents] } : {};
  }

  /** holderGone, each process looked up once a decision. */
  private holderGone(record: LockRecord): boolean {
    this.alive ??= aliveOnce((pid, started) => this.ctx.processAlive(pid, started));
    return holderGone(record, this.ctx, this.alive);
  }

  /**
   * Step 1 of every decision (see open). A lease (a lock with a TTL) lives by its TTL, so a
   * short-lived process may take it and a later one renew it with the token; a lock without one
   * lives by its holder. A ticket lives by its own short lease or its waiter (ticketGone).
   */
  private reap(): void {
    const { now, caller } = this.ctx;
    const mine = caller.holder;
    const doomed: LockRecord[] = [];
    // First step of a decision: nothing is written yet, so the snapshot itself is the live set.
    for (const record of this.state.locks.values()) {
      if (record.unreadable || record.status === 'orphaned') continue;
      if (record.status === 'waiting') {
        if (ticketGone(this.ctx, record)) doomed.push(record);
        continue;
      }
      // The caller's own process is alive by definition: the common case costs no lookup.
      const own = record.pid === mine.pid && record.started === mine.started && record.host === mine.host;
      if (lockStands(record, now, () => !own && this.holderGone(record))) continue;
      if (record.expires_at !== null && record.expires_at <= now) this.bury(record);
      doomed.push(record);
    }
    for (const record of doomed) {
      // A lapsed ticket leaves the line without an event: its waiter is gone or gave up, and its
      // wait never held anything (a wait that runs out records timeout itself).
      if (record.status === 'waiting') {
        this.remove(record);
        continue;
      }
      const lapsed = record.expires_at !== null && record.expires_at <= now;
      const why = lapsed ? (record.claim ? 'no edit within its idle lease' : 'lease expired') : 'holder gone';
      // An orphan blocks nobody, so its frozen files are thawed (frozen_paths cleared; the store's
      // caller restores the modes of every frozen file a decision drops, before committing).
      if (record.notes.length > 0) {
        this.put({ ...record, status: 'orphaned', expires_at: null, frozen_paths: [], frozen_modes: [] });
        this.record('orphaned', record, { reason: why });
        // Nothing was removed, but a waiter's way may be free now: hand over (or wake) as for one.
        this.promoting = true;
      } else {
        this.remove(record);
        this.record(lapsed ? 'expired' : 'reaped', record, { reason: why });
      }
    }
  }
}
