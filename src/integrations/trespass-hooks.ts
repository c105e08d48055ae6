/**
 * The post-tool-use hooks (`alock hooks <harness>-post-tool-use`): after a shell call, whether it
 * changed a file another agent holds (trespass.ts), and, on any call, what this agent's own held
 * files went through meanwhile. Each harness's post-tool payload is read here by hand (no schema
 * library: the hook runs after every checked tool call) and the answer is worded the way that
 * harness reads added context. What each sends and reads was taken from its own source or docs:
 *
 * - Claude Code `PostToolUse` and Codex `PostToolUse`: `tool_use_id`, `tool_input.command`;
 *   context in `hookSpecificOutput.additionalContext`.
 * - Gemini CLI `AfterTool`: no call id (paired by session and command); context in
 *   `hookSpecificOutput.additionalContext`.
 * - Cursor `afterShellExecution`: `conversation_id`, `generation_id`, `command`; its output is
 *   not read, so the trespass is recorded but the agent is not told there.
 * - GitHub Copilot CLI `postToolUse`: `toolName`, `toolArgs`; a command hook's output is not read
 *   (the SDK's hooks only), so again recorded, not told.
 * - Cline `PostToolUse` (extension: `postToolUse.parameters`; CLI 3: also `tool_result.id`); context
 *   in `contextModification`.
 * - OpenCode `tool.execute.after` (through the plugin): `callID`; the plugin appends the context to
 *   the tool's output.
 */
import type { Answer, CliContext } from '../answers/answer.js';
import { type CallerFacts, callerAgent, type OwnIdentity } from './hook-check.js';
import { takeMail, takeMailHints } from './mail.js';
import { checkAfterShell, noticesWaiting, takeNotices } from './trespass.js';

export const POST_HARNESSES = [
  'claude',
  'codex',
  'gemini',
  'cursor',
  'opencode',
  'copilot',
  'cline',
] as const;
export type PostHarness = (typeof POST_HARNESSES)[number];

/** `codex-post-tool-use` -> codex. */
export function postHarnessOfAction(action: string): PostHarness | null {
  const match = /^([a-z]+)-post-tool-use$/.exec(action);
  const name = match?.[1];
  return name !== undefined && (POST_HARNESSES as readonly string[]).includes(name)
    ? (name as PostHarness)
    : null;
}

type Json = Record<string, unknown>;
type Env = Readonly<Record<string, string | undefined>>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function str(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value : undefined;
}

/** Cline's shell command: `command` (extension), or `commands` (CLI 3, a string or a list). */
function clineCommand(parameters: unknown): string | undefined {
  if (!isObject(parameters)) return undefined;
  if (typeof parameters.command === 'string') return parameters.command;
  const commands = parameters.commands;
  if (typeof commands === 'string') return commands;
  if (Array.isArray(commands) && commands.every((c) => typeof c === 'string')) return commands.join('\n');
  return undefined;
}

/** Tool arguments sent as a JSON string or as an object (Copilot, Cursor). */
function argsOf(value: unknown): Json {
  if (typeof value === 'string') {
    try {
      const parsed: unknown = JSON.parse(value);
      return isObject(parsed) ? parsed : {};
    } catch {
      return {};
    }
  }
  return isObject(value) ? value : {};
}

/**
 * What pairs a shell call's pre hook with its post hook: the tool call's own id where the harness
 * sends one in both (Claude Code, Codex, OpenCode, Cline CLI), else its session (and Cursor's
 * generation) with the command itself.
 */
export function shellKey(harness: PostHarness, payload: unknown, command: string): string {
  const p = isObject(payload) ? payload : {};
  const id = (() => {
    switch (harness) {
      case 'claude':
      case 'codex':
        return str(p.tool_use_id);
      case 'opencode':
        return str(p.callID);
      case 'cline': {
        const call = isObject(p.tool_call) ? p.tool_call : isObject(p.tool_result) ? p.tool_result : {};
        return str(call.id);
      }
      default:
        return undefined;
    }
  })();
  if (id !== undefined) return `${harness}\0id\0${id}`;
  const session =
    str(p.session_id) ??
    str(p.conversation_id) ??
    str(p.sessionID) ??
    str(p.sessionId) ??
    str(p.taskId) ??
    '';
  const generation = harness === 'cursor' ? (str(p.generation_id) ?? '') : '';
  return `${harness}\0${session}\0${generation}\0${command}`;
}

/** A post-tool call as this hook sees it. */
interface PostCall {
  /** The shell command that ran, when the call was a shell call. */
  readonly command?: string | undefined;
  readonly caller: CallerFacts | null;
}

/** Reads a harness's post-tool payload; null: not a post-tool call (another event). */
function readPost(harness: PostHarness, p: Json): PostCall | null {
  switch (harness) {
    case 'claude':
    case 'codex': {
      if (p.hook_event_name !== undefined && p.hook_event_name !== 'PostToolUse') return null;
      const input = isObject(p.tool_input) ? p.tool_input : {};
      const session = str(p.session_id);
      const caller = session ? { harness, sessionId: session, subAgentId: str(p.agent_id) } : null;
      const command = p.tool_name === 'Bash' && typeof input.command === 'string' ? input.command : undefined;
      return { command, caller };
    }
    case 'gemini': {
      if (p.hook_event_name !== undefined && p.hook_event_name !== 'AfterTool') return null;
      const input = isObject(p.tool_input) ? p.tool_input : {};
      const session = str(p.session_id);
      const command =
        p.tool_name === 'run_shell_command' && typeof input.command === 'string' ? input.command : undefined;
      return { command, caller: session ? { harness, sessionId: session } : null };
    }
    case 'cursor': {
      if (p.hook_event_name !== 'afterShellExecution') return null;
      const session = str(p.conversation_id);
      return {
        command: typeof p.command === 'string' ? p.command : undefined,
        caller: session ? { harness, sessionId: session } : null,
      };
    }
    case 'opencode': {
      const session = str(p.sessionID);
      const args = isObject(p.args) ? p.args : {};
      const parent = str(p.parentSessionID);
      const caller = !session
        ? null
        : parent
          ? { harness, sessionId: parent, subAgentId: session }
          : { harness, sessionId: session };
      // `bash` in 1.x, `shell` in 2.x: the same arguments.
      const command =
        (p.tool === 'bash' || p.tool === 'shell') && typeof args.command === 'string'
          ? args.command
          : undefined;
      return { command, caller };
    }
    case 'copilot': {
      if (p.hook_event_name !== undefined && p.hook_event_name !== 'postToolUse') return null;
      const args = argsOf(p.toolArgs);
      const session = str(p.sessionId);
      const command = p.toolName === 'bash' && typeof args.command === 'string' ? args.command : undefined;
      return { command, caller: session ? { harness, sessionId: session } : null };
    }
    case 'cline': {
      if (p.hookName !== undefined && p.hookName !== 'PostToolUse' && p.hookName !== 'tool_result')
        return null;
      const post = isObject(p.postToolUse) ? p.postToolUse : {};
      const tool = post.toolName;
      const shell = tool === 'execute_command' || tool === 'run_commands';
      const session = str(p.taskId);
      return {
        command: shell ? clineCommand(post.parameters) : undefined,
        caller: session ? { harness, sessionId: session } : null,
      };
    }
  }
}

/** Harnesses whose post-tool answer reaches the agent: only there is a holder's notice taken. */
const TELLS: ReadonlySet<PostHarness> = new Set(['claude', 'codex', 'gemini', 'opencode', 'cline']);

/** The lines in the harness's words: added context where it has a field for it, else nothing. */
function words(harness: PostHarness, lines: readonly string[]): Json | null {
  if (lines.length === 0) return harness === 'cline' ? { cancel: false } : null;
  const text = lines.join('\n');
  switch (harness) {
    case 'claude':
    case 'codex':
      return { hookSpecificOutput: { hookEventName: 'PostToolUse', additionalContext: text } };
    case 'gemini':
      return { hookSpecificOutput: { hookEventName: 'AfterTool', additionalContext: text } };
    case 'opencode':
      return { context: text };
    case 'cline':
      return { cancel: false, contextModification: text };
    default:
      return null;
  }
}

function answer(harness: PostHarness, lines: readonly string[], message: string): Answer {
  const out = words(harness, lines);
  return {
    command: 'hooks',
    status: 'allowed',
    exitCode: 0,
    locks: [],
    conflicts: [],
    message,
    text: [message],
    extra: { hook: { told: lines } },
    raw: { stdout: out === null ? '' : `${JSON.stringify(out)}\n` },
  };
}

/**
 * `alock hooks <harness>-post-tool-use`: one payload on stdin. The call has already run, so this
 * hook never stands in anyone's way: whatever goes wrong, the answer is exit 0 and at most a line
 * of context.
 */
export async function harnessPostToolUse(cli: CliContext, harness: PostHarness): Promise<Answer> {
  let payload: unknown;
  try {
    payload = cli.io.stdin ? JSON.parse(await cli.io.stdin()) : null;
  } catch {
    payload = null;
  }
  if (!isObject(payload)) return answer(harness, [], 'nothing to do: the payload is not a JSON object');
  const call = readPost(harness, payload);
  if (call === null) return answer(harness, [], 'nothing to do: not a post-tool call');
  const lines: string[] = [];
  const env = cli.io.env;
  if (call.command !== undefined) {
    try {
      const key = shellKey(harness, payload, call.command);
      lines.push(...(await checkAfterShell(cli, key)));
    } catch (error) {
      const why = error instanceof Error ? error.message : String(error);
      lines.push(`agent-lock could not check what this shell command changed: ${why}`);
    }
  }
  // What happened to this agent's own files meanwhile: told once, where the harness reads it.
  if (TELLS.has(harness) && call.caller !== null && noticesWaiting(env)) {
    try {
      const agent = callerAgent(call.caller, env, () => cli.identity());
      lines.push(...takeNotices(env, agent.agentId));
      // Requests and answers left for this agent (mail.ts): taken here where the pre-tool answer
      // has no place for them (Gemini CLI, OpenCode), or a pre-tool call left them.
      const dirs = takeMailHints(env, agent.agentId);
      if (dirs.length > 0) lines.push(...(await takeMail(env, dirs, agent, cli.name)));
    } catch {
      // No agent to tell: the notices wait for one who can be named.
    }
  }
  return answer(harness, lines, lines.length === 0 ? 'nothing to tell' : lines.join('\n'));
}

/** Harnesses whose pre-tool answer can carry context on a call it lets through. */
const PRE_TELLS = new Set(['claude', 'codex', 'cline']);

/** Who calls, from a pre-tool payload of a harness that can be told before its call. */
function preCaller(harness: string, p: Json): CallerFacts | null {
  if (harness === 'claude' || harness === 'codex') {
    const session = str(p.session_id);
    return session ? { harness, sessionId: session, subAgentId: str(p.agent_id) } : null;
  }
  const task = str(p.taskId);
  return harness === 'cline' && task ? { harness, sessionId: task } : null;
}

/**
 * A holder's notices on its pre-tool call, where the harness reads context on a call it lets
 * through (Claude Code, Codex, Cline): added to the answer, so the holder hears of a trespass before
 * its next step, not only after it. A refused call leaves them for the next. One readdir when no
 * notice waits for anyone.
 */
export function tellBefore(
  harness: string,
  stdin: string,
  answer: Answer,
  env: Env,
  own: OwnIdentity,
): Answer {
  const agent = toldAgent(harness, stdin, answer, env, own);
  if (agent === null) return answer;
  let lines: string[];
  try {
    lines = takeNotices(env, agent.agentId);
  } catch {
    return answer;
  }
  return withContext(harness, answer, lines);
}

/**
 * The agent of an allowed pre-tool call that may be told something before it runs, or null: a
 * harness that reads no context there, a refused call (it leaves what waits for the next), nothing
 * waiting for anyone (one readdir), or a payload that names nobody.
 */
function toldAgent(harness: string, stdin: string, answer: Answer, env: Env, own: OwnIdentity) {
  if (!PRE_TELLS.has(harness) || answer.status !== 'allowed' || !noticesWaiting(env)) return null;
  try {
    const payload: unknown = JSON.parse(stdin);
    const caller = isObject(payload) ? preCaller(harness, payload) : null;
    return caller === null ? null : callerAgent(caller, env, own);
  } catch {
    return null;
  }
}

/**
 * Requests and answers waiting for the caller (mail.ts), added to an allowed call's context where
 * the harness reads it before the call (Claude Code, Codex, Cline). Costs nothing but the readdir
 * tellBefore makes anyway when no hint waits; a refused call leaves them for the next.
 */
async function mailBefore(cli: CliContext, harness: string, stdin: string, answer: Answer): Promise<Answer> {
  const env = cli.io.env;
  const agent = toldAgent(harness, stdin, answer, env, () => cli.identity());
  if (agent === null) return answer;
  let lines: string[];
  try {
    const dirs = takeMailHints(env, agent.agentId);
    if (dirs.length === 0) return answer;
    lines = await takeMail(env, dirs, agent, cli.name);
  } catch {
    return answer;
  }
  return withContext(harness, answer, lines);
}

/** `lines` added to an allowed pre-tool answer's context, in the harness's words. */
function withContext(harness: string, answer: Answer, lines: readonly string[]): Answer {
  if (lines.length === 0) return answer;
  const raw = answer.raw?.stdout.trim() ?? '';
  const out = (raw === '' ? {} : JSON.parse(raw)) as Json;
  const text = lines.join('\n');
  if (harness === 'cline') {
    const before = typeof out.contextModification === 'string' ? `${out.contextModification}\n` : '';
    out.contextModification = `${before}${text}`;
  } else {
    const specific = isObject(out.hookSpecificOutput)
      ? out.hookSpecificOutput
      : { hookEventName: 'PreToolUse' };
    const before = typeof specific.additionalContext === 'string' ? `${specific.additionalContext}\n` : '';
    out.hookSpecificOutput = { ...specific, additionalContext: `${before}${text}` };
  }
  return { ...answer, raw: { ...answer.raw, stdout: `${JSON.stringify(out)}\n` } };
}

/** Runs a pre-tool hook and adds the caller's waiting notices to what it lets through (tellBefore). */
export async function preToolUseTold(
  cli: CliContext,
  harness: string,
  run: (cli: CliContext) => Promise<Answer>,
): Promise<Answer> {
  const read = cli.io.stdin;
  if (read === undefined) return run(cli);
  let seen = '';
  // The same context with a stdin that keeps what it read: a Cli is a class, so it is wrapped, not
  // spread (its methods live on its prototype).
  const io = {
    ...cli.io,
    stdin: async () => {
      seen = await read();
      return seen;
    },
  };
  const answer = await run(Object.create(cli, { io: { value: io, enumerable: true } }) as CliContext);
  return tellBefore(harness, seen, await mailBefore(cli, harness, seen, answer), cli.io.env, () =>
    cli.identity(),
  );
}
