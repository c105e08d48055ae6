import { AgentLockError } from '../core/errors.js';
import type { Answer, CliContext } from '../cli/answer.js';

export async function skillCommand(
  _cli: CliContext,
  _action: string,
  _opts: Record<string, unknown>,
): Promise<Answer> {
  throw new AgentLockError('E_USAGE', 'skill is not part of this build yet');
}
