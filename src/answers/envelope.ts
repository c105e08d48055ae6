import type { AgentLockError } from '../core/errors.js';
import type { Answer } from './answer.js';

/** The one JSON object `--json` prints, and the MCP tools' structured output: the same shape for both. */
export function envelope(
  answer: Answer,
  agent: { id: string; parentId: string | null; parentInferred?: boolean } | null,
  error: AgentLockError | null,
) {
  return {
    schema: 'agent-lock/v1',
    command: answer.command,
    status: answer.status,
    ok: answer.exitCode === 0,
    exit_code: answer.exitCode,
    agent: agent
      ? {
          id: agent.id,
          parent_id: agent.parentId,
          // The parent came from the calling process, not from the caller (AGENT_PARENT_ID).
          ...(agent.parentInferred ? { parent_inferred: true } : {}),
        }
      : null,
    locks: answer.locks,
    conflicts: answer.conflicts,
    message: answer.message,
    error: error ? { code: error.code, message: error.message } : null,
    warnings: answer.warnings ?? [],
    ...answer.extra,
  };
}

/** The answer behind an error envelope: status `error`, exit code 2, nothing locked. */
export function errorAnswer(command: string, message: string): Answer {
  return { command, status: 'error', exitCode: 2, locks: [], conflicts: [], message, text: [] };
}
