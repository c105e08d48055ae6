/**
 * An outcome as an answer: its status, the exit code the contract gives it, its one-line message
 * and the text lines a person reads. Every front end builds its answer here and only formats it:
 * the CLI prints the lines (or the envelope), the MCP tools return the envelope.
 */
import type { Outcome } from '../core/decide.js';
import type { Answer } from './answer.js';
import { type CommandName, type DecidedStatus, exitCodeFor } from './contract.js';

export function answerOf<C extends CommandName>(
  command: C,
  outcome: Outcome<DecidedStatus<C>>,
  message: string,
  lines: string[] = [],
  extra?: Record<string, unknown>,
): Answer {
  return {
    command,
    status: outcome.status,
    exitCode: exitCodeFor(command, outcome.status),
    locks: outcome.locks,
    conflicts: outcome.conflicts,
    message,
    text: lines,
    ...(outcome.warnings ? { warnings: outcome.warnings } : {}),
    ...(extra ? { extra } : {}),
  };
}
