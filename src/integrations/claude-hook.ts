/**
 * The Claude Code PreToolUse hook (`alock hooks claude-pre-tool-use`). Claude Code pipes one JSON
 * payload on stdin and reads one JSON answer on stdout:
 *
 * - Edit, Write, MultiEdit, NotebookEdit on a file another agent holds: `permissionDecision: deny`,
 *   with a reason naming the holder and intent (Claude reads it and works elsewhere). Otherwise no
 *   output: the normal permission flow goes on (an explicit `allow` would skip the user's prompts).
 * - Bash: the command is rewritten (`updatedInput`, no decision, so prompts still apply) to export the
 *   AGENT_ID of the agent that runs it, so each sub-agent's `alock` calls carry its own identity.
 * - A payload it cannot read, or a store it cannot open: AGENT_LOCK_HOOK_ON_ERROR=deny (default) or
 *   allow. Whatever happens, the answer is JSON and exit 0, never a stack.
 */
import { createHash } from 'node:crypto';
import { statSync } from 'node:fs';
import path from 'node:path';
import * as z from 'zod';
import type { Answer, CliContext } from '../cli/answer.js';
import { AgentLockError, isAgentLockError } from '../core/errors.js';
import { sessionAgentId, validateAgentId } from '../core/identity.js';
import type { Lock } from '../core/lock.js';
import { warningsForAgent } from '../core/worktrees.js';
import { findTree } from '../host/tree.js';
import { openLocks } from '../locks.js';

const EDIT_TOOLS = new Set(['Edit', 'Write', 'MultiEdit', 'NotebookEdit']);
export const HOOKED_TOOLS = ['Bash', ...EDIT_TOOLS] as const;

/** The fields this hook reads; Claude Code sends more (transcript_path, permission_mode, ...). */
const PayloadSchema = z
  .object({
    session_id: z.string().trim().min(1),
    tool_name: z.string().min(1),
    tool_input: z.record(z.string(), z.unknown()).default({}),
    cwd: z.string().optional(),
    hook_event_name: z.string().optional(),
    /** Present only when a sub-agent makes the call. */
    agent_id: z.string().optional(),
    agent_type: z.string().optional(),
  })
  .loose();
export type PreToolUsePayload = z.infer<typeof PayloadSchema>;

type Env = Readonly<Record<string, string | undefined>>;

export interface HookAgent {
  readonly agentId: string;
  readonly parentAgentId: string | null;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value !== undefined && value.trim() !== '' ? value.trim() : undefined;
}

/**
 * Eight characters of a sub-agent id: its own when it is random hex (readable in `alock list`),
 * else a hash, so that ids sharing a prefix (`agent_0001`, `agent_0002`) never collapse into one.
 */
function shortAgent(agentId: string): string {
  const bare = agentId.replace(/^agent[-_]/i, '');
  if (/^[0-9a-f]{8,}$/i.test(bare)) return bare.slice(0, 8).toLowerCase();
  return createHash('sha256').update(agentId).digest('hex').slice(0, 8);
}

/** The main agent's id from the payload's session id; the user's way out of a bad one is AGENT_ID. */
function mainFromSession(sessionId: string): string {
  const id = sessionAgentId('claude', sessionId);
  if (id !== null) return id;
  throw new AgentLockError(
    'E_ENV_INVALID',
    `the session id ${JSON.stringify(sessionId)} makes no valid agent id`,
    {
      hint: 'set AGENT_ID for this session',
    },
  );
}

/**
 * Who makes this tool call. The main agent is what `alock` itself would resolve in its session
 * (AGENT_ID, else `claude-<8 of session id>`, as for CLAUDE_CODE_SESSION_ID); a sub-agent is
 * `<main>-<8 of its agent id>` with the main agent as its parent.
 */
export function hookAgent(payload: PreToolUsePayload, env: Env): HookAgent {
  // Ids as valid as alock itself would demand: an id the hook exports into a shell command must not
  // make every alock and git call in it fail, nor pass where an edit would be refused.
  const fromEnv = nonEmpty(env.AGENT_ID);
  const main =
    fromEnv !== undefined ? validateAgentId(fromEnv, 'AGENT_ID') : mainFromSession(payload.session_id);
  const sub = nonEmpty(payload.agent_id);
  if (sub === undefined) {
    const parent = nonEmpty(env.AGENT_PARENT_ID);
    return {
      agentId: main,
      parentAgentId: parent === undefined ? null : validateAgentId(parent, 'AGENT_PARENT_ID'),
    };
  }
  return { agentId: `${main}-${shortAgent(sub)}`, parentAgentId: main };
}

function shellQuote(text: string): string {
  return /^[A-Za-z0-9@%+=:,./_-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}

/** Already names an agent (`AGENT_ID=x cmd`, `export AGENT_ID=x; ...`): the agent's choice stands. */
const SETS_AGENT_ID = /(^|[^A-Za-z0-9_])(export\s+)?AGENT_ID=\S/;
/**
 * Only commands that can take or check a lock need the identity: `alock`, `agent-lock`, and `git`
 * (its pre-commit guard). Claude Code matches permission rules against the rewritten command, so
 * rewriting every command would make allowlisted ones prompt again.
 */
const NEEDS_IDENTITY = /(^|[\s;&|(`/$])(alock|agent-lock|git)(\s|$|;|&|\|)/;

/**
 * The command with the agent's identity exported in front, or null when it sets AGENT_ID itself.
 * `export ...;` rather than a `VAR=x cmd` prefix: a prefix reaches only the first simple command,
 * and `cd sub && alock acquire x` would then claim as the parent.
 */
export function withAgentId(command: string, agent: HookAgent): string | null {
  if (!NEEDS_IDENTITY.test(command) || SETS_AGENT_ID.test(command)) return null;
  const parent = agent.parentAgentId ? ` AGENT_PARENT_ID=${shellQuote(agent.parentAgentId)}` : '';
  return `export AGENT_ID=${shellQuote(agent.agentId)}${parent}; ${command}`;
}

type OnError = 'allow' | 'deny';

function onErrorSetting(env: Env): OnError | { invalid: string } {
  const value = nonEmpty(env.AGENT_LOCK_HOOK_ON_ERROR);
  if (value === undefined) return 'deny';
  if (value === 'allow' || value === 'deny') return value;
  return { invalid: value };
}

function hookAnswer(
  status: 'allowed' | 'denied',
  output: Record<string, unknown> | null,
  message: string,
  extra: Record<string, unknown>,
  conflicts: Lock[] = [],
): Answer {
  return {
    command: 'hooks',
    status,
    exitCode: 0,
    locks: [],
    conflicts,
    message,
    text: [message],
    extra: { hook: extra },
    raw: { stdout: output === null ? '' : `${JSON.stringify(output)}\n` },
  };
}

function deny(reason: string, extra: Record<string, unknown>, conflicts: Lock[] = []): Answer {
  return hookAnswer(
    'denied',
    {
      hookSpecificOutput: {
        hookEventName: 'PreToolUse',
        permissionDecision: 'deny',
        permissionDecisionReason: reason,
      },
    },
    reason,
    extra,
    conflicts,
  );
}

/** The hook could not decide: the explicit setting says whether the tool call goes through. */
function failed(cli: CliContext, what: string): Answer {
  const setting = onErrorSetting(cli.io.env);
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
  return hookAnswer('allowed', { systemMessage: message }, message, { error: what, on_error: 'allow' });
}

function isDirectory(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

function nearestExisting(p: string): string {
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

function holderLine(lock: Lock): string {
  const parent = lock.parent_agent_id ? ` (sub-agent of ${lock.parent_agent_id})` : '';
  const intent = lock.intent ? `, intent "${lock.intent}"` : '';
  return `${lock.agent_id}${parent} holds ${lock.scope}${intent}`;
}

async function checkEdit(
  cli: CliContext,
  payload: PreToolUsePayload,
  agent: HookAgent,
  base: string,
): Promise<Answer> {
  const input = payload.tool_input;
  const raw = typeof input.file_path === 'string' ? input.file_path : input.notebook_path;
  if (typeof raw !== 'string' || raw.trim() === '') {
    return failed(cli, `${payload.tool_name} names no file_path or notebook_path`);
  }
  const file = path.resolve(base, raw);
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
  if (dirs.length === 0) {
    return hookAnswer('allowed', null, `allowed: ${file} is outside every tree`, { file, agent });
  }
  let allowed: Answer | null = null;
  for (const dir of dirs) {
    const answer = await checkEditIn(cli, dir, file, agent);
    if (answer.status === 'denied') return answer;
    allowed ??= answer;
  }
  return allowed!;
}

/** Asks the store of the tree around `dir` whether another agent holds `file`. */
async function checkEditIn(cli: CliContext, dir: string, file: string, agent: HookAgent): Promise<Answer> {
  const backend = cli.globals().backend;
  const locks = await openLocks({
    dir,
    env: cli.io.env,
    identity: { agentId: agent.agentId, parentAgentId: agent.parentAgentId },
    ...(backend === 'file' || backend === 'redis' ? { backend } : {}),
  });
  try {
    let outcome: Awaited<ReturnType<typeof locks.check>>;
    try {
      outcome = await locks.check(file);
    } catch (error) {
      if (isAgentLockError(error) && error.code === 'E_SCOPE_OUTSIDE_TREE') {
        return hookAnswer('allowed', null, `allowed: ${file} is outside the tree`, { file, agent });
      }
      throw error;
    }
    const shown = path.relative(locks.tree.root, file) || file;
    if (outcome.status === 'other_worktree') {
      const reason = `${warningsForAgent(outcome.warnings)} AGENT_LOCK_WORKTREES=block: do not edit ${shown} here; work on something else, or ask its holder to merge first.`;
      return deny(reason, { file: shown, agent }, outcome.conflicts);
    }
    if (outcome.status !== 'held') {
      // Another worktree's lock on this path: go on, but the agent is told (added context, no decision,
      // so the user's permission prompts still apply).
      const context = warningsForAgent(outcome.warnings);
      return hookAnswer(
        'allowed',
        context === null
          ? null
          : { hookSpecificOutput: { hookEventName: 'PreToolUse', additionalContext: context } },
        `allowed: ${shown} is ${outcome.status} for ${agent.agentId}`,
        { file: shown, agent, ...(context === null ? {} : { warnings: outcome.warnings }) },
      );
    }
    const reason = [
      `agent-lock: ${shown} is locked by another agent: ${outcome.conflicts.map(holderLine).join('; ')}.`,
      `You are ${agent.agentId}. Do not edit it: work on something else, ask its holder, or check again later (${cli.name} check ${shellQuote(shown)}).`,
    ].join(' ');
    return deny(reason, { file: shown, agent }, outcome.conflicts);
  } finally {
    await locks.close().catch(() => {});
  }
}

export async function claudePreToolUse(cli: CliContext): Promise<Answer> {
  let payload: PreToolUsePayload;
  try {
    if (!cli.io.stdin) return failed(cli, 'no hook payload on stdin');
    const text = await cli.io.stdin();
    const parsed = PayloadSchema.safeParse(JSON.parse(text));
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      return failed(
        cli,
        `the hook payload is not a PreToolUse payload (${issue ? `${issue.path.join('.') || 'payload'}: ${issue.message}` : 'invalid'})`,
      );
    }
    payload = parsed.data;
  } catch (error) {
    return failed(cli, `the hook payload is not JSON (${error instanceof Error ? error.message : error})`);
  }
  if (payload.hook_event_name !== undefined && payload.hook_event_name !== 'PreToolUse') {
    return hookAnswer('allowed', null, `allowed: ${payload.hook_event_name} is not handled`, {});
  }
  // A bad value is an error, never a silent default, also when nothing else goes wrong: every call
  // the hook would decide is refused until it is fixed (commands that take no lock still go).
  const setting = onErrorSetting(cli.io.env);
  const badSetting =
    typeof setting === 'object'
      ? deny(
          `agent-lock: AGENT_LOCK_HOOK_ON_ERROR must be allow or deny (got ${JSON.stringify(setting.invalid)}); fix or unset it`,
          { error: 'AGENT_LOCK_HOOK_ON_ERROR' },
        )
      : null;
  try {
    const base =
      payload.cwd && path.isAbsolute(payload.cwd) && isDirectory(payload.cwd) ? payload.cwd : cli.io.cwd;
    if (payload.tool_name === 'Bash') {
      const command = payload.tool_input.command;
      // A command that cannot take or check a lock needs no identity: it goes as it is.
      if (typeof command !== 'string' || command.trim() === '' || !NEEDS_IDENTITY.test(command)) {
        return hookAnswer('allowed', null, 'allowed: command left as is', {});
      }
      if (badSetting) return badSetting;
      const agent = hookAgent(payload, cli.io.env);
      const rewritten = withAgentId(command, agent);
      if (rewritten === null) {
        return hookAnswer('allowed', null, `allowed: command left as is (${agent.agentId})`, { agent });
      }
      return hookAnswer(
        'allowed',
        {
          hookSpecificOutput: {
            hookEventName: 'PreToolUse',
            updatedInput: { ...payload.tool_input, command: rewritten },
          },
        },
        `allowed: command runs as ${agent.agentId}`,
        { agent, command: rewritten },
      );
    }
    if (EDIT_TOOLS.has(payload.tool_name)) {
      if (badSetting) return badSetting;
      return await checkEdit(cli, payload, hookAgent(payload, cli.io.env), base);
    }
    return hookAnswer('allowed', null, `allowed: ${payload.tool_name} is not checked`, {});
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return failed(cli, message);
  }
}
