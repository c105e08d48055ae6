/**
 * The shell half of the pre-tool-use check: which files a shell command writes (the light reader
 * first, the full grammar only when needed), whether another agent holds any of them, and what to
 * do with a command that cannot be read. hook-check.ts decides the files themselves.
 */
import path from 'node:path';
import type { CliContext } from '../answers/answer.js';
import type { Lock } from '../core/lock.js';
import { resolveAsFileSystem } from '../core/scope.js';
import { findTree, fsProbe } from '../host/tree.js';
import { openLocks } from '../locks.js';
import {
  allow,
  checkFiles,
  claimSetting,
  deny,
  type HookAgent,
  type HookDecision,
  holderLine,
  isDirectory,
  nearestExisting,
  nonEmpty,
  type OnError,
  shellQuote,
} from './hook-check.js';
import { pathMeetsScope, wordsReach } from './shell-reach.js';
import { lightShellWrites, type ShellWrites, shellWriteTargets } from './shell-writes.js';

type Env = Readonly<Record<string, string | undefined>>;

type UnparsedPolicy = OnError | 'unset';

export function unparsedSetting(env: Env): UnparsedPolicy | { invalid: string } {
  const value = nonEmpty(env.AGENT_LOCK_HOOK_SHELL_UNPARSED);
  if (value === undefined) return 'unset';
  if (value === 'allow' || value === 'deny') return value;
  return { invalid: value };
}

/**
 * A command nobody could read, as AGENT_LOCK_HOOK_SHELL_UNPARSED says: a bad value and `deny`
 * refuse it (`what`: what could not be read, `instead`: what to do); otherwise null, and the
 * caller decides. `unreadNote` is the note it goes through with.
 */
export function unparsedRefusal(policy: UnparsedPolicy | { invalid: string }, what: string, instead: string) {
  if (typeof policy === 'object') {
    return deny(
      `agent-lock: AGENT_LOCK_HOOK_SHELL_UNPARSED must be allow or deny (got ${JSON.stringify(policy.invalid)}); fix or unset it`,
      { error: 'AGENT_LOCK_HOOK_SHELL_UNPARSED' },
    );
  }
  if (policy === 'deny') {
    return deny(
      `agent-lock could not ${what}, so it cannot tell which files it writes; refused because AGENT_LOCK_HOOK_SHELL_UNPARSED=deny. ${instead}`,
      { shell: 'unparsed' },
    );
  }
  return null;
}

export function unreadNote(what: string): HookDecision {
  const note = `agent-lock could not ${what}; it was not checked for writes to locked files`;
  return { kind: 'allow', message: note, note, extra: { shell: 'unparsed' } };
}

/**
 * May a shell command go without its write targets read when nothing another agent holds could be
 * among them? The one place that says so: a claim on edit needs every target, held or not, and
 * turns this off while claims are on.
 */
export function shellSkipsWhenNothingHeld(env: Env, tool?: string): boolean {
  // `tool` names the harness's shell tool when the call may claim; a bad setting is no "off" (the
  // check of the files says what is wrong with it).
  return tool === undefined || claimSetting(env) === null;
}

/** What other agents hold in the tree around `base`, as one cached check of the whole tree. */
interface HeldInTree {
  readonly root: string;
  readonly locks: readonly Lock[];
  /** A lock in another worktree warns: every target is then checked, so that the warning is told. */
  readonly warned: boolean;
}

async function heldInTree(cli: CliContext, base: string, agent: HookAgent): Promise<HeldInTree> {
  const backend = cli.globals().backend;
  const locks = await openLocks({
    dir: base,
    env: cli.io.env,
    identity: { agentId: agent.agentId, parentAgentId: agent.parentAgentId },
    ...(backend === 'file' || backend === 'redis' ? { backend } : {}),
  });
  try {
    const root = locks.tree.root;
    const outcome = await locks.check(path.join(root, '**'), { cached: true });
    return {
      root,
      locks: outcome.conflicts.filter((lock) => lock.kind === 'path'),
      warned: outcome.status === 'other_worktree' || (outcome.warnings?.length ?? 0) > 0,
    };
  } finally {
    await locks.close().catch(() => {});
  }
}

function inCheckout(absolute: string): boolean {
  try {
    return findTree(nearestExisting(path.dirname(absolute))).gitCommonDir !== null;
  } catch {
    return true;
  }
}

/**
 * A shell command: refused when it visibly writes a file another agent holds (shell-writes.ts).
 * The cheap steps come first: a command the light reader reads as writing nothing goes at once,
 * without a store; then the store says what other agents hold, and a command none of whose words
 * can reach any of that (shell-reach.ts) goes without the full shell grammar. A command that runs
 * code nothing here reads (`python3 -c`, a pipe into `bash`) is refused when a word of it names a
 * held file. A command the grammar cannot read is refused when a word of it names a held file, and
 * goes with a note otherwise; AGENT_LOCK_HOOK_SHELL_UNPARSED=deny refuses it always, =allow lets it
 * through always (with the note). `agent` is asked only when there is a file to check.
 */
export async function checkShell(
  cli: CliContext,
  command: string,
  base: string,
  agent: () => HookAgent,
  tool?: string,
): Promise<HookDecision> {
  const env = cli.io.env;
  const facts = { isDirectory, home: nonEmpty(env.HOME) };
  const light = await lightShellWrites(command, base, facts);
  if (light !== null && light.files.length === 0 && !light.opaque) {
    return allow('allowed: the command writes no file');
  }
  const policy = unparsedSetting(env);
  const who = agent();
  // What other agents hold is asked for only when a step needs it: with claims on, a command whose
  // targets are read is decided by checking (and claiming) each of them.
  let heldOnce: Promise<HeldInTree> | undefined;
  const heldNow = () => {
    heldOnce ??= heldInTree(cli, base, who);
    return heldOnce;
  };
  const reachFacts = {
    home: facts.home,
    isDirectory,
    nearestExisting,
    inCheckout,
    realpath: (p: string) => fsProbe.realpath(p),
  };
  let reachOnce: Promise<{ held: HeldInTree; reached: ReturnType<typeof wordsReach> }> | undefined;
  const reach = () => {
    reachOnce ??= heldNow().then((held) => {
      const scopes = held.locks.map((lock) => lock.scope);
      return { held, reached: wordsReach(command, base, held.root, scopes, reachFacts) };
    });
    return reachOnce;
  };
  const skips = shellSkipsWhenNothingHeld(env, tool);
  let writes: ShellWrites | null = light;
  if (writes === null) {
    // Under AGENT_LOCK_HOOK_SHELL_UNPARSED=deny (or a bad value) every command is read, to know
    // whether it can be.
    if (skips && (policy === 'unset' || policy === 'allow')) {
      const { held, reached } = await reach();
      if (!held.warned && reached.kind === 'none') {
        return allow('allowed: no word of the command reaches a file another agent holds');
      }
    }
    writes = await shellWriteTargets(command, base, facts);
  }
  if (writes.kind === 'unparsed') {
    const refused = unparsedRefusal(
      policy,
      'parse this shell command',
      'Write it in plainer shell, or edit files with the edit tool.',
    );
    if (refused !== null) return refused;
    if (policy === 'unset') {
      const { held, reached } = await reach();
      if (reached.kind === 'held') {
        return unreadDenial(cli, 'could not parse this shell command', reached, held, who);
      }
    }
    return unreadNote('parse this shell command');
  }
  if (writes.opaque) {
    const { held, reached } = await reach();
    if (reached.kind === 'held') {
      return unreadDenial(cli, 'cannot read the code this command runs', reached, held, who);
    }
  }
  let files = writes.files;
  if (skips) {
    const held = await heldNow();
    const scopes = held.locks.map((lock) => lock.scope);
    if (!held.warned) files = files.filter((file) => mayBeHeld(file, held.root, scopes));
  }
  if (files.length === 0) return allow('allowed: the command writes no file another agent holds');
  // A shell write claims what it writes, as an edit does (with `tool`: the harness's shell tool).
  return checkFiles(cli, files, who, base, tool);
}

/** Could `file` be one of `scopes` (a folder: something below it), or lie in another checkout? */
function mayBeHeld(file: string, root: string, scopes: readonly string[]): boolean {
  for (const absolute of new Set([file, resolveAsFileSystem('/', file, (p) => fsProbe.realpath(p))])) {
    const rel = path.relative(root, absolute);
    if (rel.startsWith('..') || path.isAbsolute(rel)) {
      if (!/^\/dev\//.test(absolute)) return true;
      continue;
    }
    if (scopes.some((scope) => pathMeetsScope(rel, scope, () => isDirectory(absolute)))) return true;
  }
  return false;
}

function unreadDenial(
  cli: CliContext,
  what: string,
  reached: { scope: string; word: string },
  held: HeldInTree,
  agent: HookAgent,
): HookDecision {
  const holders = held.locks.filter((lock) => lock.scope === reached.scope);
  const reason = [
    `agent-lock ${what}, and its word ${JSON.stringify(reached.word)} names ${reached.scope}, held by another agent: ${holders.map(holderLine).join('; ')}.`,
    `You are ${agent.agentId}. Do not write it: write other files with the edit tool, work on something else, check again later (${cli.name} check ${shellQuote(reached.scope)}), or ask its holder with: ${cli.name} ask ${shellQuote(reached.scope)} "..."`,
  ].join(' ');
  return deny(reason, { file: reached.scope, agent, shell: 'unread' }, holders);
}
