/**
 * The end of an agent's turn or session (`alock hooks <harness>-turn-end`, `<harness>-session-end`):
 * the claims the agent's edits took (and its sub-agents') end, so the next agent may edit those
 * files. AGENT_LOCK_CLAIM_UNTIL=session keeps them over turn ends, until the session ends (or its
 * harness process is gone, or their idle lease runs out). Locks taken on purpose are never touched.
 *
 * Whatever happens the harness's stop goes on: the answer is empty (Cline's `{"cancel":false}`)
 * and exit 0; a claim left behind by a failure still ends with its harness process or its lease.
 */
import type { Answer, CliContext } from '../answers/answer.js';
import { isAgentLockError } from '../core/errors.js';
import { openLocks } from '../locks.js';
import { type CallerFacts, callBase, callerAgent } from './hook-check.js';
import { type EndAction, endOfAction } from './harness-names.js';
import { hintAskers } from './mail.js';

type Json = Record<string, unknown>;

const str = (value: unknown): string | undefined =>
  typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;

/** Who ends, and where, as each harness's stop payload names it. */
function stopFacts(harness: string, p: Json): { caller: CallerFacts; cwd: unknown; event: string } {
  switch (harness) {
    case 'cursor': {
      const roots = Array.isArray(p.workspace_roots) ? p.workspace_roots : [];
      return {
        caller: { harness, sessionId: str(p.conversation_id) },
        cwd: p.cwd ?? roots[0],
        event: str(p.hook_event_name) ?? 'stop',
      };
    }
    case 'copilot':
      // The same session field as its pre-tool payload reads (harness-hooks.ts).
      return {
        caller: { harness, sessionId: str(p.sessionId) ?? str(p.session_id) },
        cwd: p.cwd,
        event: 'stop',
      };
    case 'cline': {
      const roots = Array.isArray(p.workspaceRoots) ? p.workspaceRoots : [];
      // As its pre-tool reader (harness-hooks.ts): the CLI's root session names the task tree, and a
      // sub-agent (agent_id with a parent_agent_id) is that tree's sub-agent.
      const context = p.sessionContext;
      const root =
        typeof context === 'object' && context !== null ? str((context as Json).rootSessionId) : undefined;
      return {
        caller: {
          harness,
          sessionId: root ?? str(p.taskId),
          subAgentId: str(p.parent_agent_id) !== undefined ? str(p.agent_id) : undefined,
        },
        cwd: roots[0],
        event: str(p.hookName) ?? 'task end',
      };
    }
    case 'opencode': {
      const session = str(p.sessionID);
      const parent = str(p.parentSessionID);
      return {
        caller: parent
          ? { harness, sessionId: parent, subAgentId: session }
          : { harness, sessionId: session },
        cwd: p.directory,
        event: str(p.event) ?? 'session.idle',
      };
    }
    default:
      // Claude Code and Codex (Stop, SubagentStop, SessionEnd), Gemini CLI (AfterAgent, SessionEnd):
      // session_id, a sub-agent's agent_id, cwd.
      return {
        caller: { harness, sessionId: str(p.session_id), subAgentId: str(p.agent_id) },
        cwd: p.cwd,
        event: str(p.hook_event_name) ?? 'stop',
      };
  }
}

/** AGENT_LOCK_CLAIM_UNTIL: `turn` (default) or `session`; a bad value ends nothing and says so. */
export function claimUntil(env: Readonly<Record<string, string | undefined>>): 'turn' | 'session' | null {
  const value = str(env.AGENT_LOCK_CLAIM_UNTIL);
  if (value === undefined || value === 'turn') return 'turn';
  return value === 'session' ? 'session' : null;
}

function ended(harness: string, message: string, extra: Json = {}): Answer {
  return {
    command: 'hooks',
    status: 'ended',
    exitCode: 0,
    locks: [],
    conflicts: [],
    message,
    text: [message],
    extra: { hook: extra },
    // Cline reads an answer from every hook; the others read nothing from a stop that goes on.
    raw: { stdout: harness === 'cline' ? '{"cancel":false}\n' : '', stderr: '' },
  };
}

/** Runs `<harness>-turn-end` or `<harness>-session-end`. */
export async function endOfTurn(cli: CliContext, action: string): Promise<Answer> {
  const end = endOfAction(action) as EndAction;
  const { harness, when } = end;
  const env = cli.io.env;
  const until = claimUntil(env);
  if (until === null) {
    const message = `agent-lock: AGENT_LOCK_CLAIM_UNTIL must be turn or session (got ${JSON.stringify(env.AGENT_LOCK_CLAIM_UNTIL)}); no claim was ended`;
    return {
      ...ended(harness, message, { error: 'AGENT_LOCK_CLAIM_UNTIL' }),
      raw: { stdout: harness === 'cline' ? '{"cancel":false}\n' : '', stderr: `${message}\n` },
    };
  }
  if (when === 'turn' && until === 'session')
    return ended(harness, 'claims kept: AGENT_LOCK_CLAIM_UNTIL=session');
  let payload: Json = {};
  try {
    const value: unknown = cli.io.stdin ? JSON.parse(await cli.io.stdin()) : {};
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) payload = value as Json;
  } catch {
    return ended(harness, 'no claim ended: the payload is not JSON');
  }
  const facts = stopFacts(harness, payload);
  try {
    const agent = callerAgent(facts.caller, env, () => cli.identity());
    const backend = cli.globals().backend;
    const locks = await openLocks({
      dir: callBase(cli, facts.cwd),
      env,
      identity: agent,
      ...(backend === 'file' || backend === 'redis' ? { backend } : {}),
    });
    try {
      const reason = `${when === 'turn' ? 'turn ended' : 'session ended'} (${harness} ${facts.event})`;
      const outcome = await locks.endClaims(reason);
      // Whoever asked about an ended claim hears on its next tool call that the file is free.
      hintAskers(cli.io.env, outcome.locks, locks.tree.root);
      return ended(
        harness,
        `${outcome.locks.length} ${outcome.locks.length === 1 ? 'claim' : 'claims'} of ${agent.agentId} ended: ${reason}`,
        { agent, ended: outcome.locks.map((l) => l.scope) },
      );
    } finally {
      await locks.close().catch(() => {});
    }
  } catch (error) {
    const why = isAgentLockError(error) || error instanceof Error ? error.message : String(error);
    return ended(harness, `no claim ended: ${why}`, { error: why });
  }
}
