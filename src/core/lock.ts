import type { Scope } from './scope.js';
import { scopeFromPattern } from './scope.js';

export type Mode = 'exclusive' | 'shared';
/**
 * `waiting` marks a ticket: a request queued by `acquire --wait`, kept in the store so that
 * conflicting requests are granted in arrival order across processes and hosts. A ticket is never
 * a lock: list, mine, release and break ignore it; it only stands in the way of later requests.
 */
export type LockStatus = 'active' | 'orphaned' | 'waiting';

/** The process whose life keeps a lock, and the evidence used to tell whether it still runs. */
export interface Holder {
  readonly host: string;
  readonly pid: number;
  /** Start time of that process (ISO); with the pid it tells a live holder from pid reuse. */
  readonly started: string;
}

export interface Note {
  readonly at: number;
  readonly text: string;
}

/**
 * Where a path lock was taken inside git: the repository (its common git dir, shared by all of
 * its worktrees), the worktree's root and the branch checked out there (null: detached HEAD).
 */
export interface Checkout {
  readonly repo: string;
  readonly worktree: string;
  readonly branch: string | null;
}

/**
 * What marks a lock as a claim: taken by an agent's hook as it edited a file nobody else held, in
 * the same decision as the check (decisions/claim.ts). It lives by an idle lease (expires_at, moved
 * on by the agent's edits) and by its holder's process, and ends with the agent's turn.
 */
export interface Claim {
  /** The tool whose call made it (Edit, apply_patch, write_file, a shell write...). */
  readonly tool: string;
  /** The holder's last edit of it (epoch ms), as recorded: renewals are written only when due. */
  readonly last_edit_at: number;
}

/**
 * A message kept on a lock record (decisions/ask.ts): another agent's request to its holder
 * (`ask`), or the holder's answer to that agent (`reply`). Delivered once, on the addressee's next
 * hook call; `delivered_at` marks it taken, in the same atomic step that hands it over.
 */
export interface Mail {
  readonly type: 'ask' | 'reply';
  readonly from: string;
  readonly to: string;
  readonly text: string;
  readonly at: number;
  readonly delivered_at: number | null;
}

/** A lock as the stores keep it. Times are epoch milliseconds. */
export interface LockRecord {
  readonly id: string;
  readonly scope: string;
  readonly kind: 'path' | 'resource';
  readonly mode: Mode;
  readonly agent_id: string;
  readonly parent_agent_id: string | null;
  readonly intent: string | null;
  /** Tree key for path scopes; null for resources. */
  readonly tree: string | null;
  readonly host: string;
  readonly pid: number;
  readonly started: string;
  readonly created_at: number;
  readonly updated_at: number;
  readonly expires_at: number | null;
  readonly ttl_seconds: number | null;
  readonly status: LockStatus;
  readonly fence: number;
  /** Files made read-only for this lock (absolute paths), restored on release, break and orphaning. */
  readonly frozen_paths: readonly string[];
  /** The mode each frozen file had before (same order as frozen_paths): exactly what was changed. */
  readonly frozen_modes?: readonly number[];
  readonly notes: readonly Note[];
  /** sha256 of the lease token; the token itself is shown once, to the taker. */
  readonly token_hash: string;
  /** Set on a record the store could not read: it blocks everything until broken. */
  readonly unreadable?: true;
  /**
   * On a ticket (status waiting) that may be granted in line by whichever decision frees its way:
   * the holder its lock would have (the ticket's own host/pid/started name the waiting process).
   */
  readonly holder?: Holder;
  /**
   * On a lock taken by a waiting request (granted on an attempt, or handed over in line): the
   * waiterKey of the process that waited for it. A request that queues behind the lock names it
   * (Changes.inform), so that a store which keeps snapshots brings that process up to date before
   * its release.
   */
  readonly taker?: string;
  /** Path locks taken inside git (absent on records of older versions, and outside git). */
  readonly checkout?: Checkout;
  /** Set on a claim (see Claim); absent on a lock taken on purpose. */
  readonly claim?: Claim;
  /** Requests to the holder and its answers (see Mail); absent when none was ever left. */
  readonly mail?: readonly Mail[];
}

/** A lock as the library, the CLI's JSON and the MCP server show it. */
export interface Lock {
  id: string;
  scope: string;
  kind: 'path' | 'resource';
  mode: Mode;
  agent_id: string;
  parent_agent_id: string | null;
  intent: string | null;
  tree: string | null;
  host: string;
  pid: number;
  started: string;
  created_at: string;
  updated_at: string;
  expires_at: string | null;
  ttl_seconds: number | null;
  status: LockStatus;
  fence: number;
  frozen_paths: string[];
  notes: { at: string; text: string }[];
  stale: boolean;
  /** Only in the taker's own acquire (or resume) answer. */
  token?: string;
  /** Path locks taken inside git: the worktree's root and its branch then (null: detached HEAD). */
  worktree?: string;
  branch?: string | null;
  /** A claim taken by an agent's hook as it edited: the tool and its last edit; null for a lock. */
  claim: { tool: string; last_edit_at: string } | null;
  /** The agents that asked its holder about it (`alock ask`), when any did. */
  asked_by?: string[];
}

export const UNKNOWN_HOLDER = '<unknown>';

/** The date and time up to the second ("2026-12-03T11:53:09."), of the last few seconds formatted. */
const isoSeconds = new Map<number, string>();
/** Latest instant that formats with four digits of year, as the prefixes assume. */
const YEAR_9999 = 253_402_300_799_999;

/**
 * Epoch ms as ISO 8601, exactly as toISOString writes it. Every answer formats three or four
 * instants, mostly in the same couple of seconds, and toISOString costs about 0.4 us each (a fifth
 * of a cached decision's whole CPU time): the part up to the second is kept.
 */
export function iso(ms: number): string {
  if (!Number.isSafeInteger(ms) || ms < 0 || ms > YEAR_9999) return new Date(ms).toISOString();
  const millis = ms % 1000;
  const second = ms - millis;
  let prefix = isoSeconds.get(second);
  if (prefix === undefined) {
    prefix = new Date(second).toISOString().slice(0, -4);
    if (isoSeconds.size >= 8) isoSeconds.clear();
    isoSeconds.set(second, prefix);
  }
  return `${prefix}${millis < 10 ? '00' : millis < 100 ? '0' : ''}${millis}Z`;
}

export function isStale(record: LockRecord, now: number, staleMs: number): boolean {
  return record.status === 'active' && !record.unreadable && now - record.updated_at > staleMs;
}

export function toLock(record: LockRecord, now: number, staleMs: number, token?: string): Lock {
  const lock: Lock = {
    id: record.id,
    scope: record.scope,
    kind: record.kind,
    mode: record.mode,
    agent_id: record.agent_id,
    parent_agent_id: record.parent_agent_id,
    intent: record.intent,
    tree: record.tree,
    host: record.host,
    pid: record.pid,
    started: record.started,
    created_at: iso(record.created_at),
    updated_at: iso(record.updated_at),
    expires_at: record.expires_at === null ? null : iso(record.expires_at),
    ttl_seconds: record.ttl_seconds,
    status: record.status,
    fence: record.fence,
    frozen_paths: [...record.frozen_paths],
    notes: record.notes.map((note) => ({ at: iso(note.at), text: note.text })),
    stale: isStale(record, now, staleMs),
    claim:
      record.claim === undefined
        ? null
        : { tool: record.claim.tool, last_edit_at: iso(record.claim.last_edit_at) },
  };
  if (token !== undefined) lock.token = token;
  if (record.mail !== undefined) {
    const askers = [...new Set(record.mail.filter((m) => m.type === 'ask').map((m) => m.from))];
    if (askers.length > 0) lock.asked_by = askers;
  }
  if (record.checkout !== undefined) {
    lock.worktree = record.checkout.worktree;
    lock.branch = record.checkout.branch;
  }
  return lock;
}

const parsedScopes = new Map<string, Scope>();

/** The parsed scope of a stored record (memoised: hot in conflict checks over many locks). */
export function recordScope(record: LockRecord): Scope {
  const key = `${record.kind}:${record.scope}`;
  let scope = parsedScopes.get(key);
  if (scope === undefined) {
    scope = scopeFromPattern(record.scope, record.kind);
    if (parsedScopes.size > 50_000) parsedScopes.clear();
    parsedScopes.set(key, scope);
  }
  return scope;
}

/** A stand-in for a record the store could not read: fail closed, held by `<unknown>`. */
export function unreadableRecord(id: string, seenAt: number): LockRecord {
  return {
    id,
    scope: UNKNOWN_HOLDER,
    kind: 'path',
    mode: 'exclusive',
    agent_id: UNKNOWN_HOLDER,
    parent_agent_id: null,
    intent: 'unreadable record: break it with --id once you know nobody holds it',
    tree: null,
    host: UNKNOWN_HOLDER,
    pid: 0,
    started: '',
    created_at: seenAt,
    updated_at: seenAt,
    expires_at: null,
    ttl_seconds: null,
    status: 'active',
    fence: 0,
    frozen_paths: [],
    notes: [],
    token_hash: '',
    unreadable: true,
  };
}

/**
 * Shape check for records read back from a store: anything else is treated as unreadable. Every
 * record of every answer and message passes here, so it reads each field once, by name, and
 * allocates nothing (a helper per kind of field cost a closure each per record).
 */
export function isLockRecord(value: unknown): value is LockRecord {
  if (typeof value !== 'object' || value === null) return false;
  const r = value as Record<string, unknown>;
  const { kind, mode, status, parent_agent_id, intent, tree, expires_at, ttl_seconds, notes } = r;
  if (
    !(
      typeof r.id === 'string' &&
      typeof r.scope === 'string' &&
      (kind === 'path' || kind === 'resource') &&
      (mode === 'exclusive' || mode === 'shared') &&
      typeof r.agent_id === 'string' &&
      (parent_agent_id === null || typeof parent_agent_id === 'string') &&
      (intent === null || typeof intent === 'string') &&
      (tree === null || typeof tree === 'string') &&
      typeof r.host === 'string' &&
      finite(r.pid) &&
      typeof r.started === 'string' &&
      finite(r.created_at) &&
      finite(r.updated_at) &&
      (expires_at === null || finite(expires_at)) &&
      (ttl_seconds === null || finite(ttl_seconds)) &&
      (status === 'active' || status === 'orphaned' || status === 'waiting') &&
      finite(r.fence) &&
      Array.isArray(r.frozen_paths) &&
      (r.frozen_modes === undefined || Array.isArray(r.frozen_modes)) &&
      Array.isArray(notes) &&
      typeof r.token_hash === 'string' &&
      (r.checkout === undefined || isCheckout(r.checkout)) &&
      (r.claim === undefined || isClaim(r.claim)) &&
      (r.mail === undefined || isMailList(r.mail)) &&
      scopeReadable(kind, r.scope)
    )
  )
    return false;
  for (let i = 0; i < notes.length; i++) {
    const note = notes[i] as Partial<Note> | null;
    if (
      typeof note !== 'object' ||
      note === null ||
      typeof note.at !== 'number' ||
      typeof note.text !== 'string'
    )
      return false;
  }
  return true;
}

/** An empty, `.` or `..` segment, or a leading or trailing slash: no scope any command stores. */
const UNNORMALISED_SCOPE = /(^|\/)\.{0,2}(\/|$)/;

/**
 * A scope no command could have stored (`""`, `../etc/**`, `/etc/x`, a resource without its `@`) is
 * damage, not a lock that matches nothing: the record fails closed like any unreadable one.
 */
function scopeReadable(kind: unknown, scope: string): boolean {
  if (kind === 'resource') return scope.length > 1 && scope.startsWith('@');
  return !UNNORMALISED_SCOPE.test(scope);
}

function isCheckout(value: unknown): boolean {
  const c = value as Partial<Checkout> | null;
  return (
    typeof c === 'object' &&
    c !== null &&
    typeof c.repo === 'string' &&
    typeof c.worktree === 'string' &&
    (c.branch === null || typeof c.branch === 'string')
  );
}

function isClaim(value: unknown): boolean {
  const c = value as Partial<Claim> | null;
  return typeof c === 'object' && c !== null && typeof c.tool === 'string' && finite(c.last_edit_at);
}

function isMailList(value: unknown): boolean {
  if (!Array.isArray(value)) return false;
  for (const item of value) {
    const m = item as Partial<Mail> | null;
    if (
      typeof m !== 'object' ||
      m === null ||
      (m.type !== 'ask' && m.type !== 'reply') ||
      typeof m.from !== 'string' ||
      typeof m.to !== 'string' ||
      typeof m.text !== 'string' ||
      !finite(m.at) ||
      !(m.delivered_at === null || finite(m.delivered_at))
    )
      return false;
  }
  return true;
}

function finite(value: unknown): boolean {
  return typeof value === 'number' && Number.isFinite(value);
}
