/**
 * What every harness's pre-tool-use hook shares: who makes the call, whether another agent holds a
 * file it would write, and what to do when that cannot be told. Each harness (claude-hook.ts,
 * harness-hooks.ts) only reads its own payload into these terms and words the decision its own way.
 */
import { statSync } from 'node:fs';
import path from 'node:path';
import type { CliContext } from '../answers/answer.js';
import { AgentLockError, isAgentLockError } from '../core/errors.js';
import {
  holderProcess,
  type Identity,
  namedByProcess,
  processAgentId,
  sessionAgentId,
  subAgentHead,
  validateAgentId,
} from '../core/identity.js';
import type { Lock } from '../core/lock.js';
import { resolveAsFileSystem } from '../core/scope.js';
import { warningsForAgent } from '../core/worktrees.js';
import { ancestorChain, hostName } from '../host/process.js';
import { findTree, fsProbe } from '../host/tree.js';
import { openLocks } from '../locks.js';
import { leaveMailHint, mailLines } from './mail.js';

type Env = Readonly<Record<string, string | undefined>>;

export interface HookAgent {
  readonly agentId: string;
  readonly parentAgentId: string | null;
}

/**
 * One decision, before any harness words it. `context` is for lines the agent should read without
 * the call being refused (a later warning, such as a lock in another worktree); harnesses that can
 * add context to an allowed call pass it on, the others drop it.
 */
export type HookDecision =
  | {
      readonly kind: 'allow';
      readonly message: string;
      /** Shown to the user (not the agent) where the harness has a place for it. */
      readonly note?: string;
      readonly context?: readonly string[];
      readonly extra: Record<string, unknown>;
    }
  | {
      readonly kind: 'deny';
      readonly reason: string;
      readonly conflicts: readonly Lock[];
      readonly extra: Record<string, unknown>;
    };

export function allow(message: string, extra: Record<string, unknown> = {}): HookDecision {
  return { kind: 'allow', message, extra };
}

export function deny(reason: string, extra: Record<string, unknown> = {}, conflicts: readonly Lock[] = []) {
  return { kind: 'deny', reason, conflicts, extra } as const satisfies HookDecision;
}

export function nonEmpty(value: string | undefined): string | undefined {
  return value !== undefined && value.trim() !== '' ? value.trim() : undefined;
}

/** Where a harness's payload says who calls: its session (or conversation, task) and sub-agent. */
export interface CallerFacts {
  /** `claude`, `codex`, ...: the prefix of the main agent's id, as alock derives it. */
  readonly harness: string;
  readonly sessionId?: string | undefined;
  readonly subAgentId?: string | undefined;
}

/** The hook's own identity, as alock resolves it from the hook's environment and ancestry. */
export type OwnIdentity = () => Pick<Identity, 'agentId' | 'parentAgentId' | 'holder'>;

/**
 * Who makes this tool call. The main agent is what `alock` itself would resolve in the session
 * (AGENT_ID, else `<harness>-<8 of the session id>`); for a harness whose shell commands get no
 * session id (namedByProcess), `<harness>-<8 of the harness process>`, the process the hook and the
 * agent's shell both descend from; for a harness whose payload names no session, the identity alock
 * resolves from the hook's own process ancestry. A sub-agent is `<main>-<8 of its id>` with the main
 * agent as its parent.
 */
export function callerAgent(facts: CallerFacts, env: Env, fallback: OwnIdentity): HookAgent {
  // Ids as valid as alock itself would demand: an id the hook exports into a shell command must not
  // make every alock and git call in it fail, nor pass where an edit would be refused.
  const fromEnv = nonEmpty(env.AGENT_ID);
  const session = nonEmpty(facts.sessionId);
  let main: string;
  if (fromEnv !== undefined) main = validateAgentId(fromEnv, 'AGENT_ID');
  else if (namedByProcess(facts.harness)) {
    // The session the payload names is one the agent's own alock cannot see: both doors name the
    // harness process instead (its holder, read from /proc as for every hook's claims).
    main = processAgentId(facts.harness, fallback().holder);
  } else if (session !== undefined) {
    const id = sessionAgentId(facts.harness, session);
    if (id === null) {
      throw new AgentLockError(
        'E_ENV_INVALID',
        `the session id ${JSON.stringify(session)} makes no valid agent id`,
        { hint: 'set AGENT_ID for this session' },
      );
    }
    main = id;
  } else {
    const own = fallback();
    if (nonEmpty(facts.subAgentId) === undefined) {
      return { agentId: own.agentId, parentAgentId: own.parentAgentId };
    }
    main = own.agentId;
  }
  const sub = nonEmpty(facts.subAgentId);
  if (sub === undefined) {
    const parent = nonEmpty(env.AGENT_PARENT_ID);
    // Empty or `none` says "no parent", as for alock itself: never an agent named none.
    const none = parent === undefined || parent.toLowerCase() === 'none';
    return { agentId: main, parentAgentId: none ? null : validateAgentId(parent, 'AGENT_PARENT_ID') };
  }
  return { agentId: `${main}-${subAgentHead(sub)}`, parentAgentId: main };
}

export function shellQuote(text: string): string {
  return /^[A-Za-z0-9@%+=:,./_-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}

export type OnError = 'allow' | 'deny';

export function onErrorSetting(env: Env): OnError | { invalid: string } {
  const value = nonEmpty(env.AGENT_LOCK_HOOK_ON_ERROR);
  if (value === undefined) return 'deny';
  if (value === 'allow' || value === 'deny') return value;
  return { invalid: value };
}

/** A refusal while AGENT_LOCK_HOOK_ON_ERROR has a bad value: never a silent default. */
export function badSettingDecision(env: Env): HookDecision | null {
  const setting = onErrorSetting(env);
  if (typeof setting !== 'object') return null;
  return deny(
    `agent-lock: AGENT_LOCK_HOOK_ON_ERROR must be allow or deny (got ${JSON.stringify(setting.invalid)}); fix or unset it`,
    { error: 'AGENT_LOCK_HOOK_ON_ERROR' },
  );
}

/** The hook could not decide: the explicit setting says whether the tool call goes through. */
export function couldNotDecide(env: Env, what: string): HookDecision {
  const setting = onErrorSetting(env);
  if (typeof setting === 'object') {
    return deny(
      `agent-lock: AGENT_LOCK_HOOK_ON_ERROR must be allow or deny (got ${JSON.stringify(setting.invalid)}); and ${what}`,
      { error: what },
    );
  }
  if (setting === 'deny') {
    return deny(
      `agent-lock could not check this tool call: ${what}. Fix that, or set AGENT_LOCK_HOOK_ON_ERROR=allow to let tool calls through unchecked.`,
      { error: what, on_error: 'deny' },
    );
  }
  const message = `agent-lock could not check this tool call (${what}); allowed because AGENT_LOCK_HOOK_ON_ERROR=allow`;
  return { kind: 'allow', message, note: message, extra: { error: what, on_error: 'allow' } };
}

export function isDirectory(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/** The folder relative paths of a call resolve against: the payload's, when it is a real folder. */
export function callBase(cli: CliContext, cwd: unknown): string {
  return typeof cwd === 'string' && path.isAbsolute(cwd) && isDirectory(cwd) ? cwd : cli.io.cwd;
}

export function nearestExisting(p: string): string {
  let current = p;
  while (!isDirectory(current)) {
    const parent = path.dirname(current);
    if (parent === current) return current;
    current = parent;
  }
  return current;
}

function inside(root: string, file: string): boolean {
  const rel = path.relative(root, file);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

export function holderLine(lock: Lock): string {
  const parent = lock.parent_agent_id ? ` (sub-agent of ${lock.parent_agent_id})` : '';
  const intent = lock.intent ? `, intent "${lock.intent}"` : '';
  if (lock.claim !== null) {
    // A claim: what is being done, since when, the last edit and when it ends, so the agent can
    // judge whether to wait or work elsewhere.
    const now = Date.now();
    const ends = lock.expires_at === null ? '' : `, or ${ago(lock.expires_at, now)} if no edit comes first`;
    return `${lock.agent_id}${parent} claims ${lock.scope} (editing with ${lock.claim.tool}) since ${ago(lock.created_at, now)}, last edit ${ago(lock.claim.last_edit_at, now)}; the claim ends when that agent's turn ends${ends}`;
  }
  return `${lock.agent_id}${parent} holds ${lock.scope}${intent}`;
}

/** An instant (ISO) relative to now, in words: `3 min ago`, `in 12 min`. */
function ago(at: string, now: number): string {
  const ms = Date.parse(at) - now;
  const minutes = Math.round(Math.abs(ms) / 60_000);
  const span = minutes === 0 ? `${Math.max(1, Math.round(Math.abs(ms) / 1000))} s` : `${minutes} min`;
  return ms > 0 ? `in ${span}` : `${span} ago`;
}

/** The longest idle lease of a claim, in minutes (a day): beyond it a claim is a lock. */
const MAX_CLAIM_MINUTES = 24 * 60;

/**
 * Claim on edit (AGENT_LOCK_CLAIM, default on) and its idle lease (AGENT_LOCK_CLAIM_IDLE_MINUTES,
 * default 15): `null` when off, the lease in ms when on, or the bad value.
 */
export function claimSetting(env: Env): number | null | { invalid: string; variable: string } {
  const on = nonEmpty(env.AGENT_LOCK_CLAIM);
  if (on !== undefined && on !== 'on' && on !== 'off') return { invalid: on, variable: 'AGENT_LOCK_CLAIM' };
  if (on === 'off') return null;
  const idle = nonEmpty(env.AGENT_LOCK_CLAIM_IDLE_MINUTES);
  if (idle === undefined) return 15 * 60_000;
  const minutes = Number(idle);
  if (!/^\d+(\.\d+)?$/.test(idle) || minutes <= 0 || minutes > MAX_CLAIM_MINUTES)
    return { invalid: idle, variable: 'AGENT_LOCK_CLAIM_IDLE_MINUTES' };
  return Math.round(minutes * 60_000);
}

/**
 * The process a hook's claims live with: the harness that runs the hook (the first ancestor that
 * is no shell or launcher), not the hook's own process, which is gone in a moment.
 */
function harnessHolder(): { host: string; pid: number; started: string } {
  const harness = holderProcess(ancestorChain(process.ppid > 0 ? process.ppid : process.pid));
  return { host: hostName(), pid: harness.pid, started: harness.started };
}

/**
 * Denied when another agent holds any of `files` (each checked in turn, the first refusal wins).
 * With `tool` (the edit's tool) and claims on, each file nobody else holds is claimed for the agent
 * by the same decision that checks it.
 */
export async function checkFiles(
  cli: CliContext,
  files: readonly string[],
  agent: HookAgent,
  base: string,
  tool?: string,
): Promise<HookDecision> {
  let claim: Claiming | null = null;
  if (tool !== undefined) {
    const setting = claimSetting(cli.io.env);
    if (typeof setting === 'object' && setting !== null) {
      return deny(
        `agent-lock: ${setting.variable} must be ${setting.variable === 'AGENT_LOCK_CLAIM' ? 'on or off' : `minutes, more than 0 and at most ${MAX_CLAIM_MINUTES}`} (got ${JSON.stringify(setting.invalid)}); fix or unset it`,
        { agent, error: setting.variable },
      );
    }
    if (setting !== null) claim = { tool, leaseMs: setting, holder: harnessHolder() };
  }
  let allowed: HookDecision | null = null;
  for (const raw of files) {
    // `dir/link/../x` is the file beside the link's target where the tool hands the path to the
    // file system as it is, but `dir/x` where the tool tidies it first: both are checked.
    const physical = resolveAsFileSystem(base, raw, (absolute) => fsProbe.realpath(absolute));
    const lexical = path.resolve(base, raw);
    let decision = await checkFile(cli, physical, agent, base, claim);
    if (decision.kind !== 'deny' && lexical !== physical)
      decision = await checkFile(cli, lexical, agent, base, claim);
    if (decision.kind === 'deny') return decision;
    allowed ??= decision;
  }
  return allowed ?? allow('allowed: no file to check', { agent });
}

/** A claim to take with the check: the tool, the idle lease, and the process it lives with. */
interface Claiming {
  readonly tool: string;
  readonly leaseMs: number;
  readonly holder: { host: string; pid: number; started: string };
}

async function checkFile(
  cli: CliContext,
  file: string,
  agent: HookAgent,
  base: string,
  claim: Claiming | null,
): Promise<HookDecision> {
  // Where a lock on this file can live: the file's own git checkout (another worktree, a submodule,
  // a repository below a session started in a plain folder), and the session's tree when the file is
  // inside it but belongs to a checkout nested there (a lock taken from the session's folder names
  // it under the session's tree). A file outside both is nobody's to lock: checking it would make a
  // store for it.
  const fileTree = findTree(nearestExisting(path.dirname(file)));
  const baseTree = findTree(base);
  const dirs: string[] = [];
  if (fileTree.gitCommonDir !== null) dirs.push(fileTree.root);
  if (inside(baseTree.root, file) && (fileTree.gitCommonDir === null || baseTree.root !== fileTree.root)) {
    dirs.push(base);
  }
  if (dirs.length === 0) return allow(`allowed: ${file} is outside every tree`, { file, agent });
  let allowed: HookDecision | null = null;
  for (const dir of dirs) {
    const decision = await checkFileIn(cli, dir, file, agent, claim);
    if (decision.kind === 'deny') return decision;
    allowed ??= decision;
  }
  return allowed!;
}

/** Asks the store of the tree around `dir` whether another agent holds `file`. */
async function checkFileIn(
  cli: CliContext,
  dir: string,
  file: string,
  agent: HookAgent,
  claim: Claiming | null,
): Promise<HookDecision> {
  const backend = cli.globals().backend;
  const locks = await openLocks({
    dir,
    env: cli.io.env,
    identity: {
      agentId: agent.agentId,
      parentAgentId: agent.parentAgentId,
      ...(claim === null ? {} : { holder: claim.holder }),
    },
    ...(backend === 'file' || backend === 'redis' ? { backend } : {}),
  });
  try {
    let outcome: Awaited<ReturnType<typeof locks.check | typeof locks.claim>>;
    try {
      // Most calls concern a free file (or one the agent claims already): read from the store as it
      // stands, without its mutex, when the answer changes nothing.
      outcome =
        claim === null
          ? await locks.check(file, { cached: true })
          : await locks.claim(file, { tool: claim.tool, leaseMs: claim.leaseMs, cached: true });
    } catch (error) {
      if (isAgentLockError(error) && error.code === 'E_SCOPE_OUTSIDE_TREE') {
        return allow(`allowed: ${file} is outside the tree`, { file, agent });
      }
      throw error;
    }
    const shown = path.relative(locks.tree.root, file) || file;
    const told = warningsForAgent(outcome.warnings);
    // Messages wait for this agent (seen in the same read): a refusal takes them at once, since every
    // harness shows its reason to the agent; an allowed call leaves them to the harness's own place
    // for context (trespass-hooks.ts), told by a hint.
    if (outcome.mail === true && outcome.status !== 'held') leaveMailHint(cli.io.env, agent.agentId, dir);
    if (outcome.status === 'other_worktree') {
      const reason = `${told} AGENT_LOCK_WORKTREES=block: do not edit ${shown} here; work on something else, or ask its holder to merge first (${cli.name} ask ${shellQuote(shown)} "...").`;
      return deny(reason, { file: shown, agent }, outcome.conflicts);
    }
    if (outcome.status !== 'held') {
      // Another worktree's lock on this path: the call goes on, and the agent is told (added
      // context where the harness has it), never refused.
      const message =
        outcome.status === 'claimed'
          ? `allowed: ${shown} is claimed for ${agent.agentId}`
          : `allowed: ${shown} is ${outcome.status} for ${agent.agentId}`;
      if (told === null) return allow(message, { file: shown, agent });
      return {
        kind: 'allow',
        message,
        context: [told],
        extra: { file: shown, agent, warnings: outcome.warnings },
      };
    }
    const wait = hookWait(cli.io.env);
    if (typeof wait === 'object') {
      return deny(
        `agent-lock: AGENT_LOCK_HOOK_WAIT must be a number of seconds from 0 to ${MAX_HOOK_WAIT} (got ${JSON.stringify(wait.invalid)}); fix or unset it`,
        { file: shown, agent, error: 'AGENT_LOCK_HOOK_WAIT' },
      );
    }
    let conflicts = outcome.conflicts;
    if (wait > 0 && claim !== null) {
      // Wait in the same fair line as `acquire --wait`, as this agent; the file, once granted,
      // becomes this agent's claim in the same step: it keeps what it waited for.
      const waited = await locks.claim(file, { tool: claim.tool, leaseMs: claim.leaseMs, wait });
      if (waited.cycle !== undefined) {
        const reason = `agent-lock: ${shown} is claimed by another agent that is waiting for a file you hold, so neither wait could end: ${waited.cycle.join('; ')}. You are ${agent.agentId}. Do not wait: finish or release what you hold (${cli.name} release --all), or work on something else.`;
        return deny(reason, { file: shown, agent, cycle: waited.cycle }, waited.conflicts);
      }
      if (waited.status === 'claimed' || waited.status === 'mine') {
        return allow(`allowed: ${shown} came free while waiting (AGENT_LOCK_HOOK_WAIT) and is claimed`, {
          file: shown,
          agent,
        });
      }
      if (waited.conflicts.length > 0) conflicts = waited.conflicts;
    } else if (wait > 0) {
      // Wait in the same fair line as `acquire --wait`, as this agent; once the file is ours, give
      // it straight back and let the edit go: the hook pauses, it does not claim.
      const waited = await locks.acquire(file, { wait, intent: 'waiting to edit (AGENT_LOCK_HOOK_WAIT)' });
      if (waited.status === 'acquired' || waited.status === 'already_mine') {
        const mine = waited.status === 'acquired' ? waited.locks : [];
        for (const lock of mine) await locks.release(lock.scope, lock.token ? { token: lock.token } : {});
        return allow(`allowed: ${shown} came free while waiting (AGENT_LOCK_HOOK_WAIT)`, {
          file: shown,
          agent,
        });
      }
      if (waited.conflicts.length > 0) conflicts = waited.conflicts;
    }
    const reason = [
      `agent-lock: ${shown} is locked by another agent: ${conflicts.map(holderLine).join('; ')}${wait > 0 ? ` (still, after waiting ${wait}s)` : ''}.`,
      `You are ${agent.agentId}. Do not edit it: work on something else, check again later (${cli.name} check ${shellQuote(shown)}), or ask its holder with: ${cli.name} ask ${shellQuote(shown)} "..."`,
      ...(outcome.mail === true ? mailLines(await locks.takeMail(), cli.name) : []),
    ].join(' ');
    return deny(reason, { file: shown, agent }, conflicts);
  } finally {
    await locks.close().catch(() => {});
  }
}

/** The longest AGENT_LOCK_HOOK_WAIT: harnesses end a hook after a minute or so (Claude Code: 60 s). */
const MAX_HOOK_WAIT = 600;

/** AGENT_LOCK_HOOK_WAIT in seconds (0: refuse at once, the default), or the bad value. */
function hookWait(env: Env): number | { invalid: string } {
  const value = nonEmpty(env.AGENT_LOCK_HOOK_WAIT);
  if (value === undefined) return 0;
  const seconds = Number(value);
  return /^\d+(\.\d+)?$/.test(value) && seconds <= MAX_HOOK_WAIT ? seconds : { invalid: value };
}
