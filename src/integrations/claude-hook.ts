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
import type { Answer, CliContext } from '../answers/answer.js';
import type { Lock } from '../core/lock.js';
import type { PreToolUsePayload } from './claude-payload.js';

export type { PreToolUsePayload } from './claude-payload.js';
import {
  badSettingDecision,
  callBase,
  callerAgent,
  checkFiles,
  couldNotDecide,
  deny,
  type HookAgent,
  type HookDecision,
  shellQuote,
} from './hook-check.js';
import { checkShell } from './hook-shell.js';
import { notAStringReason } from './tool-call.js';
import { stampShell } from './trespass.js';
import { shellKey } from './trespass-hooks.js';

const EDIT_TOOLS = new Set(['Edit', 'Write', 'MultiEdit', 'NotebookEdit']);
export const HOOKED_TOOLS = ['Bash', 'PowerShell', ...EDIT_TOOLS] as const;

/**
 * The payload as PayloadSchema reads it, when it is plainly well formed (as every call from Claude
 * Code is), else null: zod, loaded only then, reads it and says what is wrong. Anything unusual (a
 * `__proto__` key, an object of another kind) is left to zod too.
 */
export function plainPayload(value: unknown): PreToolUsePayload | null {
  if (!isPlainObject(value) || Object.hasOwn(value, '__proto__')) return null;
  const { session_id, tool_name, tool_input } = value;
  if (typeof session_id !== 'string' || session_id.trim() === '') return null;
  if (typeof tool_name !== 'string' || tool_name.length === 0) return null;
  if (tool_input !== undefined && (!isPlainObject(tool_input) || Object.hasOwn(tool_input, '__proto__'))) {
    return null;
  }
  for (const key of ['cwd', 'hook_event_name', 'agent_id', 'agent_type']) {
    if (value[key] !== undefined && typeof value[key] !== 'string') return null;
  }
  return {
    ...value,
    session_id: session_id.trim(),
    tool_name,
    tool_input: tool_input === undefined ? {} : { ...tool_input },
  } as PreToolUsePayload;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

type Env = Readonly<Record<string, string | undefined>>;

/**
 * Who makes this tool call. The main agent is what `alock` itself would resolve in its session
 * (AGENT_ID, else `claude-<8 of session id>`, as for CLAUDE_CODE_SESSION_ID); a sub-agent is
 * `<main>-<8 of its agent id>` with the main agent as its parent.
 */
export function hookAgent(payload: PreToolUsePayload, env: Env): HookAgent {
  return callerAgent(
    { harness: 'claude', sessionId: payload.session_id, subAgentId: payload.agent_id },
    env,
    () => {
      // The schema demands a session id, so this is never reached.
      throw new Error('a Claude Code payload always names its session');
    },
  );
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
export function withAgentId(command: string, agent: HookAgent, sayNoParent = false): string | null {
  if (!NEEDS_IDENTITY.test(command) || SETS_AGENT_ID.test(command)) return null;
  // `none` where the hook knows of no parent: else alock would take the harness process for one.
  const none = sayNoParent ? ' AGENT_PARENT_ID=none' : '';
  const parent = agent.parentAgentId ? ` AGENT_PARENT_ID=${shellQuote(agent.parentAgentId)}` : none;
  return `export AGENT_ID=${shellQuote(agent.agentId)}${parent}; ${command}`;
}

function hookAnswer(
  status: 'allowed' | 'denied',
  output: Record<string, unknown> | null,
  message: string,
  extra: Record<string, unknown>,
  conflicts: readonly Lock[] = [],
): Answer {
  return {
    command: 'hooks',
    status,
    exitCode: 0,
    locks: [],
    conflicts: [...conflicts],
    message,
    text: [message],
    extra: { hook: extra },
    raw: { stdout: output === null ? '' : `${JSON.stringify(output)}\n` },
  };
}

/** The shared decision in Claude Code's words: a deny with its reason, a note, or silence. */
function claudeAnswer(decision: HookDecision): Answer {
  if (decision.kind === 'deny') {
    return hookAnswer(
      'denied',
      {
        hookSpecificOutput: {
          hookEventName: 'PreToolUse',
          permissionDecision: 'deny',
          permissionDecisionReason: decision.reason,
        },
      },
      decision.reason,
      decision.extra,
      decision.conflicts,
    );
  }
  const output: Record<string, unknown> = {};
  if (decision.note) output.systemMessage = decision.note;
  if (decision.context?.length) {
    output.hookSpecificOutput = {
      hookEventName: 'PreToolUse',
      additionalContext: decision.context.join('\n'),
    };
  }
  return hookAnswer('allowed', Object.keys(output).length ? output : null, decision.message, decision.extra);
}

function failed(cli: CliContext, what: string): Answer {
  return claudeAnswer(couldNotDecide(cli.io.env, what));
}

export async function claudePreToolUse(cli: CliContext): Promise<Answer> {
  let payload: PreToolUsePayload;
  try {
    if (!cli.io.stdin) return failed(cli, 'no hook payload on stdin');
    const text = await cli.io.stdin();
    const value: unknown = JSON.parse(text);
    const plain = plainPayload(value);
    const parsed =
      plain === null
        ? (await import('./claude-payload.js')).PayloadSchema.safeParse(value)
        : ({ success: true, data: plain } as const);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      return failed(
        cli,
        `the hook payload is not a PreToolUse payload (${issue ? `${issue.path.map(String).join('.') || 'payload'}: ${issue.message}` : 'invalid'})`,
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
  const badDecision = badSettingDecision(cli.io.env);
  const badSetting = badDecision === null ? null : claudeAnswer(badDecision);
  try {
    const base = callBase(cli, payload.cwd);
    if (payload.tool_name === 'Bash' || payload.tool_name === 'PowerShell') {
      const command = payload.tool_input.command;
      // Not a string: no shell runs it as it stands, and nothing in it can be checked.
      if (typeof command !== 'string') {
        return claudeAnswer(deny(notAStringReason(payload.tool_name, command), { error: 'command' }));
      }
      if (command.trim() === '') return hookAnswer('allowed', null, 'allowed: command left as is', {});
      if (payload.tool_name === 'PowerShell') {
        // Loaded only for PowerShell calls; its identity is not rewritten (no `export` there).
        const { checkPowerShell } = await import('./powershell-writes.js');
        const decision = await checkPowerShell(
          cli,
          command,
          base,
          () => hookAgent(payload, cli.io.env),
          'PowerShell',
        );
        if (decision.kind === 'deny') return badSetting ?? claudeAnswer(decision);
        return claudeAnswer(decision);
      }
      // A command that visibly writes a file another agent holds is refused, as an Edit would be.
      const writes = await checkShell(cli, command, base, () => hookAgent(payload, cli.io.env), 'Bash');
      if (writes.kind === 'deny') return badSetting ?? claudeAnswer(writes);
      // What no parser sees is caught after the fact: the held files are stamped for the post hook.
      await stampShell(cli, {
        key: shellKey('claude', payload, command),
        command,
        base,
        agent: () => hookAgent(payload, cli.io.env),
      });
      // A command that cannot take or check a lock needs no identity: it goes as it is.
      if (!NEEDS_IDENTITY.test(command)) return claudeAnswer(writes);
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
      const input = payload.tool_input;
      const raw = typeof input.file_path === 'string' ? input.file_path : input.notebook_path;
      if (typeof raw !== 'string' || raw.trim() === '') {
        return failed(cli, `${payload.tool_name} names no file_path or notebook_path`);
      }
      return claudeAnswer(
        await checkFiles(cli, [raw], hookAgent(payload, cli.io.env), base, payload.tool_name),
      );
    }
    return hookAnswer('allowed', null, `allowed: ${payload.tool_name} is not checked`, {});
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return failed(cli, message);
  }
}
