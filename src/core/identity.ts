import { AgentLockError } from './errors.js';
import type { Holder } from './lock.js';
import { sha256Hex } from './sha256.js';

/** One process of the ancestor chain, as the host reports it. */
export interface ProcessFacts {
  readonly pid: number;
  readonly started: string;
  /** Command name: the executable's base name, or the script's for interpreters. */
  readonly name: string;
  readonly user: string;
}

export type IdSource =
  | 'AGENT_ID'
  | 'CLAUDE_CODE_SESSION_ID'
  | 'CLAUDE_SESSION_ID'
  | 'CODEX_THREAD_ID'
  | 'GEMINI_SESSION_ID'
  | 'GEMINI_CLI'
  | 'COPILOT_AGENT_SESSION_ID'
  | 'OPENCODE_SESSION_ID'
  | 'process'
  | 'option';
export type ParentSource =
  | 'AGENT_PARENT_ID'
  | 'OPENCODE_PARENT_SESSION_ID'
  | 'without AGENT_ID'
  | 'none'
  | 'option';

export interface Identity {
  readonly agentId: string;
  readonly parentAgentId: string | null;
  readonly idSource: IdSource;
  readonly parentSource: ParentSource;
  /** The process whose life keeps this agent's locks. */
  readonly holder: Holder;
  /** The process that `holder` was chosen as (for `whoami`). */
  readonly holderName: string;
  readonly warnings: readonly string[];
}

const SHELLS = new Set([
  'sh',
  'bash',
  'zsh',
  'fish',
  'dash',
  'ksh',
  'mksh',
  'tcsh',
  'csh',
  'ash',
  'busybox',
  'nu',
]);
const LAUNCHERS = new Set([
  'npx',
  'npm',
  'npm-exec',
  'pnpm',
  'pnpx',
  'yarn',
  'bunx',
  'env',
  'timeout',
  'nice',
  'sudo',
  'doas',
  // Wrappers that wait for the command they start and exit with it: `/usr/bin/time alock acquire x`
  // made `time` the holder, and the lock vanished as soon as alock returned.
  'time',
  'nohup',
  'stdbuf',
  'ionice',
  'chrt',
  'taskset',
]);

/**
 * Processes that outlive the commands they run: an agent harness, a terminal, a multiplexer, an
 * editor or an ssh session. A lock held by any other process (make, a script, a test runner) ends
 * when that process does, often right after the acquire: the answer then names it.
 */
const LONG_LIVED = new Set([
  'claude',
  'codex',
  'gemini',
  'cursor',
  'cursor-agent',
  'opencode',
  'copilot',
  'cline',
  'aider',
  'goose',
  'amp',
  'code',
  'code-server',
  'tmux',
  'tmux: server',
  'screen',
  'zellij',
  'sshd',
  'login',
  'su',
  'systemd',
  'init',
  'gnome-terminal-server',
  'konsole',
  'xterm',
  'alacritty',
  'kitty',
  'wezterm-gui',
  'iterm2',
  'terminal',
  'emacs',
  'vim',
  'nvim',
]);

/** Whether a holder process is one that outlives the commands it starts (see LONG_LIVED). */
export function isLongLived(name: string): boolean {
  const base = name.replace(/^-/, '').toLowerCase();
  return LONG_LIVED.has(base) || isPassThrough(base);
}

/** A shell or a short-lived launcher never holds a lock: the process above it does. */
export function isPassThrough(name: string): boolean {
  const base = name.replace(/^-/, '').toLowerCase();
  return SHELLS.has(base) || LAUNCHERS.has(base);
}

const ID_PATTERN = /^[^\s\p{C}]{1,200}$/u;

/**
 * Ids no agent may take: `<unknown>` is what an unreadable record is shown as (a healthy lock under
 * it would be advised for repair), and `none` is how AGENT_PARENT_ID says "no parent".
 */
const RESERVED_IDS = new Set(['<unknown>', 'none']);

export function validateAgentId(value: string, variable: string): string {
  if (RESERVED_IDS.has(value.toLowerCase())) {
    throw new AgentLockError('E_ENV_INVALID', `${variable} ${JSON.stringify(value)} is reserved`, {
      hint: `set ${variable} to a short name such as claude-1, or unset it`,
    });
  }
  if (!ID_PATTERN.test(value)) {
    throw new AgentLockError(
      'E_ENV_INVALID',
      `${variable} must be 1 to 200 printable characters without whitespace (got ${JSON.stringify(value)})`,
      { hint: `set ${variable} to a short name such as claude-1, or unset it` },
    );
  }
  return value;
}

function shortHash(text: string): string {
  return sha256Hex(text).slice(0, 8);
}

function slug(name: string): string {
  const cleaned = name.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^-+|-+$/g, '');
  return (cleaned || 'proc').slice(0, 40);
}

export function fingerprint(proc: ProcessFacts, host: string): string {
  return `${slug(proc.name)}-${shortHash(`${proc.pid}|${proc.started}|${proc.user}|${host}`)}`;
}

/** The first process of the chain that is neither a shell nor a launcher (else the last one). */
export function holderProcess(chain: readonly ProcessFacts[]): ProcessFacts {
  const found = chain.find((proc) => !isPassThrough(proc.name)) ?? chain[chain.length - 1];
  if (found === undefined) throw new AgentLockError('E_INTERNAL', 'no process to hold the lock');
  return found;
}

type Env = Readonly<Record<string, string | undefined>>;

/**
 * `<prefix>-<8 characters>` for a session id, the id alock and every harness hook derive from an
 * agent session, or null when that is no valid id (`codex-x y`): it must be as valid as an AGENT_ID
 * would have to be.
 *
 * A random UUID (version 4: Claude Code, Gemini CLI, Cursor, Copilot) keeps its first 8 hex digits:
 * readable in `alock list`, and as unlikely to be shared as a hash. Every other id is named by 8 hex
 * of a sha256 of the whole id, because many are time-ordered and share their first characters
 * across sessions started near each other: Codex's UUIDv7 thread ids (~65 s), OpenCode's `ses_` +
 * time (~15 min), Cline's millisecond task ids. Two sessions must never become one agent.
 */
export function sessionAgentId(prefix: string, sessionId: string): string | null {
  if (/[\s\p{C}]/u.test(sessionId)) return null;
  const head = RANDOM_UUID.test(sessionId) ? sessionId.slice(0, 8).toLowerCase() : shortHash(sessionId);
  const id = `${prefix}-${head}`;
  return ID_PATTERN.test(id) ? id : null;
}

const RANDOM_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Eight characters of a sub-agent id: its own when it is random hex (readable in `alock list`),
 * else a hash, so that ids sharing a prefix (`agent_0001`, `agent_0002`) never collapse into one.
 */
export function subAgentHead(agentId: string): string {
  const bare = agentId.replace(/^agent[-_]/i, '');
  if (/^[0-9a-f]{8,}$/i.test(bare)) return bare.slice(0, 8).toLowerCase();
  return shortHash(agentId);
}

/**
 * `<harness>-<8 hex>` of the harness process: the id both doors give an agent of a harness whose
 * shell commands get no session id (Gemini CLI). Its hook and its shell's `alock` both
 * descend from that process (the first ancestor that is neither a shell nor a launcher), so both
 * name it alike; every session that one process runs is then one agent.
 */
export function processAgentId(harness: string, holder: Holder): string {
  return `${harness}-${shortHash(`${holder.pid}|${holder.started}|${holder.host}`)}`;
}

/**
 * The harness whose shell runs this command, by a variable it sets for its shell commands, when
 * that harness gives them no session id: its agents are named by the harness process. Gemini CLI
 * sets GEMINI_CLI=1 for shell commands and GEMINI_SESSION_ID for hooks only (0.61). Not Cline CLI
 * 3.0: a hub daemon of one workspace runs the hooks and commands of every task started there, so
 * its process is no agent (its hook exports the id into the commands instead: cline-identity.ts).
 */
export function processNamedHarness(env: Env): { harness: string; source: IdSource } | null {
  const set = (k: string) => (env[k] ?? '').trim() !== '';
  if (set('GEMINI_CLI')) return { harness: 'gemini', source: 'GEMINI_CLI' };
  if (set('GEMINI_SESSION_ID')) return { harness: 'gemini', source: 'GEMINI_SESSION_ID' };
  return null;
}

/**
 * Whether a hook of `harness` names its agent by the harness process rather than by the payload's
 * session: Gemini CLI (its shell never sees the session).
 */
export function namedByProcess(harness: string): boolean {
  return harness === 'gemini';
}

interface Session {
  id: string;
  source: IdSource;
  /** A sub-agent's session: its main agent, the parent unless AGENT_PARENT_ID says otherwise. */
  main?: string;
}

function sessionId(env: Env): Session | null {
  const nonEmpty = (k: string) => {
    const v = env[k];
    return v !== undefined && v.trim() !== '' ? v.trim() : undefined;
  };
  const derived = (prefix: string, source: IdSource, value: string) => {
    const id = sessionAgentId(prefix, value);
    if (id === null) {
      throw new AgentLockError(
        'E_ENV_INVALID',
        `${source} ${JSON.stringify(value)} makes no valid agent id`,
        {
          hint: 'set AGENT_ID, or unset the variable',
        },
      );
    }
    return { id, source };
  };
  const claude = nonEmpty('CLAUDE_CODE_SESSION_ID');
  if (claude) return derived('claude', 'CLAUDE_CODE_SESSION_ID', claude);
  const claudeOld = nonEmpty('CLAUDE_SESSION_ID');
  if (claudeOld) return derived('claude', 'CLAUDE_SESSION_ID', claudeOld);
  const codex = nonEmpty('CODEX_THREAD_ID');
  if (codex) return derived('codex', 'CODEX_THREAD_ID', codex);
  // GitHub Copilot CLI exports it to the shell commands and MCP servers it starts (1.0.x); its hook
  // payload names the same session (sessionId).
  const copilot = nonEmpty('COPILOT_AGENT_SESSION_ID');
  if (copilot) return derived('copilot', 'COPILOT_AGENT_SESSION_ID', copilot);
  // OpenCode exports no session to its shell; our plugin does (its shell.env hook), with the parent
  // session of a sub-agent's, so the shell names the agent as the plugin's payload does.
  const opencode = nonEmpty('OPENCODE_SESSION_ID');
  if (opencode) {
    const parent = nonEmpty('OPENCODE_PARENT_SESSION_ID');
    if (parent === undefined) return derived('opencode', 'OPENCODE_SESSION_ID', opencode);
    const main = derived('opencode', 'OPENCODE_SESSION_ID', parent).id;
    return { id: `${main}-${subAgentHead(opencode)}`, source: 'OPENCODE_SESSION_ID', main };
  }
  return null;
}

/** `AGENT_PARENT_ID` set and empty, or `none`: the caller says it has no parent (no inference). */
export function saysNoParent(value: string | undefined): boolean {
  if (value === undefined) return false;
  const text = value.trim();
  return text === '' || text.toLowerCase() === 'none';
}

/**
 * Who is asking, by the contract's precedence: AGENT_ID, then the agent session variables, then a
 * fingerprint of the first ancestor that is neither a shell nor a launcher.
 */
export function resolveIdentity(env: Env, chain: readonly ProcessFacts[], host: string): Identity {
  const proc = holderProcess(chain);
  const holder: Holder = { host, pid: proc.pid, started: proc.started };
  const named = processNamedHarness(env);
  const session: Session | null =
    sessionId(env) ??
    (named === null ? null : { id: processAgentId(named.harness, holder), source: named.source });
  const natural = session ?? { id: fingerprint(proc, host), source: 'process' as const };
  const warnings: string[] = [];

  const explicit = env.AGENT_ID?.trim();
  const agentId = explicit ? validateAgentId(explicit, 'AGENT_ID') : natural.id;
  const idSource: IdSource = explicit ? 'AGENT_ID' : natural.source;

  let parentAgentId: string | null = null;
  let parentSource: ParentSource = 'none';
  const parentVar = env.AGENT_PARENT_ID?.trim();
  if (saysNoParent(env.AGENT_PARENT_ID)) {
    // Said outright: no parent, and no inference from the calling process either.
    parentSource = 'AGENT_PARENT_ID';
  } else if (parentVar) {
    parentAgentId = validateAgentId(parentVar, 'AGENT_PARENT_ID');
    parentSource = 'AGENT_PARENT_ID';
  } else if (!explicit && session?.main !== undefined) {
    // An OpenCode sub-agent's shell: the child of its main session, as its hook names it.
    parentAgentId = session.main;
    parentSource = 'OPENCODE_PARENT_SESSION_ID';
  } else if (explicit && natural.id !== agentId) {
    parentAgentId = natural.id;
    parentSource = 'without AGENT_ID';
  }
  if (parentAgentId === agentId) {
    // An agent cannot be its own parent: a typo that would silently drop every family rule.
    throw new AgentLockError('E_ENV_INVALID', `AGENT_PARENT_ID equals AGENT_ID (${agentId})`, {
      hint: 'set AGENT_PARENT_ID to the parent agent, or to none',
    });
  }
  if (!explicit && session && session.main === undefined) {
    warnings.push(
      `every sub-agent of this ${session.source} session shares the id ${agentId}: set AGENT_ID for each sub-agent so their locks keep them apart`,
    );
  }
  return { agentId, parentAgentId, idSource, parentSource, holder, holderName: proc.name, warnings };
}
