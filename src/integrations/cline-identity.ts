/**
 * Cline CLI 3.0 gives the commands its `run_commands` tool runs no task id, and one hub daemon per
 * workspace (`cline --cline-hub-daemon`) runs the hooks and commands of every task started there, so
 * neither a variable nor the process above the shell names the agent. The pre-tool hook, which
 * knows the task, exports the id its payload makes into each command that can take or check a lock
 * (`alock`, `git`), through the SDK's `overrideInput`: the agent's own `alock` is then the agent its
 * hook claims for.
 */
import type { HookAgent, HookDecision } from './hook-check.js';
import { withAgentId } from './claude-hook.js';

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** An allowed `run_commands` call of the Cline CLI, with the agent's id in its commands. */
export function withClineIdentity(decision: HookDecision, payload: unknown, agent: HookAgent): HookDecision {
  if (decision.kind !== 'allow' || !isObject(payload) || payload.hookName !== 'tool_call') return decision;
  const call = isObject(payload.tool_call) ? payload.tool_call : {};
  const input = call.input;
  if (!isObject(input) || !Array.isArray(input.commands)) return decision;
  let changed = false;
  const commands = input.commands.map((entry: unknown) => {
    if (typeof entry !== 'string') return entry;
    const rewritten = withAgentId(entry, agent, true);
    if (rewritten === null) return entry;
    changed = true;
    return rewritten;
  });
  if (!changed) return decision;
  return { ...decision, extra: { ...decision.extra, overrideInput: { ...input, commands } } };
}
