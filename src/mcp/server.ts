import { AgentLockError } from '../core/errors.js';
import type { Answer, CliContext } from '../cli/answer.js';

export async function mcpCommand(_cli: CliContext): Promise<Answer> {
  throw new AgentLockError('E_USAGE', 'the MCP server is not part of this build yet');
}
