/**
 * A session: one identity acting in a store. It answers every verb of the contract with a typed
 * outcome (contention is an outcome; a misuse rejects the promise with an AgentLockError). Every
 * decision goes through the store, which thaws what it drops.
 */
import {
  type AskStatus,
  type Delivered,
  decideAsk,
  decideReply,
  decideTakeMail,
  type ReplyStatus,
  type AcquireRequest,
  type AcquireStatus,
  type BreakStatus,
  type Caller,
  type CheckStatus,
  type ClaimOutcome,
  type ClaimStatus,
  type Decided,
  type DecisionContext,
  decideAcquire,
  decideBreak,
  decideCheck,
  decideClaim,
  decideClaimLocks,
  decideClaimsEnd,
  decideLeave,
  decideLeaseCheck,
  decideLeaseRelease,
  decideLeaseRenew,
  decideList,
  decideNote,
  decideRelease,
  decideRenew,
  decideResume,
  type FrozenFile,
  type LeaseRef,
  type ListOutcome,
  type NoteStatus,
  type Outcome,
  type ReleaseStatus,
  type RenewStatus,
  type ResumeStatus,
  type StoreState,
  type Target,
} from '../core/decide.js';
import type { TransactOptions } from '../backends/backend.js';
import { listenDomains, lockDomains, targetDomains } from '../core/domains.js';
import { AgentLockError } from '../core/errors.js';
import { type Identity, validateAgentId } from '../core/identity.js';
import {
  decideHeldByOthers,
  decideTrespass,
  type HeldRecord,
  type Trespass,
} from '../core/decisions/trespass.js';
import type { StoreEvent } from '../core/events.js';
import type { Lock } from '../core/lock.js';
import { stagedPathScope } from '../core/scope.js';
import { acrossAcquire, acrossCheck } from '../core/worktrees.js';
import { filesToFreeze, freeze as freezeFiles } from '../host/freeze.js';
import type { Lease, LeaseStore } from './lease.js';
import {
  checkedTtl,
  checkedWait,
  MAX_ASK,
  MAX_ASKS_WAITING,
  MAX_FROZEN,
  MAX_INTENT,
  MAX_NOTE,
  mode,
  text,
} from './checks.js';
import {
  type Holding,
  type HoldOptions,
  type HoldResult,
  hold,
  type WithLockResult,
  withLock,
} from './hold.js';
import type { Store, StoreCore } from './store.js';
import { waitInLine } from './waiting.js';

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

export interface ClaimOptions {
  /** The tool whose call edits the files (recorded on the claims it takes). */
  tool: string;
  /** Idle lease in ms: a claim lapses this long after the last recorded edit. Default 15 minutes. */
  leaseMs?: number;
  /** An embedded store may answer a claim that changes nothing from its log as it stands (check's). */
  cached?: boolean;
  /**
   * Seconds to wait in the fair line (acquire's) while another agent holds a file; once it is
   * granted it becomes the caller's claim in one step (`claimed`). Past the deadline: `held`.
   */
  wait?: number;
}

/** Fifteen minutes since the agent's last edit of the file. */
export const CLAIM_LEASE_MS = 15 * 60_000;

export interface Session {
  readonly agent: { readonly id: string; readonly parentId: string | null };
  readonly identity: Identity;
  /** The store this session acts in. */
  readonly store: Store;
  /** Real path of the tree root and the tree key path scopes are compared under. */
  readonly tree: { readonly root: string; readonly key: string };
  acquire(scopes: string | readonly string[], options?: AcquireOptions): Promise<Outcome<AcquireStatus>>;
  release(
    scopes: string | readonly string[] | { all: true },
    options?: { token?: string },
  ): Promise<Outcome<ReleaseStatus>>;
  renew(
    scopes: string | readonly string[],
    options?: { ttl?: number; token?: string },
  ): Promise<Outcome<RenewStatus>>;
  /**
   * `cached`: a "free" may be answered from the store as it stands without its mutex (an embedded
   * store: its log, which holds whole commits only), as a hook checking a file it is about to let
   * through asks. Any other answer, or one that would change the store (reap an expired or dead
   * holder), is asked of the store as usual, so the answer is the same either way.
   */
  check(
    scopes: string | readonly string[],
    options?: { shared?: boolean; cached?: boolean },
  ): Promise<Outcome<CheckStatus>>;
  /**
   * Whether another agent holds any of `paths`, exactly as git names them relative to the tree root
   * (no symlink followed, any character allowed): one exclusive check for all, as the git guard
   * makes it before a commit. No worktree warnings.
   */
  checkPaths(paths: readonly string[]): Promise<Outcome<CheckStatus>>;
  list(): Promise<ListOutcome>;
  mine(): Promise<ListOutcome>;
  /**
   * An edit of `scopes` (a hook's): refused (`held`) when another agent holds one, else each one the
   * caller's family does not hold yet is claimed for the caller, in the same decision (`claimed`),
   * or nothing is taken (`mine`). `other_worktree` as check answers it.
   */
  claim(
    scopes: string | readonly string[],
    options: ClaimOptions,
  ): Promise<Outcome<ClaimStatus | 'other_worktree'> & { readonly cycle?: ClaimOutcome['cycle'] }>;
  /** Ends the caller's claims and its children's (its turn or session ended); never its locks. */
  endClaims(reason: string): Promise<Outcome<'released'>>;
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
   * The active path locks of this tree that stand in this agent's way, read as a hook would read
   * them (an embedded store answers from its log without its mutex): what a shell command of this
   * agent could trespass on.
   */
  heldByOthers(): Promise<HeldRecord[]>;
  /** Records `trespassed` events: this agent's `command` changed files of others' locks. */
  recordTrespass(trespasses: readonly Trespass[], command: string): Promise<StoreEvent[]>;
  /**
   * Leaves `text` for every other agent whose lock or claim holds the scope (`asked`), delivered on
   * its next hook call; `free` or `mine` when there is nobody else to ask. A lock that already
   * keeps MAX_ASKS_WAITING undelivered messages refuses it (E_USAGE), and nothing is left anywhere.
   */
  ask(scope: string, text: string): Promise<Outcome<Exclude<AskStatus, 'full'>>>;
  /** Answers `agent`, who asked about one of this agent's (or its children's) locks: `replied` or `not_found`. */
  reply(agent: string, text: string): Promise<Outcome<Exclude<ReplyStatus, 'full'>>>;
  /** Takes every message waiting for this agent, each once (the hooks call it). */
  takeMail(): Promise<Delivered[]>;
}

/** A lock whose holder has not yet taken the messages it may keep: refused, nothing left. */
function full(locks: readonly Lock[]): AgentLockError {
  const scopes = locks.map((l) => `${l.scope} (${l.agent_id})`).join(', ');
  return new AgentLockError(
    'E_USAGE',
    `${scopes} already has ${MAX_ASKS_WAITING} messages its holder has not read`,
    { hint: 'wait until the holder makes a tool call and reads them, then ask again' },
  );
}

export function createSession(core: StoreCore, identity: Identity): Session {
  const { store, config } = core;
  const caller: Caller = {
    agentId: identity.agentId,
    parentAgentId: identity.parentAgentId,
    holder: identity.holder,
  };
  const run = <T>(
    decide: (state: StoreState, ctx: DecisionContext) => Decided<T>,
    options?: TransactOptions,
  ): Promise<T> => core.decide(caller, decide, options);
  const acquireHere = (req: AcquireRequest, options?: TransactOptions) =>
    run((state, ctx) => {
      const where = core.across();
      const marked = where.checkout === null ? req : { ...req, checkout: where.checkout };
      return acrossAcquire(state, ctx, marked, decideAcquire(state, ctx, marked), where);
    }, options);
  // A lease's decisions (by id) name the conflict domains of its locks' scopes (TransactOptions).
  const leaseDomains = new WeakMap<readonly LeaseRef[], string[] | undefined>();
  // And its watch listens on its locks' own domains (Backend.watch): not every commit wakes it.
  const leaseListens = new WeakMap<readonly LeaseRef[], string[]>();
  const refsOf = (locks: readonly Lock[]): LeaseRef[] => {
    const refs = locks.map((l) => ({
      id: l.id,
      tokenHash: l.token === undefined ? null : core.hashToken(l.token),
    }));
    leaseDomains.set(refs, lockDomains(locks));
    leaseListens.set(refs, listenDomains(locks));
    return refs;
  };
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
    watch: (listener, refs) => store.watch(listener, refs && leaseListens.get(refs)),
  };

  async function acquire(scopes: string | readonly string[], opts: AcquireOptions = {}) {
    const wanted = core.targets(scopes);
    let freeze: FrozenFile[][] | undefined;
    if (opts.enforce) {
      freeze = wanted.map((target) => filesToFreeze(target, store.tree.root));
      const total = freeze.reduce((n, files) => n + files.length, 0);
      if (total > MAX_FROZEN && !opts.force) {
        throw new AgentLockError(
          'E_USAGE',
          `enforce would make ${total} files read-only (more than ${MAX_FROZEN})`,
          { hint: 'claim a narrower scope, or allow it with force' },
        );
      }
    }
    const req: AcquireRequest = {
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
        ? await waitInLine(
            core,
            {
              attempt: (ticket, cached) =>
                acquireHere({ ...req, wait: ticket }, { cached, domains: targetDomains(wanted) }),
              leave: (hash) =>
                run((state, ctx) => decideLeave(state, ctx, { hash }), { domains: targetDomains(wanted) }),
              releaseRefs,
              refsOf,
            },
            wait,
            opts,
          )
        : await acquireHere(req, { domains: targetDomains(wanted) });
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
  }

  const holding: Holding = { acquire, leaseStore, refsOf, defaultTtlSeconds: config.defaultTtlSeconds };

  return {
    agent: { id: identity.agentId, parentId: identity.parentAgentId },
    identity,
    store,
    tree: store.tree,
    acquire,
    async release(scopes, opts = {}) {
      const req = {
        targets:
          typeof scopes === 'object' && 'all' in scopes ? ('all' as const) : core.targets(scopes as string[]),
        token: opts.token ?? null,
      };
      return run((state, ctx) => decideRelease(state, ctx, req), {
        domains: req.targets === 'all' ? undefined : targetDomains(req.targets),
      });
    },
    async renew(scopes, opts = {}) {
      const req = {
        targets: core.targets(scopes),
        ttlSeconds: checkedTtl(opts.ttl, null),
        token: opts.token ?? null,
      };
      return run((state, ctx) => decideRenew(state, ctx, req), { domains: targetDomains(req.targets) });
    },
    async check(scopes, opts = {}) {
      const req = { targets: core.targets(scopes), mode: mode(opts.shared) };
      const where = core.across();
      const decide = (state: StoreState, ctx: DecisionContext) =>
        acrossCheck(state, ctx, req, decideCheck(state, ctx, req), where);
      // A Redis handle's snapshot may be behind: only the embedded store's cached read is whole.
      if (opts.cached === true && store.kind === 'file') {
        const seen = await run(decide, { cached: 'whole' });
        if (seen.status === 'free') return seen;
      }
      return run(decide, { domains: targetDomains(req.targets) });
    },
    async checkPaths(paths) {
      if (paths.length === 0) return { status: 'free', locks: [], conflicts: [] };
      const targets: Target[] = paths.map((p) => ({ scope: stagedPathScope(p), tree: store.tree.key }));
      return run((state, ctx) => decideCheck(state, ctx, { targets, mode: 'exclusive' }), {
        domains: targetDomains(targets),
      });
    },
    async claim(scopes, opts) {
      const targets = core.targets(scopes);
      const where = core.across();
      const claimReq = {
        targets,
        tool: text(opts.tool, 'tool', MAX_INTENT, true)!,
        leaseMs: opts.leaseMs ?? CLAIM_LEASE_MS,
        ...(where.checkout === null ? {} : { checkout: where.checkout }),
      };
      const decide = (
        state: StoreState,
        ctx: DecisionContext,
      ): Decided<Outcome<ClaimStatus | 'other_worktree'> & { readonly cycle?: ClaimOutcome['cycle'] }> => {
        const claimed = decideClaim(state, ctx, claimReq);
        if (claimed.result.status === 'held' || where.checkout === null || where.policy === 'off')
          return claimed;
        // Another worktree's lock on the file: told as check tells it, or refused under `block`.
        const req = { targets, mode: 'exclusive' as const };
        const checked = acrossCheck(state, ctx, req, decideCheck(state, ctx, req), where);
        const seen = checked.result;
        // Refused: nothing is claimed (the check's changes are its reaping only).
        if (seen.status === 'other_worktree')
          return { ...checked, result: { ...seen, status: 'other_worktree' } };
        return seen.warnings
          ? { ...claimed, result: { ...claimed.result, warnings: seen.warnings } }
          : claimed;
      };
      const domains = targetDomains(targets);
      const first =
        opts.cached === true && store.kind === 'file'
          ? await run(decide, { cached: 'whole', domains })
          : await run(decide, { domains });
      const wait = checkedWait(opts.wait);
      // A wait that could never end (its holder waits for one of ours) is refused at once.
      if (first.status !== 'held' || wait === 0 || first.cycle !== undefined) return first;
      const waited = await acquire(scopes, { wait, intent: `waiting to edit (${claimReq.tool})` });
      if (waited.status === 'already_mine') return { ...waited, status: 'mine' };
      if (waited.status !== 'acquired') return { ...waited, status: 'held' };
      const ids = waited.locks.map((l) => l.id);
      return run(
        (state, ctx) => decideClaimLocks(state, ctx, { ids, tool: claimReq.tool, leaseMs: claimReq.leaseMs }),
        { domains },
      );
    },
    async endClaims(reason) {
      // Most turns end with no claim to end: the embedded store answers that from its log, without
      // its mutex (a decision that would change something takes the mutex as usual).
      return run(
        (state, ctx) => decideClaimsEnd(state, ctx, { reason }),
        store.kind === 'file' ? { cached: 'whole' } : {},
      );
    },
    async list() {
      return run((state, ctx) => decideList(state, ctx, { mineOnly: false }));
    },
    async mine() {
      return run((state, ctx) => decideList(state, ctx, { mineOnly: true }));
    },
    hold: async (scopes, opts = {}) => hold(holding, scopes, opts),
    withLock: async (scopes, opts, work) => withLock(holding, scopes, opts, work),
    async note(scope, noteText, opts = {}) {
      const [target] = core.targets(scope);
      const req = {
        target: target!,
        text: text(noteText, 'note', MAX_NOTE, true)!,
        token: opts.token ?? null,
      };
      return run((state, ctx) => decideNote(state, ctx, req), { domains: targetDomains([req.target]) });
    },
    async resume(scope) {
      const [target] = core.targets(scope);
      return run((state, ctx) => decideResume(state, ctx, { target: target! }), {
        domains: targetDomains([target!]),
      });
    },
    async heldByOthers() {
      const tree = store.tree.key;
      return run((state, ctx) => decideHeldByOthers(state, ctx, { tree }), {
        cached: store.kind === 'file' ? 'whole' : false,
      });
    },
    async recordTrespass(trespasses, command) {
      if (trespasses.length === 0) return [];
      return run((state, ctx) => decideTrespass(state, ctx, { trespasses, command }));
    },
    async ask(scope, askText) {
      const [target] = core.targets(scope);
      const req = {
        targets: [target!],
        text: text(askText, 'request', MAX_ASK, true)!,
        maxWaiting: MAX_ASKS_WAITING,
      };
      const asked = await run((state, ctx) => decideAsk(state, ctx, req));
      if (asked.status === 'full') throw full(asked.conflicts);
      return asked as Outcome<Exclude<AskStatus, 'full'>>;
    },
    async reply(agent, replyText) {
      let to: string;
      try {
        to = validateAgentId(agent.trim(), 'the agent');
      } catch (error) {
        throw new AgentLockError('E_USAGE', (error as Error).message, {
          hint: 'name the agent that asked, as its request named it (for example claude-1a2b3c4d)',
        });
      }
      const req = {
        to,
        text: text(replyText, 'reply', MAX_ASK, true)!,
        maxWaiting: MAX_ASKS_WAITING,
      };
      const replied = await run((state, ctx) => decideReply(state, ctx, req));
      if (replied.status === 'full') throw full(replied.conflicts);
      return replied as Outcome<Exclude<ReplyStatus, 'full'>>;
    },
    async takeMail() {
      return run((state, ctx) => decideTakeMail(state, ctx));
    },
    async breakLock(scopes, opts = {}) {
      const list = typeof scopes === 'string' ? [scopes] : scopes;
      const ids = opts.ids ?? [];
      if (list.length === 0 && ids.length === 0)
        throw new AgentLockError('E_USAGE', 'nothing to break: name a scope or a lock id', {
          hint: 'a scope such as src/a.ts, or a lock id as list shows it',
        });
      const req = {
        targets: list.length > 0 ? core.targets(list) : [],
        ids,
        reason: text(opts.reason, 'reason', MAX_INTENT, false),
      };
      return run((state, ctx) => decideBreak(state, ctx, req), {
        domains: ids.length > 0 ? undefined : targetDomains(req.targets),
      });
    },
  };
}
