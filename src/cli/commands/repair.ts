import type { Answer } from '../../answers/answer.js';
import { defineCommand } from '../command.js';
import { type Cli, plainAnswer } from '../context.js';

async function repair(cli: Cli): Promise<Answer> {
  const locks = await cli.open();
  const report = await locks.repair();
  const where = `${locks.store.kind} store ${locks.store.location}`;
  if (report.damage.length === 0) {
    return plainAnswer(
      'repair',
      'clean',
      [`CLEAN ${where}: nothing to repair (${report.locksKept} locks readable)`],
      { repair: report },
      'nothing to repair',
    );
  }
  return plainAnswer(
    'repair',
    'repaired',
    [
      `REPAIRED ${where}: ${report.locksKept} readable locks kept`,
      ...report.damage.map((line) => `  damage: ${line}`),
      ...report.keptAt.map((at) => `  kept aside: ${at}`),
      `next: ${cli.cmd('list')} shows what the store holds now`,
    ],
    { repair: report },
    `repaired: ${report.damage.join('; ')}`,
  );
}

export const repairCommand = defineCommand({
  name: 'repair',
  args: '',
  summary: 'move damage in the store aside (kept, timestamped) and go on with what can be read',
  flags: [],
  run: (cli) => repair(cli),
});
