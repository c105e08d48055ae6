/**
 * A store: the tree, the settings and the backend, opened once and shared by every identity that
 * acts in it (`store.as(identity)` gives a session with the verbs). The store is the only code that
 * runs a decision against the backend, so what every decision owes is done here, for every caller:
 * the decision context (tokens, liveness), and thawing the files of the locks a decision drops.
 */
import path from 'node:path';
import type {
  Backend,
  BackendKind,
  RepairReport,
  TransactOptions,
  WatchListener,
} from '../backends/backend.js';
import { MemoryStore } from '../backends/memory/memory-store.js';
import { openBackend } from '../backends/open-backend.js';
import { type Config, readConfig } from '../core/config.js';
import type { Caller, Decided, DecisionContext, StoreEvent, StoreState, Target } from '../core/decide.js';
import { AgentLockError } from '../core/errors.js';
import { EVENTS_KEPT, type EventFilter, eventMatches } from '../core/events.js';
import { holderProcess, type Identity, resolveIdentity } from '../core/identity.js';
import type { Holder } from '../core/lock.js';
import { parseScope } from '../core/scope.js';
import type { Across } from '../core/worktrees.js';
import { sha256Hex } from '../host/hash.js';
import { ancestorChain, hostName, processAlive, startStamp } from '../host/process.js';
import { randomBytesPooled } from '../host/random.js';
import { findTree, fsProbe, headBranch, repositoryPrefix, storeDirFor } from '../host/tree.js';
import { checkedPrefix, checkedRedisUrl } from './checks.js';
import { createSession, type Session } from './session.js';
import { thawAfterCommit, thawDropped } from './thaw.js';

export interface StoreOptions {
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
  /** Epoch milliseconds; injectable for tests. */
  clock?: () => number;
  /**
   * With backend `file` (`init --backend file --force`): a Redis store whose server no longer
   * answers is left for a new file store, its marker kept aside. One that answers must be empty.
   */
  leaveUnreachableRedis?: boolean;
  /** Environment to read settings (and a session's default identity) from. Default: process.env. */
  env?: Readonly<Record<string, string | undefined>>;
  /**
   * A waiting acquire wakes when the store changes (a notification) and also looks this often
   * (ms), in case a notification was lost. Default 1000.
   */
  waitPollMs?: number;
  /** The host this process names itself by in the store. Default: this machine's name. */
  host?: string;
}

/** Who a session acts as: a resolved identity, or an agent id (the holder is this process). */
export type IdentityOption = Identity | { agentId: string; parentAgentId?: string | null; holder?: Holder };

export interface EventQuery {
  readonly limit?: number;
  readonly after?: string;
  readonly since?: number;
  readonly agent?: string;
  readonly scopes?: readonly string[];
}

export interface Store {
  readonly config: Config;
  readonly kind: BackendKind;
  /** Where the store is, for messages: a folder, or a URL without its password. */
  readonly location: string;
  /** Redis: the key prefix (namespace) of this store on its server. */
  readonly namespace: string | undefined;
  /** Real path of the tree root and the tree key path scopes are compared under. */
  readonly tree: { readonly root: string; readonly key: string };
  /** A session acting as `identity` (default: from the environment and the process tree). */
  as(identity?: IdentityOption): Session;
  /**
   * The store's history (core/events), newest last: the last `limit` (50) events, or only those
   * after the event whose id is `after`, narrowed by time, agent and scope (scopes are read like
   * acquire's, relative to the tree).
   */
  events(query?: number | EventQuery): Promise<StoreEvent[]>;
  /** The test events() applies for `query`'s time, agent and scopes (a scope is checked at once). */
  eventFilter(query: EventQuery): (event: StoreEvent) => boolean;
  /**
   * Calls `listener` soon after any process commits a change (best effort); resolves to a stopper.
   * `domains` (core/domains): only changes to records of those domains need be told (Backend.watch).
   */
  watch(listener: WatchListener, domains?: readonly string[]): Promise<() => Promise<void>>;
  /**
   * Moves damage in the store aside (kept, timestamped) and goes on with what can be read: only
   * when a person asks. A store without damage is left as it is (`damage` empty).
   */
  repair(): Promise<RepairReport>;
  close(): Promise<void>;
}

/** What sessions need of their store: the only way to a decision. Internal to src/store. */
export interface StoreCore {
  readonly store: Store;
  readonly config: Config;
  readonly pollMs: number;
  targets(scopes: string | readonly string[]): Target[];
  /** Where this tree stands among the repository's worktrees (HEAD read at most once a second). */
  across(): Across;
  hashToken(token: string): string;
  /** This process as a waiter: tickets are held by the process, not by the lock holder. */
  waiter(): Holder;
  decide<T>(
    caller: Caller,
    decide: (state: StoreState, ctx: DecisionContext) => Decided<T>,
    options?: TransactOptions,
  ): Promise<T>;
  watchWaiter(waiter: string, listener: WatchListener): Promise<() => Promise<void>>;
}

/** How long a waiter's process counts as alive once seen alive (see waiterAlive). */
const WAITER_ALIVE_MS = 250;

/**
 * Where a store keeps its backend: a registered symbol, because the lazily loaded bundles (doctor,
 * the benchmarks' dist/index.js) each carry their own copy of this module.
 */
export const BACKEND = Symbol.for('agent-lock.backend');

/**
 * The backend under a store, for diagnostics (doctor's Redis facts) and tests that exercise a
 * backend directly. Not for decisions: those go through a session, so that what they drop thaws.
 */
export function backendOf(store: Store): Backend {
  const backend = (store as Store & { [BACKEND]?: Backend })[BACKEND];
  if (backend === undefined) throw new AgentLockError('E_INTERNAL', 'not a store opened by openStore');
  return backend;
}

export function completeIdentity(
  option: IdentityOption | undefined,
  env: Readonly<Record<string, string | undefined>>,
): Identity {
  if (option === undefined) return resolveIdentity(env, ancestorChain(process.pid), hostName());
  if ('idSource' in option) return option;
  // Only the holding process is wanted, not the id alock would give it (a hash: node:crypto,
  // which a hook's check of a free file never needs otherwise).
  const own = holderProcess(ancestorChain(process.pid));
  return {
    agentId: option.agentId,
    parentAgentId: option.parentAgentId ?? null,
    idSource: 'option',
    parentSource: option.parentAgentId ? 'option' : 'none',
    holder: option.holder ?? { host: hostName(), pid: own.pid, started: own.started },
    holderName: own.name,
    warnings: [],
  };
}

export async function openStore(options: StoreOptions = {}): Promise<Store> {
  const env = options.env ?? process.env;
  const config = readConfig(env);
  // Without an injected clock, decisions run at the store's time (the server's, for Redis).
  const clock = options.clock;
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
  const host = options.host ?? hostName();

  let backend: Backend;
  if (typeof options.backend === 'object') backend = options.backend;
  else if (options.backend === 'memory') backend = new MemoryStore().connect();
  else {
    backend = await openBackend({
      storeDir: path.resolve(options.storeDir ?? storeDirFor(treeInfo, env)),
      requested: (options.backend as Exclude<BackendKind, 'memory'> | undefined) ?? config.backend,
      self: { host, pid: process.pid, started: startStamp(process.pid) },
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
      ...(options.leaveUnreachableRedis === true ? { leaveUnreachable: true } : {}),
    });
  }

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

  const scopeCtx = { cwd, root: treeInfo.root, probe: fsProbe };
  // Records carry their checkout only in a git checkout (across()); targets name theirs to match.
  const checkoutKey = gitCommonDir === null ? undefined : { host, worktree: treeInfo.root };
  // One @resource named alone, the commonest request: its targets depend on nothing but the name
  // (no folder, no probe), so they are made once and shared (frozen: nobody may change them).
  const resourceTargets = new Map<string, Target[]>();
  const targets = (scopes: string | readonly string[]): Target[] => {
    if (typeof scopes === 'string' && scopes.startsWith('@')) {
      let known = resourceTargets.get(scopes);
      if (known === undefined) {
        known = Object.freeze([
          Object.freeze({ scope: Object.freeze(parseScope(scopes, scopeCtx)), tree: null }),
        ]) as Target[];
        if (resourceTargets.size >= 1024) resourceTargets.clear();
        resourceTargets.set(scopes, known);
      }
      return known;
    }
    const list = typeof scopes === 'string' ? [scopes] : scopes;
    if (list.length === 0)
      throw new AgentLockError('E_USAGE', 'no scope given', { hint: 'name a path, a glob or an @resource' });
    // A scope named twice (`@d @d`, or `src/a.ts ./src/a.ts`) is one target: two locks on one scope
    // would take two fences and leave one behind when the other is released by token.
    const seen = new Set<string>();
    return list.flatMap((input): Target[] => {
      const scope = parseScope(input, scopeCtx);
      const key = `${scope.kind} ${scope.pattern}`;
      if (seen.has(key)) return [];
      seen.add(key);
      if (scope.kind === 'resource') return [{ scope, tree: null }];
      return [
        checkoutKey === undefined
          ? { scope, tree: treeKey }
          : { scope, tree: treeKey, checkout: checkoutKey },
      ];
    });
  };

  const hashToken = sha256Hex;
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
  // Made once, not per decision: they depend on neither the caller nor the time.
  const newLock = () => {
    const bytes = randomBytesPooled(32);
    const token = bytes.subarray(0, 24).toString('base64url');
    return { id: `lk_${bytes.subarray(24).toString('hex')}`, token, tokenHash: hashToken(token) };
  };
  const newId = () => `lk_${randomBytesPooled(8).toString('hex')}`;
  const context = (caller: Caller, now: number): DecisionContext => ({
    now,
    caller,
    staleMs: config.staleMs,
    processAlive,
    waiterAlive,
    hashToken,
    newLock,
    newId,
  });
  let waiter: Holder | null = null;

  const store: Store = {
    config,
    kind: backend.kind,
    location: backend.location,
    namespace: backend.namespace,
    tree: { root: treeInfo.root, key: treeKey },
    as: (identity) => createSession(core, completeIdentity(identity, env)),
    async events(query = {}) {
      const q: EventQuery = typeof query === 'number' ? { limit: query } : query;
      const limit = q.limit ?? 50;
      const narrowed = q.since !== undefined || q.agent !== undefined || (q.scopes?.length ?? 0) > 0;
      if (!narrowed) return backend.events(limit, q.after);
      const matches = store.eventFilter(q);
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
    watch: async (listener, domains) => backend.watch(listener, domains),
    async repair() {
      return backend.repair ? backend.repair() : { damage: [], keptAt: [], locksKept: 0 };
    },
    close: async () => backend.close(),
  };
  Object.defineProperty(store, BACKEND, { value: backend, enumerable: false });

  const core: StoreCore = {
    store,
    config,
    pollMs: options.waitPollMs ?? 1000,
    targets,
    across,
    hashToken,
    waiter: () => {
      waiter ??= { host, pid: process.pid, started: startStamp(process.pid) };
      return waiter;
    },
    decide: (caller, decide, transactOptions) =>
      // Redis may decide more than once: it thaws after the commit, from the run committed (thaw.ts).
      // Frozen paths are paths on their holder's host: a shared Redis store thaws only our own.
      backend.kind === 'redis'
        ? thawAfterCommit(
            (run) => backend.transact(run, clock, transactOptions),
            (state, now) => decide(state, context(caller, now)),
            caller.holder.host,
          )
        : backend.transact(
            (state, now) => thawDropped(state, decide(state, context(caller, now)), null),
            clock,
            transactOptions,
          ),
    // A backend written before watchWaiter() existed wakes on every commit instead.
    watchWaiter: async (key, listener) =>
      typeof backend.watchWaiter === 'function'
        ? backend.watchWaiter(key, listener)
        : backend.watch(listener),
  };
  return store;
}
