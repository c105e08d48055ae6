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
  callBase,
  callerAgent,
  checkFiles,
  couldNotDecide,
  deny,
  type HookDecision,
} from './hook-check.js';
import { withClineIdentity } from './cline-identity.js';
import { checkShell } from './hook-shell.js';
import {
  clineCommandLine,
  clineCommands,
  codexWorkdir,
  edit,
  fileField,
  isObject,
  type Json,
  notAString,
  patchEdit,
  powerShellCall,
  shellCall,
  type ToolCall,
} from './tool-call.js';
import { stampShell } from './trespass.js';
import { shellKey } from './trespass-hooks.js';

import { HARNESSES, type HarnessName } from './harness-names.js';

export { HARNESSES, type HarnessName, harnessOfAction, isHarness } from './harness-names.js';

/** What the harness reads back: JSON on stdout (or nothing), and the exit code. */
interface Words {
  readonly stdout: Record<string, unknown> | null;
}

interface Harness {
  /** How the README and messages name it. */
  readonly title: string;
  read(payload: unknown): ToolCall;
  /** The decision in the harness's words; some harnesses word it by the payload's own shape. */
  words(decision: HookDecision, payload?: unknown): Words;
}

function firstIssue(error: { issues: readonly { path: readonly PropertyKey[]; message: string }[] }): string {
  const issue = error.issues[0];
  return issue ? `${issue.path.map(String).join('.') || 'payload'}: ${issue.message}` : 'invalid';
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
    if (p.tool_name === 'Bash') {
      // exec_command's workdir is not in the payload (Codex 0.171 sends only the command): it is
      // read from the call itself in the session's transcript when it can be found there.
      const workdir = p.tool_input.workdir ?? codexWorkdir(p);
      const cwd =
        typeof workdir === 'string' && workdir !== '' && typeof p.cwd === 'string'
          ? path.resolve(p.cwd, workdir)
          : p.cwd;
      return shellCall(p.tool_name, command, cwd, caller);
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
    if (p.tool_name === 'run_shell_command') {
      // A relative dir_path is below the session's folder (Gemini runs the command there).
      const dir = p.tool_input.dir_path;
      const cwd =
        typeof dir === 'string' &&
        !path.isAbsolute(dir) &&
        typeof p.cwd === 'string' &&
        path.isAbsolute(p.cwd)
          ? path.resolve(p.cwd, dir)
          : (dir ?? p.cwd);
      return shellCall(p.tool_name, command, cwd, caller);
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
  command: opt(z.unknown()),
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
    if (p.hook_event_name === 'beforeShellExecution') return shellCall('Shell', p.command, cwd, caller);
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
    if (tool === 'Shell') return shellCall(tool, fields.command, fields.working_directory ?? cwd, caller);
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
    // `bash` in 1.x, `shell` in 2.x: the same arguments.
    if (p.tool === 'bash' || p.tool === 'shell') {
      return shellCall(p.tool, p.args.command, p.args.workdir ?? p.directory, caller);
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
  session_id: opt(string),
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
    // The session Copilot exports to its shell as COPILOT_AGENT_SESSION_ID, so the hook and the
    // agent's own alock derive one id; without it, what alock resolves from the hook's ancestry.
    const caller = { harness: 'copilot', sessionId: p.sessionId ?? p.session_id };
    if (COPILOT_EDITS.has(p.toolName))
      return edit(p.toolName, fileField(fields, ['path']), p.cwd, caller, 'path');
    if (p.toolName === 'bash') return shellCall(p.toolName, fields.command, p.cwd, caller);
    if (p.toolName === 'powershell') return powerShellCall(p.toolName, fields.command, p.cwd, caller);
    return { kind: 'ignore', why: `${p.toolName} is not checked` };
  },
  words(decision) {
    if (decision.kind === 'deny') {
      return { stdout: { permissionDecision: 'deny', permissionDecisionReason: decision.reason } };
    }
    return { stdout: null };
  },
};

// Cline: an executable named PreToolUse in .clinerules/hooks; the call is under preToolUse, every
// parameter a string. The extension up to 3.x names it hookName PreToolUse with the tools
// write_to_file, replace_in_file, execute_command (3.35+ adds apply_patch {input}); the extension 4.x
// and the CLI 3.0 run the Cline SDK, whose tools are editor {path}, apply_patch {input},
// run_commands {commands}, read_files; the CLI sends hookName tool_call with the call's own input
// under tool_call.input, and sessionContext.rootSessionId, agent_id, parent_agent_id.
const ClinePayload = z.looseObject({
  hookName: opt(string),
  taskId: nonBlank,
  workspaceRoots: opt(z.array(string)),
  preToolUse: z.looseObject({ toolName: named, parameters: record }),
  tool_call: opt(z.looseObject({ input: opt(z.unknown()) })),
  sessionContext: opt(z.looseObject({ rootSessionId: opt(z.unknown()) })),
  agent_id: opt(z.unknown()),
  parent_agent_id: opt(z.unknown()),
});
const CLINE_EDITS = new Set(['write_to_file', 'replace_in_file', 'new_rule', 'editor']);
const CLINE_HOOKS = new Set(['PreToolUse', 'tool_call']);

const cline: Harness = {
  title: 'Cline',
  read(payload) {
    const parsed = ClinePayload.safeParse(payload);
    if (!parsed.success) return { kind: 'invalid', why: firstIssue(parsed.error) };
    const p = parsed.data;
    if (p.hookName !== undefined && !CLINE_HOOKS.has(p.hookName)) {
      return { kind: 'ignore', why: `${p.hookName} is not handled` };
    }
    const { toolName, parameters } = p.preToolUse;
    // The call's own input where the CLI sends it, else the string parameters.
    const raw = p.tool_call?.input ?? parameters;
    const input = isObject(raw) ? raw : {};
    // Paths are absolute (SDK tools) or relative to the workspace root (extension 3.x tools).
    const cwd = p.workspaceRoots?.[0];
    // One id per task tree: a sub-agent's calls carry the root session and a parent agent.
    const root = p.sessionContext?.rootSessionId;
    const parent = p.parent_agent_id;
    const caller = {
      harness: 'cline',
      sessionId: typeof root === 'string' && root.trim() !== '' ? root : p.taskId,
      subAgentId:
        typeof parent === 'string' && parent !== '' && typeof p.agent_id === 'string'
          ? p.agent_id
          : undefined,
    };
    if (CLINE_EDITS.has(toolName))
      return edit(toolName, fileField(input, ['path', 'absolutePath']), cwd, caller, 'path');
    if (toolName === 'apply_patch') {
      return patchEdit(toolName, typeof raw === 'string' ? raw : input.input, cwd, caller);
    }
    if (toolName === 'execute_command') return shellCall(toolName, input.command, cwd, caller);
    if (toolName === 'run_commands') {
      const entries = clineCommands(raw);
      if (entries === null || entries.length === 0) return notAString(toolName, raw);
      const lines = entries.map(clineCommandLine);
      const bad = lines.find((line) => typeof line !== 'string');
      if (bad !== undefined) return notAString(toolName, bad);
      const [first, ...more] = lines as string[];
      return { kind: 'shell', tool: toolName, command: first!, more, cwd, caller };
    }
    return { kind: 'ignore', why: `${toolName} is not checked` };
  },
  words(decision, payload) {
    // Cline reads an answer on every call; `cancel: false` lets the tool run.
    if (decision.kind === 'deny') {
      // The Cline SDK (CLI 3.0; payload hookName tool_call) reads `cancel: true` as "stop the
      // whole run" (@cline/core's file-hook extension maps it to {stop}, and the agent's
      // applyStopControl throws ControlledStopError before any tool runs): the call is refused but
      // the model never learns why and the task ends. So there the call's input is replaced by
      // null, which every SDK tool rejects before it touches anything, and the reason goes to the
      // model as the hook's context. The extension's own hooks (hookName PreToolUse) read `cancel`.
      if (isObject(payload) && payload.hookName === 'tool_call') {
        return { stdout: { cancel: false, overrideInput: null, context: decision.reason } };
      }
      return { stdout: { cancel: true, errorMessage: decision.reason } };
    }
    const out: Json = { cancel: false };
    if (decision.extra.overrideInput !== undefined) out.overrideInput = decision.extra.overrideInput;
    if (decision.context?.length) out.contextModification = decision.context.join('\n');
    return { stdout: out };
  },
};

const ADAPTERS: Record<HarnessName, Harness> = { codex, gemini, cursor, opencode, copilot, cline };

function answer(harness: Harness, decision: HookDecision, payload?: unknown): Answer {
  const { stdout } = harness.words(decision, payload);
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
  if (call.kind === 'ignore') return answer(harness, allow(`allowed: ${call.why}`), payload);
  if (call.kind === 'refuse') return answer(harness, deny(call.why, { error: 'command' }), payload);
  // A bad value is an error, never a silent default: every edit is refused until it is fixed.
  const bad = badSettingDecision(env);
  if (bad !== null && call.kind === 'edit') return answer(harness, bad, payload);
  try {
    const agent = () => callerAgent(call.caller, env, () => cli.identity());
    const base = callBase(cli, call.cwd);
    if (call.kind === 'shell' || call.kind === 'powershell') {
      let decision: HookDecision | null = null;
      const commands = call.kind === 'shell' ? [call.command, ...(call.more ?? [])] : [call.command];
      for (const command of commands) {
        // Each command's writes are claimed as an edit's are (with the harness's shell tool).
        const one =
          call.kind === 'shell'
            ? await checkShell(cli, command, base, agent, call.tool)
            : await (await import('./powershell-writes.js')).checkPowerShell(
                cli,
                command,
                base,
                agent,
                call.tool,
              );
        if (one.kind === 'deny') {
          decision = one;
          break;
        }
        decision ??= one;
      }
      // Only a command that writes a file is decided: `ls` goes, whatever the setting.
      if (bad !== null && decision?.kind === 'deny') return answer(harness, bad, payload);
      // What no parser sees is caught after the fact: the held files are stamped for the post hook
      // (the call's whole text, as the post hook reads it back).
      if (call.kind === 'shell' && decision?.kind !== 'deny') {
        const text = [call.command, ...(call.more ?? [])].join('\n');
        await stampShell(cli, { key: shellKey(name, payload, text), command: text, base, agent });
      }
      if (name === 'cline') decision = withClineIdentity(decision!, payload, agent());
      return answer(harness, decision!, payload);
    }
    // The same decision that checks the files claims them for the agent (claims on edit).
    return answer(harness, await checkFiles(cli, call.files, agent(), base, call.tool), payload);
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    return answer(harness, couldNotDecide(env, why), payload);
  }
}

/** The runtime's name for a harness: `codex-pre-tool-use` -> codex. */
export function unknownHarness(cli: CliContext, value: unknown): AgentLockError {
  return new AgentLockError('E_USAGE', `unknown harness ${JSON.stringify(value)}`, {
    hint: `one of claude, ${HARNESSES.join(', ')} (see ${cli.name} hooks --help)`,
  });
}
