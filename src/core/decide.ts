/**
 * Every decision of the contract (DESIGN section 5), as pure functions of a store snapshot.
 * A backend runs one of these inside its atomic step and commits the returned changes; nothing
 * here touches the disk, the network, the clock or the process table.
 */
import { type EventType, eventOf, type StoreEvent } from './events.js';
import type { Checkout, Holder, Lock, LockRecord, Mode } from './lock.js';
import { recordScope, toLock } from './lock.js';
import type { Scope } from './scope.js';
import { scopeCovers, scopesOverlap } from './scope.js';

/** A scope together with the tree it belongs to (null for resources). */
export interface Target {
  readonly scope: Scope;
  readonly tree: string | null;
}

/** A lease that expired: remembered for a while so that its holder's `renew` answers `expired`. */
export interface Tombstone {
  readonly scope: string;
  readonly tree: string | null;
  readonly agent_id: string;
  readonly token_hash: string;
  readonly fence: number;
  readonly at: number;
}

export type { EventType, StoreEvent } from './events.js';

export interface StoreState {
  readonly locks: ReadonlyMap<string, LockRecord>;
  /** The largest fence ever granted by this store. */
  readonly fence: number;
  readonly tombstones: readonly Tombstone[];
}

export interface Changes {
  readonly put: LockRecord[];
  readonly del: string[];
  readonly fence: number;
  /** The whole new tombstone list, or null when unchanged. */
  readonly tombstones: Tombstone[] | null;
  readonly events: StoreEvent[];
  /**
   * The waiting processes this step concerns (see waiterKey): it handed them their locks, or freed
   * their way for a decision only they can make. The store tells just them, not every watcher.
   * Absent: nobody to tell.
   */
  readonly wake?: string[];
  /**
   * The processes that took (while waiting) the locks this step queued a new request behind, when
   * it is first in line: their next step is most likely the release, which must hand over to it. A
   * store that keeps a snapshot per process (Redis) sends them this step, so that the release needs
   * no second round trip. Stores without one ignore it. Absent: nobody.
   */
  readonly inform?: string[];
  /**
   * Present when new tickets (waiting records queued behind every other one) are all the store could
   * have gained since the snapshot without changing this step, unless a ticket is of one of these
   * agents (as agent or as child). It holds for a step that only hands locks over in line, each
   * freed lock to an exclusive one on the same scope: a later ticket that waited for the old lock
   * waits for the new one (see rebaseAgents). Only releases say so: their answers do not depend on
   * tickets, while a look (list, check, a refused acquire) whose reaping handed a lock over would
   * answer from the snapshot. A store that commits by compare-and-set (Redis) may then apply the
   * step to a newer store instead of sending it back. Absent: it may not.
   */
  readonly rebase?: string[];
}

/** Names a waiting process for targeted wake-ups: its host, pid and start stamp. */
export function waiterKey(waiter: { host: string; pid: number; started: string }): string {
  return `${waiter.host}|${waiter.pid}|${waiter.started}`;
}

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

/** Something the caller should know that changes nothing about the answer (status, exit code). */
export interface Warning {
  /** Stable, `W_` plus a name (W_OTHER_WORKTREE). */
  readonly code: string;
  readonly message: string;
  readonly [detail: string]: unknown;
}

export interface Outcome<S extends string> {
  readonly status: S;
  readonly locks: Lock[];
  readonly conflicts: Lock[];
  /** Absent when there is nothing to warn about. */
  readonly warnings?: Warning[];
  /**
   * `release` of several scopes: those with no lock on exactly that scope, as normalised patterns
   * (the released ones are in `locks`, the refused ones' locks in `conflicts`).
   */
  readonly notFound?: readonly string[];
}

/** `other_worktree`: AGENT_LOCK_WORKTREES=block and another worktree of the repository holds an overlap. */
export type AcquireStatus =
  | 'acquired'
  | 'already_mine'
  | 'held'
  | 'parent_scope'
  | 'interrupted'
  | 'timeout'
  | 'other_worktree';
export type ReleaseStatus = 'released' | 'not_found' | 'refused';
export type RenewStatus = 'renewed' | 'expired' | 'not_found' | 'refused';
export type CheckStatus = 'free' | 'mine' | 'held' | 'other_worktree';
export type ListStatus = 'listed';
/** What a lease learns of its locks: all still there (`mine`), lapsed (`expired`), or gone. */
export type LeaseCheckStatus = 'mine' | 'expired' | 'not_found';
export type NoteStatus = 'noted' | 'not_found' | 'refused';
export type ResumeStatus = 'resumed' | 'not_found' | 'held';
export type BreakStatus = 'broken' | 'not_found';

/** `list` and `mine` also show the queue: tickets of waiting requests, never counted as locks. */
export interface ListOutcome extends Outcome<ListStatus> {
  readonly waiting: Lock[];
}

export interface Decided<T> {
  readonly result: T;
  readonly changes: Changes;
}

/** A file to make read-only for a lock, with the mode to restore it to. */
export interface FrozenFile {
  readonly path: string;
  readonly mode: number;
}

export interface AcquireRequest {
  readonly targets: readonly Target[];
  /** With --enforce: per target, the files to freeze once the claim is won (recorded before touched). */
  readonly freeze?: readonly (readonly FrozenFile[])[];
  readonly mode: Mode;
  readonly intent: string | null;
  readonly ttlSeconds: number | null;
  /** Set by a waiting acquire: its place in line, kept in the store while it waits. */
  readonly wait?: WaitTicket;
  /** Inside git: recorded on the path locks (and tickets) it makes, for the worktree rule (worktrees.ts). */
  readonly checkout?: Checkout;
}

/**
 * A waiting request's ticket. Arrival order is ticket order: a request conflicts with the earlier
 * tickets that overlap it (as their locks would), so a queued wide claim is not starved by a stream
 * of narrow ones, whoever asks and on whichever host.
 */
export interface WaitTicket {
  /** sha256 of the waiter's ticket secret: finds its tickets again on every attempt. */
  readonly hash: string;
  /** The waiting process (not the lock holder): its death on this host frees the place at once. */
  readonly waiter: Holder;
  /** Ticket lease: a waiter elsewhere that stops refreshing its ticket loses its place. */
  readonly ttlMs: number;
  /** The deadline has come: answer `timeout` instead of `held`, and leave the line. */
  readonly last: boolean;
  /** The ticket secret (its hash is `hash`): the token of locks handed over to this request. */
  readonly secret: string;
}

/** One lock of a lease: found again by id, and proven by its token's hash (null: by the caller's id). */
export interface LeaseRef {
  readonly id: string;
  readonly tokenHash: string | null;
}

const TOMBSTONE_LIMIT = 256;
const TOMBSTONE_MS = 24 * 60 * 60 * 1000;
const NOTE_LIMIT = 200;

/** One decision in progress: a copy-on-write view of the snapshot plus the changes made so far. */
class Decision {
  private readonly removed = new Set<string>();
  private readonly written = new Map<string, LockRecord>();
  private fence: number;
  private tombstones: Tombstone[] | null = null;
  readonly events: StoreEvent[] = [];
  private readonly aliveMemo = new Map<string, boolean>();
  private liveRecords: LockRecord[] | null = null;

  constructor(
    private readonly state: StoreState,
    readonly ctx: DecisionContext,
  ) {
    this.fence = state.fence;
  }

  /**
   * The records as this decision has left them, in the snapshot's order, then the new ones. Kept
   * until the next put or remove: a decision reads them several times between writes (a generator
   * cost an object per record on every read).
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

  put(record: LockRecord): void {
    this.liveRecords = null;
    this.removed.delete(record.id);
    this.written.set(record.id, record);
  }

  remove(record: LockRecord): void {
    this.liveRecords = null;
    this.written.delete(record.id);
    if (this.state.locks.has(record.id)) this.removed.add(record.id);
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

  /** Records that this step did `type` to `record` (see core/events): committed with the step. */
  record(
    type: EventType,
    record: LockRecord,
    extra?: { reason?: string | null; files?: readonly string[]; fence?: number | null },
  ): void {
    this.events.push(eventOf(type, record, this.ctx.now, this.ctx.caller.agentId, extra));
  }

  /** Thawed: each lock this step let go of frozen files (released, broken, reaped or orphaned). */
  private recordThawed(): void {
    const thaw = (before: LockRecord, after: LockRecord | undefined) => {
      const still = new Set(after?.frozen_paths ?? []);
      const files = before.frozen_paths.filter((file) => !still.has(file));
      if (files.length > 0) this.record('thawed', before, { files });
    };
    for (const id of this.removed) {
      const before = this.state.locks.get(id);
      if (before !== undefined && before.frozen_paths.length > 0) thaw(before, undefined);
    }
    for (const [id, after] of this.written) {
      const before = this.state.locks.get(id);
      if (before !== undefined && before.frozen_paths.length > 0) thaw(before, after);
    }
  }

  view(record: LockRecord, token?: string): Lock {
    return toLock(record, this.ctx.now, this.ctx.staleMs, token);
  }

  done<T>(result: T): Decided<T> {
    // Whatever this decision freed goes to the first in line at once, in the same step.
    if (this.removed.size > 0 || this.promoting) this.promote();
    if (this.removed.size > 0 || this.written.size > 0) this.recordThawed();
    return {
      result,
      changes: {
        put: [...this.written.values()],
        del: [...this.removed],
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
   * Changes.rebase for a step whose every write is a lock handed over in line (promote) and whose
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

  /** Provably gone: same host and no such process (pid reuse is not life); another host by age. */
  holderGone(record: LockRecord): boolean {
    const { caller, now, staleMs } = this.ctx;
    if (record.host !== caller.holder.host) return now - record.updated_at > staleMs;
    if (record.pid === caller.holder.pid && record.started === caller.holder.started) return false;
    const key = `${record.pid}|${record.started}`;
    let alive = this.aliveMemo.get(key);
    if (alive === undefined) {
      alive = this.ctx.processAlive(record.pid, record.started);
      this.aliveMemo.set(key, alive);
    }
    return !alive;
  }

  /** Set by a release: its answer does not depend on tickets, so it may say Changes.rebase. */
  releasing = false;
  /** Tickets this step handed over in line: ticket id -> the lock that replaced it (none: null). */
  private promoted: Map<string, LockRecord> | null = null;
  /** Set by a decision that may have freed a waiter's way without removing a record (an orphan). */
  promoting = false;
  /** Waiting processes to tell about this step (waiterKey): see Changes.wake. */
  readonly wake = new Set<string>();
  /** Processes to bring up to date with this step (waiterKey): see Changes.inform. */
  readonly inform = new Set<string>();

  /**
   * Direct hand-off: grants waiting requests, in line order, whose way is now free, turning their
   * tickets into locks (the waiter's ticket secret is the lock's token; the waiter finds them on
   * its next look, with no decision of its own to make). A request that needs the waiter itself
   * (files to freeze, a parent's scope, interrupted work, a lock of its own covering it) stays in
   * line for the waiter to decide.
   */
  promote(): void {
    const requests = new Map<string, LockRecord[]>();
    const live = this.live();
    for (let i = 0; i < live.length; i++) {
      const record = live[i]!;
      if (record.status !== 'waiting') continue;
      const group = requests.get(record.token_hash);
      if (group) group.push(record);
      else requests.set(record.token_hash, [record]);
    }
    if (requests.size === 0) return;
    const queue = [...requests.values()].sort((a, b) => a[0]!.fence - b[0]!.fence);
    for (const tickets of queue) {
      const first = tickets[0]!;
      if (this.ticketGone(first)) continue;
      // A ticket without a holder has files to freeze: only its waiter can take the lock.
      const holder = first.holder;
      const caller: Caller = {
        agentId: first.agent_id,
        parentAgentId: first.parent_agent_id,
        holder: holder ?? { host: first.host, pid: first.pid, started: first.started },
      };
      const targets = tickets.map((t) => ({ scope: recordScope(t), tree: t.tree }));
      const found = scanFor(
        this,
        caller,
        targets,
        first.mode,
        (r) => r.token_hash !== first.token_hash && r.fence < first.fence,
      );
      if (found.conflicts.length > 0) continue;
      // Its way is free: the waiter hears of it, to take the locks handed over or to give the
      // answer only it can (files to freeze, a parent's scope, interrupted work, its own cover).
      this.wake.add(waiterKey(first));
      if (holder === undefined || found.parentHeld.length > 0 || found.orphans.length > 0) continue;
      if (found.covering.some((r) => r !== undefined)) continue;
      const { now } = this.ctx;
      for (const ticket of tickets) {
        this.remove(ticket);
        const { holder: _holder, ...rest } = ticket;
        const lock: LockRecord = {
          ...rest,
          id: `lk_${ticket.id.replace(/^wt_/, '')}`,
          host: holder.host,
          pid: holder.pid,
          started: holder.started,
          created_at: now,
          updated_at: now,
          expires_at: ticket.ttl_seconds === null ? null : now + ticket.ttl_seconds * 1000,
          status: 'active',
          fence: this.nextFence(),
          taker: waiterKey(ticket),
        };
        this.put(lock);
        this.record('handed_over', lock);
        this.promoted ??= new Map();
        this.promoted.set(ticket.id, lock);
      }
    }
  }

  /** A ticket lapses with its short lease, or at once when its waiting process is gone (same host). */
  ticketGone(record: LockRecord): boolean {
    if (record.expires_at !== null && record.expires_at <= this.ctx.now) return true;
    if (record.host !== this.ctx.caller.holder.host) return false;
    return !(this.ctx.waiterAlive ?? this.ctx.processAlive)(record.pid, record.started);
  }

  /**
   * Step 1 of every decision. A lease (a lock with a TTL) lives by its TTL, so a short-lived process
   * may take it and a later one renew it with the token; a lock without one lives by its holder.
   */
  reap(): void {
    const { now, caller } = this.ctx;
    const mine = caller.holder;
    const doomed: LockRecord[] = [];
    // First step of a decision: nothing is written yet, so the snapshot itself is the live set.
    for (const record of this.state.locks.values()) {
      if (record.unreadable || record.status === 'orphaned') continue;
      if (record.status === 'waiting') {
        if (this.ticketGone(record)) doomed.push(record);
        continue;
      }
      if (record.expires_at === null) {
        // The caller's own process is alive by definition: the common case costs no lookup.
        if (record.pid === mine.pid && record.started === mine.started && record.host === mine.host) continue;
        if (this.holderGone(record)) doomed.push(record);
      } else if (record.expires_at <= now) {
        this.bury(record);
        doomed.push(record);
      }
    }
    for (const record of doomed) {
      // A lapsed ticket leaves the line without an event: its waiter is gone or gave up, and its
      // wait never held anything (a wait that runs out records timeout itself).
      if (record.status === 'waiting') {
        this.remove(record);
        continue;
      }
      const lapsed = record.expires_at !== null && record.expires_at <= now;
      const why = lapsed ? 'lease expired' : 'holder gone';
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

function sameSpace(record: LockRecord, target: Target): boolean {
  if (record.unreadable) return true;
  if (target.scope.kind === 'resource') return record.kind === 'resource';
  return record.kind === 'path' && record.tree === target.tree;
}

function sameScope(record: LockRecord, target: Target): boolean {
  return !record.unreadable && sameSpace(record, target) && record.scope === target.scope.pattern;
}

function overlaps(record: LockRecord, target: Target): boolean {
  return (
    record.unreadable === true ||
    (sameSpace(record, target) && scopesOverlap(recordScope(record), target.scope))
  );
}

function modesConflict(held: LockRecord, wanted: Mode): boolean {
  return !(held.mode === 'shared' && wanted === 'shared' && !held.unreadable);
}

/** Does this lock stand in the caller's way? Everyone but its holder and the holder's children. */
function blocks(record: LockRecord, caller: Caller): boolean {
  if (record.unreadable) return true;
  if (record.status === 'orphaned') return false;
  if (record.agent_id === caller.agentId) return false;
  return !(caller.parentAgentId !== null && record.agent_id === caller.parentAgentId);
}

/** May the caller release, renew or note this lock? Its own, its direct children's, or by token. */
function owns(record: LockRecord, caller: Caller, tokenHash: string | null): boolean {
  if (record.unreadable) return false;
  if (tokenHash !== null && record.token_hash === tokenHash) return true;
  return record.agent_id === caller.agentId || record.parent_agent_id === caller.agentId;
}

function conflictsFor(d: Decision, targets: readonly Target[], mode: Mode, tickets = true): LockRecord[] {
  const found = new Map<string, LockRecord>();
  for (const record of d.live()) {
    if (!tickets && record.status === 'waiting') continue;
    if (found.has(record.id) || !blocks(record, d.ctx.caller) || !modesConflict(record, mode)) continue;
    if (targets.some((target) => overlaps(record, target))) found.set(record.id, record);
  }
  return [...found.values()];
}

function ownCovering(d: Decision, target: Target, mode: Mode): LockRecord | undefined {
  for (const record of d.live()) {
    if (record.unreadable || record.status !== 'active' || record.agent_id !== d.ctx.caller.agentId) continue;
    if (mode === 'exclusive' && record.mode === 'shared') continue;
    if (sameSpace(record, target) && scopeCovers(recordScope(record), target.scope)) return record;
  }
  return undefined;
}

function grant(
  d: Decision,
  target: Target,
  mode: Mode,
  intent: string | null,
  ttlSeconds: number | null,
  notes: LockRecord['notes'] = [],
  frozen: readonly FrozenFile[] = [],
  taker?: string,
  checkout?: Checkout,
): { record: LockRecord; token: string } {
  const { caller, now } = d.ctx;
  const { id, token, tokenHash } = d.ctx.newLock();
  const record: LockRecord = {
    id,
    scope: target.scope.pattern,
    kind: target.scope.kind,
    mode,
    agent_id: caller.agentId,
    parent_agent_id: caller.parentAgentId,
    intent,
    tree: target.tree,
    host: caller.holder.host,
    pid: caller.holder.pid,
    started: caller.holder.started,
    created_at: now,
    updated_at: now,
    expires_at: ttlSeconds === null ? null : now + ttlSeconds * 1000,
    ttl_seconds: ttlSeconds,
    status: 'active',
    fence: d.nextFence(),
    frozen_paths: frozen.map((f) => f.path),
    frozen_modes: frozen.map((f) => f.mode),
    notes,
    token_hash: tokenHash,
    // Always a key (undefined is not written): records keep one shape, which the hot loops over
    // every record depend on (an extra shape made each decision over 1000 locks a third slower).
    checkout: target.scope.kind === 'path' ? checkout : undefined,
    ...(taker === undefined ? {} : { taker }),
  };
  d.put(record);
  return { record, token };
}

function outcome<S extends string>(status: S, locks: Lock[] = [], conflicts: Lock[] = []): Outcome<S> {
  return { status, locks, conflicts };
}

interface Scan {
  parentHeld: LockRecord[];
  conflicts: LockRecord[];
  covering: (LockRecord | undefined)[];
  orphans: LockRecord[];
}

/**
 * One pass over the live locks answers every question acquire asks (hot with many locks held).
 * Tickets count only when `ahead` says they came first; they are never parents, covers or orphans.
 */
function scan(
  d: Decision,
  targets: readonly Target[],
  mode: Mode,
  ahead: (ticket: LockRecord) => boolean,
): Scan {
  return scanFor(d, d.ctx.caller, targets, mode, ahead);
}

function scanFor(
  d: Decision,
  caller: Caller,
  targets: readonly Target[],
  mode: Mode,
  ahead: (ticket: LockRecord) => boolean,
): Scan {
  const result: Scan = { parentHeld: [], conflicts: [], covering: targets.map(() => undefined), orphans: [] };
  const live = d.live();
  for (let r = 0; r < live.length; r++) {
    const record = live[r]!;
    const ticket = record.status === 'waiting';
    if (ticket && !ahead(record)) continue;
    let overlapsAny = false;
    for (let i = 0; i < targets.length; i++) {
      const target = targets[i]!;
      if (!record.unreadable && !sameSpace(record, target)) continue;
      if (!overlaps(record, target)) continue;
      overlapsAny = true;
      if (record.unreadable || ticket) continue;
      const exact = record.scope === target.scope.pattern;
      if (record.status === 'orphaned') {
        if (exact && !result.orphans.includes(record)) result.orphans.push(record);
        continue;
      }
      if (exact && caller.parentAgentId !== null && record.agent_id === caller.parentAgentId) {
        if (!result.parentHeld.includes(record)) result.parentHeld.push(record);
      }
      if (
        result.covering[i] === undefined &&
        record.agent_id === caller.agentId &&
        !(mode === 'exclusive' && record.mode === 'shared') &&
        scopeCovers(recordScope(record), target.scope)
      ) {
        result.covering[i] = record;
      }
    }
    if (overlapsAny && blocks(record, caller) && modesConflict(record, mode)) result.conflicts.push(record);
  }
  return result;
}

export function decideAcquire(
  state: StoreState,
  ctx: DecisionContext,
  req: AcquireRequest,
): Decided<Outcome<AcquireStatus>> {
  const d = new Decision(state, ctx);
  d.reap();
  const wait = req.wait;
  if (wait) {
    // Handed over in line by another decision: the locks are ours, with the ticket secret as token.
    const given = d
      .live()
      .filter(
        (r) => r.status === 'active' && r.token_hash === wait.hash && r.agent_id === ctx.caller.agentId,
      );
    if (given.length > 0)
      return d.done(
        outcome(
          'acquired',
          given.map((r) => d.view(r, wait.secret)),
        ),
      );
  }
  const tickets = wait ? d.live().filter((r) => r.status === 'waiting' && r.token_hash === wait.hash) : [];
  // Our place in line: every ticket taken before ours stands in the way, as its lock would.
  const place = tickets.length > 0 ? Math.min(...tickets.map((r) => r.fence)) : Number.POSITIVE_INFINITY;
  const found = scan(d, req.targets, req.mode, (r) => r.token_hash !== wait?.hash && r.fence < place);
  // Any answer but `held` ends the wait: the tickets go in the same step.
  if (found.parentHeld.length > 0 || found.conflicts.length === 0 || wait?.last) {
    for (const record of tickets) d.remove(record);
  }
  if (found.parentHeld.length > 0) {
    return d.done(
      outcome(
        'parent_scope',
        [],
        found.parentHeld.map((r) => d.view(r)),
      ),
    );
  }
  if (found.conflicts.length > 0) {
    if (wait && !wait.last) queue(d, req, wait, tickets, found.conflicts);
    if (wait?.last) recordWaiting(d, 'timeout', req, tickets);
    return d.done(
      outcome(
        wait?.last ? 'timeout' : 'held',
        [],
        found.conflicts.map((r) => d.view(r)),
      ),
    );
  }
  if (found.covering.every((record) => record !== undefined)) {
    const touched = new Map<string, LockRecord>();
    const ttl = req.ttlSeconds;
    found.covering.forEach((record, i) => {
      if (!record) return;
      const before = touched.get(record.id) ?? record;
      let lease = {};
      if (ttl !== null && ttl !== undefined) {
        const until = ctx.now + ttl * 1000;
        // A TTL asked again for the lock's own scope is the lease wanted from now on: asking for
        // 600 s must not leave 10 s. A wider lock that covers the scope is only ever lengthened,
        // and one without a TTL keeps none: a narrow request must not shorten a wide claim.
        if (sameScope(record, req.targets[i]!)) lease = { ttl_seconds: ttl, expires_at: until };
        else if (before.expires_at !== null && before.expires_at < until) lease = { expires_at: until };
      }
      touched.set(record.id, { ...before, updated_at: ctx.now, ...lease });
    });
    for (const record of touched.values()) {
      d.put(record);
      d.record('already_mine', record);
    }
    return d.done(
      outcome(
        'already_mine',
        [...touched.values()].map((r) => d.view(r)),
      ),
    );
  }
  const wanted = req.targets.filter((_, i) => found.covering[i] === undefined);
  const orphans = found.orphans.filter((r) => wanted.some((target) => sameScope(r, target)));
  if (orphans.length > 0)
    return d.done(
      outcome(
        'interrupted',
        [],
        orphans.map((r) => d.view(r)),
      ),
    );
  // A file another lock already froze reads as read-only now: record the mode that lock saved, so
  // the last lock to let go restores the file's real mode.
  const original = new Map<string, number>();
  if (req.freeze) {
    for (const record of d.live()) {
      record.frozen_paths.forEach((file, i) => {
        original.set(file, record.frozen_modes?.[i] ?? 0o644);
      });
    }
  }
  const frozenFor = (i: number) =>
    (req.freeze?.[i] ?? []).map((f) => ({ path: f.path, mode: original.get(f.path) ?? f.mode }));
  const granted = req.targets.flatMap((target, i) =>
    found.covering[i] === undefined
      ? [
          grant(
            d,
            target,
            req.mode,
            req.intent,
            req.ttlSeconds,
            [],
            frozenFor(i),
            wait && waiterKey(wait.waiter),
            req.checkout,
          ),
        ]
      : [],
  );
  for (const { record } of granted) {
    d.record('acquired', record);
    if (record.frozen_paths.length > 0) d.record('frozen', record, { files: record.frozen_paths });
  }
  return d.done(
    outcome(
      'acquired',
      granted.map(({ record, token }) => d.view(record, token)),
    ),
  );
}

/**
 * Queued and timeout name the request, one event per scope: by its tickets when it has them, else
 * as the request would have been queued.
 */
function recordWaiting(
  d: Decision,
  type: 'queued' | 'timeout',
  req: AcquireRequest,
  tickets: readonly LockRecord[],
) {
  if (tickets.length > 0) {
    for (const ticket of tickets) d.record(type, ticket, { fence: null });
    return;
  }
  const { caller, now } = d.ctx;
  for (const target of req.targets) {
    const request = {
      id: '',
      scope: target.scope.pattern,
      kind: target.scope.kind,
      mode: req.mode,
      agent_id: caller.agentId,
      parent_agent_id: caller.parentAgentId,
      intent: req.intent,
      tree: target.tree,
    };
    d.events.push(eventOf(type, request as LockRecord, now, caller.agentId, { fence: null }));
  }
}

/** Takes a place in line (one ticket per scope, one number for the request), or keeps it fresh. */
function queue(
  d: Decision,
  req: AcquireRequest,
  wait: WaitTicket,
  tickets: readonly LockRecord[],
  conflicts: readonly LockRecord[],
): void {
  const { caller, now } = d.ctx;
  if (tickets.length > 0) {
    // Refreshed well before it lapses, but not on every attempt: each write wakes every watcher.
    for (const record of tickets) {
      if (record.expires_at === null || record.expires_at - now < wait.ttlMs / 2) {
        d.put({ ...record, updated_at: now, expires_at: now + wait.ttlMs });
      }
    }
    return;
  }
  const place = d.nextFence();
  // Behind another request, the holder's release hands over to that one, which a store that
  // rebases (Redis) commits even when the holder has not seen this ticket: telling it costs a
  // message for nothing. First in line, the release must see this ticket to hand it over.
  if (!conflicts.some((record) => record.status === 'waiting')) {
    for (const record of conflicts) {
      if (record.status === 'active' && record.taker !== undefined) d.inform.add(record.taker);
    }
  }
  for (const target of req.targets) {
    const ticket: LockRecord = {
      id: `wt_${(d.ctx.newId?.() ?? d.ctx.newLock().id).replace(/^lk_/, '')}`,
      scope: target.scope.pattern,
      kind: target.scope.kind,
      mode: req.mode,
      agent_id: caller.agentId,
      parent_agent_id: caller.parentAgentId,
      intent: req.intent,
      tree: target.tree,
      host: wait.waiter.host,
      pid: wait.waiter.pid,
      started: wait.waiter.started,
      created_at: now,
      updated_at: now,
      expires_at: now + wait.ttlMs,
      ttl_seconds: req.ttlSeconds,
      status: 'waiting',
      fence: place,
      // Handed over in line by the decision that frees the way, unless files must be frozen
      // first (only the waiter can do that).
      ...(req.freeze === undefined ? { holder: caller.holder } : {}),
      frozen_paths: [],
      frozen_modes: [],
      notes: [],
      token_hash: wait.hash,
      checkout: target.scope.kind === 'path' ? req.checkout : undefined,
    };
    d.put(ticket);
    d.record('queued', ticket, { fence: null });
  }
}

/** Leaves the line: removes the tickets of an interrupted or failed wait. */
export function decideLeave(
  state: StoreState,
  ctx: DecisionContext,
  req: { hash: string },
): Decided<{ left: number }> {
  const d = new Decision(state, ctx);
  d.reap();
  // Tickets, and locks handed over to the request that its waiter never came to take.
  const mine = d
    .live()
    .filter((r) => (r.status === 'waiting' || r.status === 'active') && r.token_hash === req.hash);
  for (const record of mine) {
    d.remove(record);
    // A lock handed over in line had its event: its end has one too.
    if (record.status === 'active') d.record('released', record, { reason: 'the waiter left' });
  }
  return d.done({ left: mine.length });
}

function leaseRecords(d: Decision, refs: readonly LeaseRef[]): (LockRecord | undefined)[] {
  const live = new Map<string, LockRecord>();
  for (const record of d.live()) live.set(record.id, record);
  return refs.map((ref) => {
    const record = live.get(ref.id);
    if (record === undefined || record.status !== 'active') return undefined;
    const proven =
      ref.tokenHash === null ? owns(record, d.ctx.caller, null) : record.token_hash === ref.tokenHash;
    return proven ? record : undefined;
  });
}

/** A lease's lock that is gone lapsed (its tombstone says so) or was broken or released. */
function goneStatus(d: Decision, refs: readonly LeaseRef[], found: (LockRecord | undefined)[]) {
  const lapsed = refs.some(
    (ref, i) => found[i] === undefined && d.currentTombstones().some((t) => t.token_hash === ref.tokenHash),
  );
  return lapsed ? ('expired' as const) : ('not_found' as const);
}

/** Are all of a lease's locks still there, by id and token? Read-only: `mine`, `expired`, `not_found`. */
export function decideLeaseCheck(
  state: StoreState,
  ctx: DecisionContext,
  req: { refs: readonly LeaseRef[] },
): Decided<Outcome<LeaseCheckStatus>> {
  const d = new Decision(state, ctx);
  d.reap();
  const found = leaseRecords(d, req.refs);
  if (found.every((r) => r !== undefined))
    return d.done(
      outcome(
        'mine',
        found.map((r) => d.view(r!)),
      ),
    );
  return d.done(outcome(goneStatus(d, req.refs, found)));
}

/** Renews exactly a lease's locks (by id and token), all or none: never another lock on the scope. */
export function decideLeaseRenew(
  state: StoreState,
  ctx: DecisionContext,
  req: { refs: readonly LeaseRef[]; ttlSeconds: number | null },
): Decided<Outcome<RenewStatus>> {
  const d = new Decision(state, ctx);
  d.reap();
  const found = leaseRecords(d, req.refs);
  if (!found.every((r) => r !== undefined)) return d.done(outcome(goneStatus(d, req.refs, found)));
  const renewed = renewAll(d, found as LockRecord[], req.ttlSeconds);
  return d.done(
    outcome(
      'renewed',
      renewed.map((r) => d.view(r)),
    ),
  );
}

/** Renews each record from now, with its own TTL unless a new one is given. */
function renewAll(d: Decision, records: readonly LockRecord[], ttlSeconds: number | null): LockRecord[] {
  const { now } = d.ctx;
  return records.map((record) => {
    const ttl = ttlSeconds ?? record.ttl_seconds;
    const next: LockRecord = {
      ...record,
      updated_at: now,
      ttl_seconds: ttl,
      expires_at: ttl === null ? null : now + ttl * 1000,
    };
    d.put(next);
    d.record('renewed', next);
    return next;
  });
}

/** Releases exactly a lease's locks (by id and token); `not_found` if any was already gone. */
export function decideLeaseRelease(
  state: StoreState,
  ctx: DecisionContext,
  req: { refs: readonly LeaseRef[] },
): Decided<Outcome<ReleaseStatus>> {
  const d = new Decision(state, ctx);
  d.releasing = true;
  d.reap();
  const found = leaseRecords(d, req.refs);
  const present = found.filter((r): r is LockRecord => r !== undefined);
  for (const record of present) {
    d.remove(record);
    d.record('released', record);
  }
  return d.done(
    outcome(
      present.length === found.length ? 'released' : 'not_found',
      present.map((r) => d.view(r)),
    ),
  );
}

export function decideRelease(
  state: StoreState,
  ctx: DecisionContext,
  req: { targets: readonly Target[] | 'all'; token: string | null },
): Decided<Outcome<ReleaseStatus>> {
  const d = new Decision(state, ctx);
  d.releasing = true;
  d.reap();
  const tokenHash = req.token === null ? null : ctx.hashToken(req.token);
  if (req.targets === 'all') {
    const mine = d.live().filter((r) => r.status !== 'waiting' && owns(r, ctx.caller, tokenHash));
    for (const record of mine) {
      d.remove(record);
      d.record('released', record);
    }
    return d.done(
      outcome(
        'released',
        mine.map((r) => d.view(r)),
      ),
    );
  }
  const released: LockRecord[] = [];
  const refused: LockRecord[] = [];
  const missing: string[] = [];
  for (const target of req.targets) {
    const candidates = d.live().filter((r) => r.status !== 'waiting' && sameScope(r, target));
    const owned = candidates.filter((r) => owns(r, ctx.caller, tokenHash));
    if (owned.length > 0) {
      for (const record of owned) {
        d.remove(record);
        d.record('released', record);
        released.push(record);
      }
    } else if (candidates.length > 0) {
      refused.push(...candidates);
    } else {
      missing.push(target.scope.pattern);
    }
  }
  const status: ReleaseStatus =
    refused.length > 0 ? 'refused' : missing.length > 0 ? 'not_found' : 'released';
  const answer = outcome(
    status,
    released.map((r) => d.view(r)),
    refused.map((r) => d.view(r)),
  );
  return d.done(missing.length > 0 ? { ...answer, notFound: missing } : answer);
}

export function decideRenew(
  state: StoreState,
  ctx: DecisionContext,
  req: { targets: readonly Target[]; ttlSeconds: number | null; token: string | null },
): Decided<Outcome<RenewStatus>> {
  const d = new Decision(state, ctx);
  d.reap();
  const tokenHash = req.token === null ? null : ctx.hashToken(req.token);
  const owned: LockRecord[] = [];
  const refused: LockRecord[] = [];
  let expired = false;
  let missing = false;
  for (const target of req.targets) {
    const candidates = d.live().filter((r) => r.status === 'active' && sameScope(r, target));
    const mine = candidates.filter((r) => owns(r, ctx.caller, tokenHash));
    if (mine.length > 0) {
      owned.push(...mine);
    } else if (candidates.length > 0) {
      refused.push(...candidates);
    } else {
      // Gone without trace: a lapsed lease (the tombstone says so, or the caller holds a token)
      // must be acquired again with a new fence, never silently revived.
      const buried = d
        .currentTombstones()
        .some(
          (t) =>
            t.scope === target.scope.pattern &&
            t.tree === target.tree &&
            (t.agent_id === ctx.caller.agentId || (tokenHash !== null && t.token_hash === tokenHash)),
        );
      if (buried || tokenHash !== null) expired = true;
      else missing = true;
    }
  }
  const status: RenewStatus = expired
    ? 'expired'
    : refused.length > 0
      ? 'refused'
      : missing
        ? 'not_found'
        : 'renewed';
  if (status !== 'renewed')
    return d.done(
      outcome(
        status,
        [],
        refused.map((r) => d.view(r)),
      ),
    );
  const renewed = renewAll(d, owned, req.ttlSeconds);
  return d.done(
    outcome(
      status,
      renewed.map((r) => d.view(r)),
    ),
  );
}

export function decideCheck(
  state: StoreState,
  ctx: DecisionContext,
  req: { targets: readonly Target[]; mode: Mode },
): Decided<Outcome<CheckStatus>> {
  const d = new Decision(state, ctx);
  d.reap();
  // Held means held by a lock: a queued request holds nothing yet (the git guard and the Claude
  // Code hook ask this too, about files being edited now). `list` shows the queue.
  const conflicts = conflictsFor(d, req.targets, req.mode, false);
  if (conflicts.length > 0)
    return d.done(
      outcome(
        'held',
        [],
        conflicts.map((r) => d.view(r)),
      ),
    );
  const covering = req.targets.map((target) => ownCovering(d, target, req.mode));
  if (covering.every((r) => r !== undefined)) {
    const unique = [...new Map(covering.map((r) => [r!.id, r!])).values()];
    return d.done(
      outcome(
        'mine',
        unique.map((r) => d.view(r)),
      ),
    );
  }
  return d.done(outcome('free'));
}

export function decideList(
  state: StoreState,
  ctx: DecisionContext,
  req: { mineOnly: boolean },
): Decided<ListOutcome> {
  const d = new Decision(state, ctx);
  d.reap();
  const all = d.live().filter((r) => !req.mineOnly || owns(r, ctx.caller, null));
  all.sort((a, b) => a.created_at - b.created_at || a.fence - b.fence);
  const locks = all.filter((r) => r.status !== 'waiting');
  // The queue in line order (ticket numbers), after the locks.
  const waiting = all.filter((r) => r.status === 'waiting').sort((a, b) => a.fence - b.fence);
  return d.done({
    ...outcome(
      'listed',
      locks.map((r) => d.view(r)),
    ),
    waiting: waiting.map((r) => d.view(r)),
  });
}

export function decideNote(
  state: StoreState,
  ctx: DecisionContext,
  req: { target: Target; text: string; token: string | null },
): Decided<Outcome<NoteStatus>> {
  const d = new Decision(state, ctx);
  d.reap();
  const tokenHash = req.token === null ? null : ctx.hashToken(req.token);
  const candidates = d.live().filter((r) => r.status === 'active' && sameScope(r, req.target));
  const owned = candidates.find((r) => owns(r, ctx.caller, tokenHash));
  if (owned === undefined) {
    if (candidates.length > 0)
      return d.done(
        outcome(
          'refused',
          [],
          candidates.map((r) => d.view(r)),
        ),
      );
    return d.done(outcome('not_found'));
  }
  const notes = [...owned.notes, { at: ctx.now, text: req.text }].slice(-NOTE_LIMIT);
  const next: LockRecord = { ...owned, notes, updated_at: ctx.now };
  d.put(next);
  d.record('noted', next, { reason: req.text });
  return d.done(outcome('noted', [d.view(next)]));
}

export function decideResume(
  state: StoreState,
  ctx: DecisionContext,
  req: { target: Target },
): Decided<Outcome<ResumeStatus>> {
  const d = new Decision(state, ctx);
  d.reap();
  const orphan = d.live().find((r) => r.status === 'orphaned' && sameScope(r, req.target));
  if (orphan === undefined) return d.done(outcome('not_found'));
  const conflicts = conflictsFor(d, [req.target], orphan.mode);
  if (conflicts.length > 0)
    return d.done(
      outcome(
        'held',
        [],
        conflicts.map((r) => d.view(r)),
      ),
    );
  d.remove(orphan);
  const { record, token } = grant(
    d,
    req.target,
    orphan.mode,
    orphan.intent,
    orphan.ttl_seconds,
    orphan.notes,
  );
  d.record('resumed', record);
  return d.done(outcome('resumed', [d.view(record, token)], [d.view(orphan)]));
}

export function decideBreak(
  state: StoreState,
  ctx: DecisionContext,
  req: { targets: readonly Target[]; ids: readonly string[]; reason: string | null },
): Decided<Outcome<BreakStatus>> {
  const d = new Decision(state, ctx);
  d.reap();
  // Tickets are not locks: they leave with their waiter (or lapse), not by break.
  const broken = d
    .live()
    .filter(
      (r) =>
        r.status !== 'waiting' &&
        (req.ids.includes(r.id) || req.targets.some((target) => sameScope(r, target))),
    );
  for (const record of broken) {
    d.remove(record);
    d.record('broken', record, { reason: req.reason });
  }
  if (broken.length === 0) return d.done(outcome('not_found'));
  return d.done(
    outcome(
      'broken',
      broken.map((r) => d.view(r)),
    ),
  );
}

/** Frozen files a decision lets go of (released, broken, reaped or orphaned locks): to be thawed. */
export function frozenDropped(state: StoreState, changes: Changes, host: string | null = null): FrozenFile[] {
  const dropped: FrozenFile[] = [];
  const keep = (before: LockRecord, after: LockRecord | undefined) => {
    if (host !== null && before.host !== host) return;
    const still = new Set(after?.frozen_paths ?? []);
    before.frozen_paths.forEach((file, i) => {
      if (!still.has(file)) dropped.push({ path: file, mode: before.frozen_modes?.[i] ?? 0o644 });
    });
  };
  for (const id of changes.del) {
    const before = state.locks.get(id);
    if (before && before.frozen_paths.length > 0) keep(before, undefined);
  }
  for (const after of changes.put) {
    const before = state.locks.get(after.id);
    if (before && before.frozen_paths.length > 0) keep(before, after);
  }
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

/** True when the changes would write nothing (reads need no commit). */
export function isEmpty(changes: Changes, state: StoreState): boolean {
  return (
    changes.put.length === 0 &&
    changes.del.length === 0 &&
    changes.fence === state.fence &&
    changes.tombstones === null &&
    changes.events.length === 0
  );
}
