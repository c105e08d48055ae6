/**
 * The pre-tool-use hooks of the coding agents other than Claude Code (`alock hooks
 * <harness>-pre-tool-use`). Each harness is a small adapter: read its payload into a tool call (the
 * files an edit would write, the caller's session and sub-agent), take the one shared decision
 * (hook-check.ts), and word it the way that harness reads an answer. What each harness sends and
 * reads was taken from its own documentation or source; the README names the versions.
 */
// zod/mini: the hook runs on every tool call, and full zod would be half of its load time.
import path from 'node:path';
import * as z from 'zod/mini';
import type { Answer, CliContext } from '../answers/answer.js';
import { AgentLockError } from '../core/errors.js';
import {
  allow,
  badSettingDecision,
  type CallerFacts,
  callBase,
  callerAgent,
  checkFiles,
  checkShell,
  couldNotDecide,
  type HookDecision,
} from './hook-check.js';
import { patchPaths } from './patch-paths.js';

import { HARNESSES, type HarnessName } from './harness-names.js';

export { HARNESSES, type HarnessName, harnessOfAction, isHarness } from './harness-names.js';

/** A tool call as the shared decision sees it. */
type ToolCall =
  /** Not a call this hook guards (another event, a read, a search): it goes, silently. */
  | { readonly kind: 'ignore'; readonly why: string }
  | {
      readonly kind: 'shell';
      readonly tool: string;
      readonly command: string;
      readonly cwd?: unknown;
      readonly caller: CallerFacts;
    }
  | {
      readonly kind: 'edit';
      readonly tool: string;
      /** As the payload names them: absolute, or relative to `cwd`. */
      readonly files: readonly string[];
      readonly cwd?: unknown;
      readonly caller: CallerFacts;
    }
  | { readonly kind: 'invalid'; readonly why: string };

/** What the harness reads back: JSON on stdout (or nothing), and the exit code. */
interface Words {
  readonly stdout: Record<string, unknown> | null;
}

interface Harness {
  /** How the README and messages name it. */
  readonly title: string;
  read(payload: unknown): ToolCall;
  words(decision: HookDecision): Words;
}

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function firstIssue(error: { issues: readonly { path: readonly PropertyKey[]; message: string }[] }): string {
  const issue = error.issues[0];
  return issue ? `${issue.path.map(String).join('.') || 'payload'}: ${issue.message}` : 'invalid';
}

/** The first of `fields` that holds a non-blank string, as the list of files an edit writes. */
function fileField(input: Json, fields: readonly string[]): string[] {
  for (const field of fields) {
    const value = input[field];
    if (typeof value === 'string' && value.trim() !== '') return [value];
  }
  return [];
}

function edit(tool: string, files: string[], cwd: unknown, caller: CallerFacts, what: string): ToolCall {
  if (files.length === 0) return { kind: 'invalid', why: `${tool} names no ${what}` };
  return { kind: 'edit', tool, files, cwd, caller };
}

/** A patch whose file headers name no file writes nothing this hook can check: refused as unreadable. */
function patchEdit(tool: string, patch: unknown, cwd: unknown, caller: CallerFacts): ToolCall {
  if (typeof patch !== 'string') return { kind: 'invalid', why: `${tool} carries no patch text` };
  return edit(tool, patchPaths(patch), cwd, caller, 'file in its patch headers');
}

const string = z.string();
const nonBlank = z.string().check(z.trim(), z.minLength(1));
const named = z.string().check(z.minLength(1));
const record = z._default(z.record(z.string(), z.unknown()), {});
const opt = <T extends z.ZodMiniType>(schema: T) => z.optional(schema);

// Codex CLI: PreToolUse, the Claude Code shape; apply_patch carries its patch in tool_input.command,
// shell calls arrive as tool_name "Bash"; sub-agent calls add agent_id and agent_type.
const CodexPayload = z.looseObject({
  session_id: nonBlank,
  hook_event_name: opt(string),
  tool_name: named,
  tool_input: record,
  cwd: opt(string),
  agent_id: opt(string),
});

const codex: Harness = {
  title: 'Codex',
  read(payload) {
    const parsed = CodexPayload.safeParse(payload);
    if (!parsed.success) return { kind: 'invalid', why: firstIssue(parsed.error) };
    const p = parsed.data;
    if (p.hook_event_name !== undefined && p.hook_event_name !== 'PreToolUse') {
      return { kind: 'ignore', why: `${p.hook_event_name} is not handled` };
    }
    const caller = { harness: 'codex', sessionId: p.session_id, subAgentId: p.agent_id };
    const command = p.tool_input.command;
    if (p.tool_name === 'apply_patch') return patchEdit(p.tool_name, command, p.cwd, caller);
    if (p.tool_name === 'Bash' && typeof command === 'string') {
      return { kind: 'shell', caller, tool: p.tool_name, command, cwd: p.cwd };
    }
    return { kind: 'ignore', why: `${p.tool_name} is not checked` };
  },
  words(decision) {
    if (decision.kind === 'deny') {
      return {
        stdout: {
          hookSpecificOutput: {
            hookEventName: 'PreToolUse',
            permissionDecision: 'deny',
            permissionDecisionReason: decision.reason,
          },
        },
      };
    }
    const out: Json = {};
    if (decision.note) out.systemMessage = decision.note;
    if (decision.context?.length) {
      out.hookSpecificOutput = {
        hookEventName: 'PreToolUse',
        additionalContext: decision.context.join('\n'),
      };
    }
    return { stdout: Object.keys(out).length ? out : null };
  },
};

// Gemini CLI: BeforeTool; write_file and replace name file_path, run_shell_command a command.
const GeminiPayload = z.looseObject({
  session_id: nonBlank,
  hook_event_name: opt(string),
  tool_name: named,
  tool_input: record,
  cwd: opt(string),
});
const GEMINI_EDITS = new Set(['write_file', 'replace']);

const gemini: Harness = {
  title: 'Gemini CLI',
  read(payload) {
    const parsed = GeminiPayload.safeParse(payload);
    if (!parsed.success) return { kind: 'invalid', why: firstIssue(parsed.error) };
    const p = parsed.data;
    if (p.hook_event_name !== undefined && p.hook_event_name !== 'BeforeTool') {
      return { kind: 'ignore', why: `${p.hook_event_name} is not handled` };
    }
    const caller = { harness: 'gemini', sessionId: p.session_id };
    if (GEMINI_EDITS.has(p.tool_name)) {
      return edit(p.tool_name, fileField(p.tool_input, ['file_path']), p.cwd, caller, 'file_path');
    }
    const command = p.tool_input.command;
    if (p.tool_name === 'run_shell_command' && typeof command === 'string') {
      // A relative dir_path is below the session's folder (Gemini runs the command there).
      const dir = p.tool_input.dir_path;
      const cwd =
        typeof dir === 'string' &&
        !path.isAbsolute(dir) &&
        typeof p.cwd === 'string' &&
        path.isAbsolute(p.cwd)
          ? path.resolve(p.cwd, dir)
          : (dir ?? p.cwd);
      return { kind: 'shell', caller, tool: p.tool_name, command, cwd };
    }
    return { kind: 'ignore', why: `${p.tool_name} is not checked` };
  },
  words(decision) {
    if (decision.kind === 'deny') return { stdout: { decision: 'deny', reason: decision.reason } };
    // BeforeTool has no field for context on an allowed call: only the user's note goes through.
    return { stdout: decision.note ? { systemMessage: decision.note } : null };
  },
};

// Cursor: preToolUse (every tool, tool_name and tool_input) and beforeShellExecution (command, cwd).
const CursorPayload = z.looseObject({
  conversation_id: nonBlank,
  hook_event_name: named,
  tool_name: opt(string),
  tool_input: opt(z.unknown()),
  command: opt(string),
  cwd: opt(string),
  workspace_roots: opt(z.array(string)),
});
const CURSOR_EDITS = new Set(['Write', 'Edit', 'StrReplace', 'MultiEdit', 'Delete', 'EditNotebook']);

const cursor: Harness = {
  title: 'Cursor',
  read(payload) {
    const parsed = CursorPayload.safeParse(payload);
    if (!parsed.success) return { kind: 'invalid', why: firstIssue(parsed.error) };
    const p = parsed.data;
    const cwd = p.cwd ?? p.workspace_roots?.[0];
    const caller = { harness: 'cursor', sessionId: p.conversation_id };
    if (p.hook_event_name === 'beforeShellExecution') {
      if (p.command === undefined) return { kind: 'invalid', why: 'beforeShellExecution names no command' };
      return { kind: 'shell', caller, tool: 'Shell', command: p.command, cwd };
    }
    if (p.hook_event_name !== 'preToolUse')
      return { kind: 'ignore', why: `${p.hook_event_name} is not handled` };
    const tool = p.tool_name ?? '';
    // Cursor has sent tool_input both as an object and as a JSON string.
    let input: unknown = p.tool_input;
    if (typeof input === 'string') {
      try {
        input = JSON.parse(input);
      } catch {
        return { kind: 'invalid', why: 'tool_input is not JSON' };
      }
    }
    const fields = isObject(input) ? input : {};
    if (CURSOR_EDITS.has(tool)) {
      return edit(
        tool,
        fileField(fields, ['file_path', 'path', 'target_file', 'target_notebook']),
        cwd,
        caller,
        'file',
      );
    }
    if (tool === 'Shell' && typeof fields.command === 'string') {
      return { kind: 'shell', caller, tool, command: fields.command, cwd: fields.working_directory ?? cwd };
    }
    return { kind: 'ignore', why: `${tool || 'a tool without a name'} is not checked` };
  },
  words(decision) {
    if (decision.kind === 'deny') {
      return {
        stdout: { permission: 'deny', user_message: decision.reason, agent_message: decision.reason },
      };
    }
    // Never `permission: allow`: to Cursor that means "run without asking the user", which a
    // command agent-lock could not read must not get. A note goes with `ask`, which leaves the
    // user's usual approval in place; nothing to say is no output at all.
    return { stdout: decision.note ? { permission: 'ask', user_message: decision.note } : null };
  },
};

// OpenCode: the plugin alock installs (opencode-plugin.ts) sends its tool.execute.before call as
// {tool, sessionID, callID, args, directory}, and throws the reason of a deny.
const OpencodePayload = z.looseObject({
  tool: named,
  sessionID: nonBlank,
  args: record,
  directory: opt(string),
  /** Set by the plugin for a call made inside a sub-agent's (child) session. */
  parentSessionID: opt(string),
});
const OPENCODE_EDITS = new Set(['edit', 'write', 'multiedit']);

const opencode: Harness = {
  title: 'OpenCode',
  read(payload) {
    const parsed = OpencodePayload.safeParse(payload);
    if (!parsed.success) return { kind: 'invalid', why: firstIssue(parsed.error) };
    const p = parsed.data;
    // A child session is a sub-agent: its parent's session is the main agent.
    const caller = p.parentSessionID
      ? { harness: 'opencode', sessionId: p.parentSessionID, subAgentId: p.sessionID }
      : { harness: 'opencode', sessionId: p.sessionID };
    if (OPENCODE_EDITS.has(p.tool)) {
      return edit(p.tool, fileField(p.args, ['filePath']), p.directory, caller, 'filePath');
    }
    if (p.tool === 'patch' || p.tool === 'apply_patch') {
      return patchEdit(p.tool, p.args.patchText, p.directory, caller);
    }
    if (p.tool === 'bash' && typeof p.args.command === 'string') {
      return {
        kind: 'shell',
        caller,
        tool: p.tool,
        command: p.args.command,
        cwd: p.args.workdir ?? p.directory,
      };
    }
    return { kind: 'ignore', why: `${p.tool} is not checked` };
  },
  words(decision) {
    if (decision.kind === 'deny') return { stdout: { decision: 'deny', reason: decision.reason } };
    return { stdout: decision.note ? { decision: 'allow', note: decision.note } : null };
  },
};

// GitHub Copilot CLI: preToolUse; toolArgs is a JSON string (an object is read too).
const CopilotPayload = z.looseObject({
  toolName: named,
  toolArgs: opt(z.unknown()),
  cwd: opt(string),
  sessionId: opt(string),
});
const COPILOT_EDITS = new Set(['edit', 'create']);

const copilot: Harness = {
  title: 'GitHub Copilot CLI',
  read(payload) {
    const parsed = CopilotPayload.safeParse(payload);
    if (!parsed.success) return { kind: 'invalid', why: firstIssue(parsed.error) };
    const p = parsed.data;
    let args: unknown = p.toolArgs ?? {};
    if (typeof args === 'string') {
      try {
        args = JSON.parse(args);
      } catch {
        return { kind: 'invalid', why: 'toolArgs is not JSON' };
      }
    }
    const fields = isObject(args) ? args : {};
    // The hook payload names no session: the agent is what alock resolves from the hook's ancestry
    // (the copilot process), unless AGENT_ID says otherwise.
    const caller = { harness: 'copilot', sessionId: p.sessionId };
    if (COPILOT_EDITS.has(p.toolName))
      return edit(p.toolName, fileField(fields, ['path']), p.cwd, caller, 'path');
    if (p.toolName === 'bash' && typeof fields.command === 'string') {
      return { kind: 'shell', caller, tool: p.toolName, command: fields.command, cwd: p.cwd };
    }
    return { kind: 'ignore', why: `${p.toolName} is not checked` };
  },
  words(decision) {
    if (decision.kind === 'deny') {
      return { stdout: { permissionDecision: 'deny', permissionDecisionReason: decision.reason } };
    }
    return { stdout: null };
  },
};

// Cline: an executable named PreToolUse in .clinerules/hooks; the call is under preToolUse.
const ClinePayload = z.looseObject({
  hookName: opt(string),
  taskId: nonBlank,
  workspaceRoots: opt(z.array(string)),
  preToolUse: z.looseObject({ toolName: named, parameters: record }),
});
const CLINE_EDITS = new Set(['write_to_file', 'replace_in_file', 'new_rule']);

const cline: Harness = {
  title: 'Cline',
  read(payload) {
    const parsed = ClinePayload.safeParse(payload);
    if (!parsed.success) return { kind: 'invalid', why: firstIssue(parsed.error) };
    const p = parsed.data;
    if (p.hookName !== undefined && p.hookName !== 'PreToolUse') {
      return { kind: 'ignore', why: `${p.hookName} is not handled` };
    }
    const { toolName, parameters } = p.preToolUse;
    // Cline's paths are relative to the workspace root.
    const cwd = p.workspaceRoots?.[0];
    const caller = { harness: 'cline', sessionId: p.taskId };
    if (CLINE_EDITS.has(toolName))
      return edit(toolName, fileField(parameters, ['path']), cwd, caller, 'path');
    if (toolName === 'execute_command' && typeof parameters.command === 'string') {
      return { kind: 'shell', caller, tool: toolName, command: parameters.command, cwd };
    }
    return { kind: 'ignore', why: `${toolName} is not checked` };
  },
  words(decision) {
    // Cline reads an answer on every call; `cancel: false` lets the tool run.
    if (decision.kind === 'deny') return { stdout: { cancel: true, errorMessage: decision.reason } };
    const out: Json = { cancel: false };
    if (decision.context?.length) out.contextModification = decision.context.join('\n');
    return { stdout: out };
  },
};

const ADAPTERS: Record<HarnessName, Harness> = { codex, gemini, cursor, opencode, copilot, cline };

function answer(harness: Harness, decision: HookDecision): Answer {
  const { stdout } = harness.words(decision);
  const denied = decision.kind === 'deny';
  const message = denied ? decision.reason : decision.message;
  return {
    command: 'hooks',
    status: denied ? 'denied' : 'allowed',
    exitCode: 0,
    locks: [],
    conflicts: denied ? [...decision.conflicts] : [],
    message,
    text: [message],
    extra: { hook: decision.extra },
    raw: { stdout: stdout === null ? '' : `${JSON.stringify(stdout)}\n` },
  };
}

/** `alock hooks <harness>-pre-tool-use`: one payload on stdin, one answer in the harness's words. */
export async function harnessPreToolUse(cli: CliContext, name: HarnessName): Promise<Answer> {
  const harness = ADAPTERS[name];
  const env = cli.io.env;
  let payload: unknown;
  try {
    if (!cli.io.stdin) return answer(harness, couldNotDecide(env, 'no hook payload on stdin'));
    payload = JSON.parse(await cli.io.stdin());
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    return answer(harness, couldNotDecide(env, `the hook payload is not JSON (${why})`));
  }
  const call = harness.read(payload);
  if (call.kind === 'invalid') {
    return answer(
      harness,
      couldNotDecide(env, `the hook payload is not a ${harness.title} tool call (${call.why})`),
    );
  }
  if (call.kind === 'ignore') return answer(harness, allow(`allowed: ${call.why}`));
  // A bad value is an error, never a silent default: every edit is refused until it is fixed.
  const bad = badSettingDecision(env);
  if (bad !== null && call.kind === 'edit') return answer(harness, bad);
  try {
    const agent = () =>
      callerAgent(call.caller, env, () => {
        const own = cli.identity();
        return { agentId: own.agentId, parentAgentId: own.parentAgentId };
      });
    const base = callBase(cli, call.cwd);
    if (call.kind === 'shell') {
      const decision = await checkShell(cli, call.command, base, agent);
      // Only a command that writes a file is decided: `ls` goes, whatever the setting.
      if (bad !== null && decision.kind === 'deny') return answer(harness, bad);
      return answer(harness, decision);
    }
    return answer(harness, await checkFiles(cli, call.files, agent(), base));
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    return answer(harness, couldNotDecide(env, why));
  }
}

/** The runtime's name for a harness: `codex-pre-tool-use` -> codex. */
export function unknownHarness(cli: CliContext, value: unknown): AgentLockError {
  return new AgentLockError('E_USAGE', `unknown harness ${JSON.stringify(value)}`, {
    hint: `one of claude, ${HARNESSES.join(', ')} (see ${cli.name} hooks --help)`,
  });
}
