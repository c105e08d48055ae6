/**
 * The library: `openLocks()` binds an identity, a tree and a store, and answers every verb of the
 * contract with a typed outcome. Contention is an outcome; exceptions are misuse or broken stores.
 */
import { createHash } from 'node:crypto';
import { randomBytesPooled } from './host/random.js';
import path from 'node:path';
import type { Backend, BackendKind, RepairReport, TransactOptions } from './backends/backend.js';
import { MemoryStore } from './backends/memory/memory-store.js';
import { openBackend } from './backends/open-backend.js';
import { readConfig, REDIS_PREFIX, type Config } from './core/config.js';
import {
  type AcquireStatus,
  type BreakStatus,
  type Caller,
  type CheckStatus,
  type Decided,
  type DecisionContext,
  type NoteStatus,
  type Outcome,
  type ReleaseStatus,
  type RenewStatus,
  type ResumeStatus,
  type StoreEvent,
  type StoreState,
  type Target,
  decideAcquire,
  decideBreak,
  decideCheck,
  decideLeave,
  decideLeaseCheck,
  decideLeaseRelease,
  decideLeaseRenew,
  decideList,
  type LeaseRef,
  type ListOutcome,
  decideNote,
  decideRelease,
  decideRenew,
  decideResume,
  type FrozenFile,
  frozenDropped,
  waiterKey,
} from './core/decide.js';
import { lockDomains, targetDomains } from './core/domains.js';
import { AgentLockError } from './core/errors.js';
import { EVENTS_KEPT, type EventFilter, eventMatches } from './core/events.js';
import { type Identity, resolveIdentity } from './core/identity.js';
import type { Holder, Lock, Mode } from './core/lock.js';
import { instant, type Lease, type LeaseLostError, type LeaseStore, startLease } from './lease.js';
import { parseRedisUrl, RedisUrlError } from './core/redis-url.js';
import { parseScope } from './core/scope.js';
import { ancestorChain, hostName, processAlive, startStamp } from './host/process.js';
import { filesToFreeze, freeze as freezeFiles, thaw } from './host/freeze.js';
import { findTree, fsProbe, headBranch, repositoryPrefix, storeDirFor } from './host/tree.js';
import { type Across, acrossAcquire, acrossCheck } from './core/worktrees.js';

export interface OpenLocksOptions {
  /** The folder relative scopes start from; its git worktree is the tree. Default: the current folder. */
  dir?: string;
  /** Where the file store lives. Default: AGENT_LOCK_DIR, else `<git common dir>/agent-locks`, else ~/.agent-locks/. */
  storeDir?: string;
  /**
   * `file`, `redis`, `memory`, or a backend instance (e.g. `new MemoryStore().connect()`). Default:
   * the store's marker; for a new store AGENT_LOCK_BACKEND, else Redis when a Redis URL is set or a
   * server answers at 127.0.0.1:6379, else file.
   */
  backend?: BackendKind | Backend;
  /** The Redis server (`redis://` or `rediss://`). Default: AGENT_LOCK_REDIS_URL, else REDIS_URL, else the marker's. */
  redisUrl?: string;
  /**
   * Key prefix of a Redis store (its namespace): set it to share one namespace across repositories.
   * Default: AGENT_LOCK_REDIS_PREFIX, else the store's marker, else one derived from the repository.
   */
  redisPrefix?: string;
  /** Who is asking. Default: from the environment and the process tree (this process holds). */
  identity?: Identity | { agentId: string; parentAgentId?: string | null; holder?: Holder };
  /** Epoch milliseconds; injectable for tests. */
  clock?: () => number;
  /** Environment to read settings from. Default: process.env. */
  env?: Readonly<Record<string, string | undefined>>;
  /**
   * A waiting acquire wakes when the store changes (a notification) and also looks this often
   * (ms), in case a notification was lost. Default 1000.
   */
  waitPollMs?: number;
}

export interface AcquireOptions {
  /** Make the matched regular files read-only while the lock is held (restored on release). */
  enforce?: boolean;
  /** With enforce: allow more than 500 files. */
  force?: boolean;
  intent?: string;
  /** Lease in seconds; default AGENT_LOCK_TTL_SECONDS, else none. */
  ttl?: number;
  shared?: boolean;
  /**
   * Seconds to wait in line while the scopes are held (`Infinity`: until granted). Default 0: answer
   * at once. Waiters are served in arrival order; past the deadline the answer is `timeout`.
   */
  wait?: number;
  /** Aborts a wait: the call rejects with the signal's reason and leaves nothing in the store. */
  signal?: AbortSignal;
  /** Called after each refused attempt while waiting, with what stands in the way (live lines). */
  onWait?: (conflicts: Lock[]) => void;
}

export interface HoldOptions extends AcquireOptions {
  /** Called once when the lease is lost, with the reason its signal aborts with. */
  onLost?: (error: LeaseLostError) => void;
}

/** `hold` hands back a lease when granted; any other answer is the acquire outcome, without one. */
export type HoldResult =
  | (Outcome<'acquired' | 'already_mine'> & { readonly lease: Lease })
  | (Outcome<Exclude<AcquireStatus, 'acquired' | 'already_mine'>> & { readonly lease?: undefined });

export type WithLockResult<T> =
  | (Outcome<'acquired' | 'already_mine'> & { readonly value: T })
  | (Outcome<Exclude<AcquireStatus, 'acquired' | 'already_mine'>> & { readonly value?: undefined });

export interface Locks {
  readonly agent: { readonly id: string; readonly parentId: string | null };
  readonly identity: Identity;
  /** Real path of the tree root and the tree key path scopes are compared under. */
  readonly tree: { readonly root: string; readonly key: string };
  readonly backend: Backend;
  readonly config: Config;
  acquire(scopes: string | readonly string[], options?: AcquireOptions): Promise<Outcome<AcquireStatus>>;
  release(
    scopes: string | readonly string[] | { all: true },
    options?: { token?: string },
  ): Promise<Outcome<ReleaseStatus>>;
  renew(
    scopes: string | readonly string[],
    options?: { ttl?: number; token?: string },
  ): Promise<Outcome<RenewStatus>>;
  check(scopes: string | readonly string[], options?: { shared?: boolean }): Promise<Outcome<CheckStatus>>;
  list(): Promise<ListOutcome>;
  mine(): Promise<ListOutcome>;
  /**
   * Takes the scopes (waiting if asked) as a lease that renews itself at a third of its TTL
   * (default AGENT_LOCK_TTL_SECONDS, else 30 s) until released.
   */
  hold(scopes: string | readonly string[], options?: HoldOptions): Promise<HoldResult>;
  /** Holds the scopes while `work` runs, then releases them, however `work` ends. */
  withLock<T>(
    scopes: string | readonly string[],
    options: HoldOptions,
    work: (signal: AbortSignal, lease: Lease) => Promise<T>,
  ): Promise<WithLockResult<T>>;
  note(scope: string, text: string, options?: { token?: string }): Promise<Outcome<NoteStatus>>;
  resume(scope: string): Promise<Outcome<ResumeStatus>>;
  breakLock(
    scopes: string | readonly string[],
    options?: { reason?: string; ids?: readonly string[] },
  ): Promise<Outcome<BreakStatus>>;
  /**
   * The store's history (core/events), newest last: the last `limit` (50) events, or only those
   * after the event whose id is `after`, narrowed by time, agent and scope (scopes are read like
   * acquire's, relative to the tree).
   */
  events(query?: number | EventQuery): Promise<StoreEvent[]>;
  /** The test events() applies for `query`'s time, agent and scopes (a scope is checked at once). */
  eventFilter(query: EventQuery): (event: StoreEvent) => boolean;
  /**
   * Moves damage in the store aside (kept, timestamped) and goes on with what can be read: only
   * when a person asks. A store without damage is left as it is (`damage` empty).
   */
  repair(): Promise<RepairReport>;
  close(): Promise<void>;
}

export interface EventQuery {
  readonly limit?: number;
  readonly after?: string;
  readonly since?: number;
  readonly agent?: string;
  readonly scopes?: readonly string[];
}

const MAX_INTENT = 500;
/** How long a waiter's process counts as alive once seen alive (see waiterAlive). */
const WAITER_ALIVE_MS = 250;
/** A waiter's place in line lapses this long after its last refresh (it refreshes well before). */
const TICKET_TTL_MS = 10_000;
/** The lease `hold` takes without a TTL given or configured. */
const HOLD_TTL_SECONDS = 30;
const MAX_NOTE = 2000;
/** More files than this under --enforce needs --force: a typo'd scope should not freeze a tree. */
const MAX_FROZEN = 500;

function text(value: string | undefined, what: string, max: number, required: boolean): string | null {
  if (value === undefined) return null;
  const trimmed = value.trim();
  if (trimmed === '') {
    if (required)
      throw new AgentLockError('E_USAGE', `${what} is empty`, { hint: `give the ${what} some text` });
    return null;
  }
  if (trimmed.length > max)
    throw new AgentLockError('E_USAGE', `${what} is longer than ${max} characters`, {
      hint: 'say it shorter',
    });
  if (/[\p{Cc}]/u.test(trimmed.replace(/\n/g, ' '))) {
    throw new AgentLockError('E_USAGE', `${what} contains a control character`, {
      hint: 'use printable text (newlines are allowed)',
    });
  }
  return trimmed;
}

function checkedRedisUrl(url: string): string {
  try {
    parseRedisUrl(url);
  } catch (error) {
    if (error instanceof RedisUrlError)
      throw new AgentLockError('E_USAGE', error.message, { hint: 'for example redis://127.0.0.1:6379' });
    throw error;
  }
  return url;
}

function checkedTtl(ttl: number | undefined, fallback: number | null): number | null {
  if (ttl === undefined) return fallback;
  if (!Number.isInteger(ttl) || ttl < 1 || ttl > 365 * 24 * 3600) {
    throw new AgentLockError('E_TTL_INVALID', `ttl must be whole seconds from 1 to 31536000 (got ${ttl})`, {
      hint: 'whole seconds, for example 30',
    });
  }
  return ttl;
}

function checkedWait(wait: number | undefined): number {
  if (wait === undefined) return 0;
  if (typeof wait !== 'number' || Number.isNaN(wait) || wait < 0) {
    throw new AgentLockError('E_USAGE', `wait must be seconds, 0 or more (got ${wait})`, {
      hint: 'for example wait: 30',
    });
  }
  return wait;
}

/** Resolves after `ms`, or sooner when `wake` is called; its timer keeps a waiting process alive. */
function pause(ms: number): { done: Promise<void>; wake: () => void } {
  let wake = () => {};
  const done = new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, Math.max(0, ms));
    wake = () => {
      clearTimeout(timer);
      resolve();
    };
  });
  return { done, wake };
}

function completeIdentity(
  option: OpenLocksOptions['identity'],
  env: Readonly<Record<string, string | undefined>>,
): Identity {
  if (option === undefined) return resolveIdentity(env, ancestorChain(process.pid), hostName());
  if ('idSource' in option) return option;
  const own = resolveIdentity({}, ancestorChain(process.pid), hostName());
  return {
    agentId: option.agentId,
    parentAgentId: option.parentAgentId ?? null,
    idSource: 'option',
    parentSource: option.parentAgentId ? 'option' : 'none',
    holder: option.holder ?? own.holder,
    holderName: own.holderName,
    warnings: [],
  };
}

export async function openLocks(options: OpenLocksOptions = {}): Promise<Locks> {
  const env = options.env ?? process.env;
  const config = readConfig(env);
  // Without an injected clock, decisions run at the store's time (the server's, for Redis).
  const clock = options.clock;
  const identity = completeIdentity(options.identity, env);
  const cwd = path.resolve(options.dir ?? process.cwd());
  let treeInfo: ReturnType<typeof findTree>;
  try {
    treeInfo = findTree(cwd);
  } catch (error) {
    throw new AgentLockError('E_USAGE', `the folder ${cwd} does not exist or cannot be read`, {
      cause: error,
      hint: 'pass an existing folder as dir',
    });
  }
  const treeKey = config.tree ?? treeInfo.root;
  const { gitCommonDir, gitDir } = treeInfo;
  // A long-lived handle (MCP, a daemon) may see its worktree switch branches, so HEAD is read again,
  // but at most once a second: reading it on every decision cost a busy handle a tenth of its time.
  let branch: { name: string | null; at: number } | null = null;
  const across = (): Across => {
    if (gitCommonDir === null) return { checkout: null, policy: config.worktrees };
    const at = performance.now();
    if (branch === null || at - branch.at > 1000) branch = { name: gitDir ? headBranch(gitDir) : null, at };
    return {
      checkout: { repo: gitCommonDir, worktree: treeInfo.root, branch: branch.name },
      policy: config.worktrees,
    };
  };
  const decideAcquireHere: typeof decideAcquire = (state, ctx, req) => {
    const where = across();
    const marked = where.checkout === null ? req : { ...req, checkout: where.checkout };
    return acrossAcquire(state, ctx, marked, decideAcquire(state, ctx, marked), where);
  };

  let backend: Backend;
  if (typeof options.backend === 'object') backend = options.backend;
  else if (options.backend === 'memory') backend = new MemoryStore().connect();
  else {
    backend = await openBackend({
      storeDir: path.resolve(options.storeDir ?? storeDirFor(treeInfo, env)),
      requested: (options.backend as Exclude<BackendKind, 'memory'> | undefined) ?? config.backend,
      self: { host: identity.holder.host, pid: process.pid, started: startStamp(process.pid) },
      mutexTimeoutMs: config.mutexTimeoutMs,
      processAlive,
      now: clock ?? Date.now,
      redisUrl: options.redisUrl === undefined ? config.redisUrl : checkedRedisUrl(options.redisUrl),
      redisUrlGiven: options.redisUrl !== undefined,
      redisPrefix:
        options.redisPrefix === undefined ? config.redisPrefix : checkedPrefix(options.redisPrefix),
      repositoryPrefix: () => repositoryPrefix(treeInfo, config.tree),
      redisTimeoutMs: config.redisTimeoutMs,
      redisProbe: config.redisProbe,
      staleMs: config.staleMs,
    });
  }

  const caller: Caller = {
    agentId: identity.agentId,
    parentAgentId: identity.parentAgentId,
    holder: identity.holder,
  };
  const scopeCtx = { cwd, root: treeInfo.root, probe: fsProbe };
  const targets = (scopes: string | readonly string[]): Target[] => {
    const list = typeof scopes === 'string' ? [scopes] : scopes;
    if (list.length === 0)
      throw new AgentLockError('E_USAGE', 'no scope given', { hint: 'name a path, a glob or an @resource' });
    // A scope named twice (`@d @d`, or `src/a.ts ./src/a.ts`) is one target: two locks on one scope
    // would take two fences and leave one behind when the other is released by token.
    const seen = new Set<string>();
    return list.flatMap((input) => {
      const scope = parseScope(input, scopeCtx);
      const key = `${scope.kind} ${scope.pattern}`;
      if (seen.has(key)) return [];
      seen.add(key);
      return [{ scope, tree: scope.kind === 'resource' ? null : treeKey }];
    });
  };
  const hashToken = (token: string) => createHash('sha256').update(token).digest('hex');
  // Every decision looks at every waiter's process: with four waiters that was most of the CPU
  // of a hand-off. An alive answer is kept for a moment; a dead one for good (pid and start stamp).
  const waiters = new Map<string, { alive: boolean; at: number }>();
  const waiterAlive = (pid: number, started: string): boolean => {
    const key = `${pid}|${started}`;
    const known = waiters.get(key);
    const at = performance.now();
    if (known && (!known.alive || at - known.at < WAITER_ALIVE_MS)) return known.alive;
    const alive = processAlive(pid, started);
    if (waiters.size > 1000) waiters.clear();
    waiters.set(key, { alive, at });
    return alive;
  };
  const context = (now: number): DecisionContext => ({
    now,
    caller,
    staleMs: config.staleMs,
    processAlive,
    waiterAlive,
    hashToken,
    newLock: () => {
      const bytes = randomBytesPooled(32);
      const token = bytes.subarray(0, 24).toString('base64url');
      return { id: `lk_${bytes.subarray(24).toString('hex')}`, token, tokenHash: hashToken(token) };
    },
    newId: () => `lk_${randomBytesPooled(8).toString('hex')}`,
  });
  // Every decision thaws the files its dropped locks had frozen, before its changes are committed:
  // a crash in between leaves the records, and the next decision thaws again.
  const run = <T>(
    decide: (state: StoreState, ctx: DecisionContext) => Decided<T>,
    options?: TransactOptions,
  ): Promise<T> =>
    backend.transact(
      (state, now) => {
        const decided = decide(state, context(now));
        // Frozen paths are paths on their holder's host: a shared Redis store thaws only our own.
        const dropped = frozenDropped(
          state,
          decided.changes,
          backend.kind === 'redis' ? caller.holder.host : null,
        );
        if (dropped.length > 0) thaw(dropped);
        return decided;
      },
      clock,
      options,
    );
  const mode = (shared: boolean | undefined): Mode => (shared ? 'shared' : 'exclusive');
  const pollMs = options.waitPollMs ?? 1000;
  let waiter: Holder | null = null;
  // Tickets are held by this process, not by the lock holder: a killed waiter leaves the line at once.
  const self = (): Holder => {
    waiter ??= { host: identity.holder.host, pid: process.pid, started: startStamp(process.pid) };
    return waiter;
  };
  // A lease's decisions (by id) name the conflict domains of its locks' scopes (TransactOptions).
  const leaseDomains = new WeakMap<readonly LeaseRef[], string[] | undefined>();
  const refsOf = (locks: readonly Lock[]): LeaseRef[] => {
    const refs = locks.map((l) => ({
      id: l.id,
      tokenHash: l.token === undefined ? null : hashToken(l.token),
    }));
    leaseDomains.set(refs, lockDomains(locks));
    return refs;
  };

  /**
   * Waits in line: the first refused attempt takes a ticket (the store keeps our place), then every
   * store change (or the poll) tries again, until granted, refused for good, the deadline or abort.
   */
  async function waitInLine(
    req: Parameters<typeof decideAcquire>[2],
    wait: number,
    opts: AcquireOptions,
  ): Promise<Outcome<AcquireStatus>> {
    const { signal } = opts;
    const deadline = performance.now() + wait * 1000;
    const secret = randomBytesPooled(16).toString('base64url');
    const hash = hashToken(secret);
    let woken = false;
    let sleeping: ReturnType<typeof pause> | null = null;
    // Woken by a commit that names us (not by a timer): the store's snapshot (Redis: the handle's,
    // with what that commit wrote; file: the log read without its mutex) shows the locks it handed
    // us, so a first look needs no round trip and no mutex.
    let noticed = false;
    const poke = () => {
      noticed = true;
      woken = true;
      sleeping?.wake();
    };
    const abort = () => {
      woken = true;
      sleeping?.wake();
    };
    signal?.addEventListener('abort', abort);
    let unwatch: (() => Promise<void>) | null = null;
    let queued = false;
    try {
      // Only the commits that concern this waiter wake it (it is next, or its way is free), so
      // waiters in line do not all decide on every hand-off. Listening before the first attempt:
      // a hand-off made while it is in flight is not missed.
      // A backend written before watchWaiter() existed wakes on every commit instead.
      unwatch = await Promise.resolve()
        .then(() =>
          typeof backend.watchWaiter === 'function'
            ? backend.watchWaiter(waiterKey(self()), poke)
            : backend.watch(poke),
        )
        .catch(() => async () => {});
      for (;;) {
        if (signal?.aborted) throw signal.reason;
        const last = performance.now() >= deadline;
        const cached = noticed && !last;
        woken = false;
        noticed = false;
        const attempt = { ...req, wait: { hash, secret, waiter: self(), ttlMs: TICKET_TTL_MS, last } };
        const outcome = await run((state, ctx) => decideAcquireHere(state, ctx, attempt), {
          cached,
          domains: targetDomains(req.targets),
        });
        if (outcome.status !== 'held') {
          // Whatever the answer, the decision took our tickets away with it.
          queued = false;
          if (signal?.aborted) {
            if (outcome.status === 'acquired') await releaseRefs(refsOf(outcome.locks)).catch(() => {});
            throw signal.reason;
          }
          return outcome;
        }
        queued = true;
        // An answer from the snapshot that says "held" may be out of date: ask the store at once.
        if (cached) {
          woken = true;
          continue;
        }
        try {
          opts.onWait?.(outcome.conflicts);
        } catch {
          // A live line that fails must not end the wait.
        }
        if (!woken) {
          // A lease in the way lapses without any commit to announce it: look again right then.
          const lapse = Math.min(
            ...outcome.conflicts.map((l) =>
              l.expires_at ? Date.parse(l.expires_at) - Date.now() + 5 : pollMs,
            ),
          );
          sleeping = pause(Math.min(pollMs, Math.max(lapse, 0), deadline - performance.now()));
          await sleeping.done;
          sleeping = null;
        }
      }
    } catch (error) {
      // Interrupted or failed: leave the line, so that nobody waits behind a request that is gone.
      if (queued)
        await run((state, ctx) => decideLeave(state, ctx, { hash }), {
          domains: targetDomains(req.targets),
        }).catch(() => {});
      throw error;
    } finally {
      signal?.removeEventListener('abort', abort);
      if (unwatch) await unwatch().catch(() => {});
    }
  }

  const releaseRefs = (refs: readonly LeaseRef[]) =>
    run((state, ctx) => decideLeaseRelease(state, ctx, { refs }), { domains: leaseDomains.get(refs) });
  const leaseStore: LeaseStore = {
    renew: (refs, ttlSeconds) =>
      run((state, ctx) => decideLeaseRenew(state, ctx, { refs, ttlSeconds }), {
        domains: leaseDomains.get(refs),
      }),
    check: (refs) =>
      run((state, ctx) => decideLeaseCheck(state, ctx, { refs }), { domains: leaseDomains.get(refs) }),
    release: releaseRefs,
    watch: (listener) => backend.watch(listener),
  };

  async function hold(scopes: string | readonly string[], opts: HoldOptions): Promise<HoldResult> {
    const ttl = opts.ttl ?? config.defaultTtlSeconds ?? HOLD_TTL_SECONDS;
    const since = instant();
    // Times are taken before each attempt, so the lease's deadline never trails the store's.
    let granted = since;
    const outcome = await api.acquire(scopes, {
      ...opts,
      ttl,
      onWait: (conflicts) => {
        granted = instant();
        opts.onWait?.(conflicts);
      },
    });
    if (outcome.status !== 'acquired' && outcome.status !== 'already_mine') {
      return outcome as HoldResult;
    }
    const owned = outcome.status === 'acquired';
    const lease = await startLease(leaseStore, {
      locks: outcome.locks,
      refs: refsOf(outcome.locks),
      ttl: owned ? ttl : (outcome.locks[0]?.ttl_seconds ?? null),
      owned,
      since: granted,
      ...(opts.onLost ? { onLost: opts.onLost } : {}),
    });
    const { warnings } = outcome;
    return {
      status: outcome.status,
      locks: outcome.locks,
      conflicts: outcome.conflicts,
      lease,
      ...(warnings ? { warnings } : {}),
    };
  }

  const api: Locks = {
    agent: { id: identity.agentId, parentId: identity.parentAgentId },
    identity,
    tree: { root: treeInfo.root, key: treeKey },
    backend,
    config,
    async acquire(scopes, opts = {}) {
      const wanted = targets(scopes);
      let freeze: FrozenFile[][] | undefined;
      if (opts.enforce) {
        freeze = wanted.map((target) => filesToFreeze(target, treeInfo.root));
        const total = freeze.reduce((n, files) => n + files.length, 0);
        if (total > MAX_FROZEN && !opts.force) {
          throw new AgentLockError(
            'E_USAGE',
            `--enforce would make ${total} files read-only (more than ${MAX_FROZEN})`,
            { hint: 'claim a narrower scope, or pass --force' },
          );
        }
      }
      const req = {
        targets: wanted,
        ...(freeze ? { freeze } : {}),
        mode: mode(opts.shared),
        intent: text(opts.intent, 'intent', MAX_INTENT, false),
        ttlSeconds: checkedTtl(opts.ttl, config.defaultTtlSeconds),
      };
      const wait = checkedWait(opts.wait);
      opts.signal?.throwIfAborted();
      const outcome =
        wait > 0
          ? await waitInLine(req, wait, opts)
          : await run((state, ctx) => decideAcquireHere(state, ctx, req), { domains: targetDomains(wanted) });
      // The files are changed only once the lock records them: whatever happens next, the record
      // says what to restore.
      if (outcome.status === 'acquired' && freeze) {
        const modes = new Map(freeze.flat().map((f) => [f.path, f.mode]));
        freezeFiles(
          outcome.locks.flatMap((l) =>
            l.frozen_paths.map((file) => ({ path: file, mode: modes.get(file) ?? 0o644 })),
          ),
        );
      }
      return outcome;
    },
    release(scopes, opts = {}) {
      const req = {
        targets:
          typeof scopes === 'object' && 'all' in scopes ? ('all' as const) : targets(scopes as string[]),
        token: opts.token ?? null,
      };
      return run((state, ctx) => decideRelease(state, ctx, req), {
        domains: req.targets === 'all' ? undefined : targetDomains(req.targets),
      });
    },
    renew(scopes, opts = {}) {
      const req = {
        targets: targets(scopes),
        ttlSeconds: checkedTtl(opts.ttl, null),
        token: opts.token ?? null,
      };
      return run((state, ctx) => decideRenew(state, ctx, req), { domains: targetDomains(req.targets) });
    },
    check(scopes, opts = {}) {
      const req = { targets: targets(scopes), mode: mode(opts.shared) };
      const where = across();
      return run((state, ctx) => acrossCheck(state, ctx, req, decideCheck(state, ctx, req), where), {
        domains: targetDomains(req.targets),
      });
    },
    list() {
      return run((state, ctx) => decideList(state, ctx, { mineOnly: false }));
    },
    hold: (scopes, opts = {}) => hold(scopes, opts),
    async withLock(scopes, opts, work) {
      const held = await hold(scopes, opts);
      if (held.lease === undefined) return held;
      const { lease } = held;
      let value: Awaited<ReturnType<typeof work>>;
      try {
        value = await work(lease.signal, lease);
      } catch (error) {
        await lease.release().catch(() => {});
        throw error;
      }
      await lease.release();
      const { warnings } = held;
      return {
        status: held.status,
        locks: held.locks,
        conflicts: held.conflicts,
        value,
        ...(warnings ? { warnings } : {}),
      };
    },
    mine() {
      return run((state, ctx) => decideList(state, ctx, { mineOnly: true }));
    },
    note(scope, noteText, opts = {}) {
      const [target] = targets(scope);
      const req = {
        target: target!,
        text: text(noteText, 'note', MAX_NOTE, true)!,
        token: opts.token ?? null,
      };
      return run((state, ctx) => decideNote(state, ctx, req), { domains: targetDomains([req.target]) });
    },
    resume(scope) {
      const [target] = targets(scope);
      return run((state, ctx) => decideResume(state, ctx, { target: target! }), {
        domains: targetDomains([target!]),
      });
    },
    breakLock(scopes, opts = {}) {
      const list = typeof scopes === 'string' ? [scopes] : scopes;
      const ids = opts.ids ?? [];
      if (list.length === 0 && ids.length === 0)
        throw new AgentLockError('E_USAGE', 'nothing to break: name a scope or --id', {
          hint: 'for example break src/a.ts, or break --id ID as list shows it',
        });
      const req = {
        targets: list.length > 0 ? targets(list) : [],
        ids,
        reason: text(opts.reason, 'reason', MAX_INTENT, false),
      };
      return run((state, ctx) => decideBreak(state, ctx, req), {
        domains: ids.length > 0 ? undefined : targetDomains(req.targets),
      });
    },
    async events(query = {}) {
      const q: EventQuery = typeof query === 'number' ? { limit: query } : query;
      const limit = q.limit ?? 50;
      const narrowed = q.since !== undefined || q.agent !== undefined || (q.scopes?.length ?? 0) > 0;
      if (!narrowed) return backend.events(limit, q.after);
      const matches = api.eventFilter(q);
      // Narrowed: look through everything kept, then take the last `limit` that match.
      const all = await backend.events(2 * EVENTS_KEPT, q.after);
      return all.filter(matches).slice(-limit);
    },
    eventFilter(q) {
      const filter: EventFilter = {
        ...(q.since === undefined ? {} : { since: q.since }),
        ...(q.agent === undefined ? {} : { agent: q.agent }),
        ...(q.scopes === undefined || q.scopes.length === 0 ? {} : { targets: targets(q.scopes) }),
      };
      return (event) => eventMatches(event, filter);
    },
    async repair() {
      return backend.repair ? backend.repair() : { damage: [], keptAt: [], locksKept: 0 };
    },
    close() {
      return backend.close();
    },
  };
  return api;
}

function checkedPrefix(prefix: string): string {
  if (!REDIS_PREFIX.test(prefix)) {
    throw new AgentLockError('E_USAGE', `the Redis namespace ${JSON.stringify(prefix)} is not valid`, {
      hint: 'use 1 to 64 letters, digits or . _ : / -',
    });
  }
  return prefix;
}
