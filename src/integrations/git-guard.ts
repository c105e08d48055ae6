import { AgentLockError } from '../core/errors.js';
import type { Answer, CliContext } from '../cli/answer.js';

export async function guardCommand(_cli: CliContext, _hook: string): Promise<Answer> {
  throw new AgentLockError('E_USAGE', 'the git guard is not part of this build yet');
}
