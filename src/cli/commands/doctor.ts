import type { Answer } from '../../answers/answer.js';
import type { CliContext } from '../../answers/cli-context.js';
import { exitCodeFor } from '../../answers/contract.js';
import { paint } from '../../answers/render.js';
import type { Finding } from '../../doctor/finding.js';
import { defineCommand } from '../command.js';

const LEVEL_WORD = { ok: 'ok', note: 'note', problem: 'PROBLEM' } as const;

function answer(cli: CliContext, found: Finding[], where: string): Answer {
  const problems = found.filter((f) => f.level === 'problem').length;
  const notes = found.filter((f) => f.level === 'note').length;
  const status = problems > 0 ? 'findings' : 'healthy';
  const counts = `${problems} ${problems === 1 ? 'problem' : 'problems'}, ${notes} ${notes === 1 ? 'note' : 'notes'}`;
  const head = problems > 0 ? paint(cli.style, 'red', 'FINDINGS') : paint(cli.style, 'green', 'HEALTHY');
  const text = [`${head} ${counts} (${where})`];
  for (const f of found) {
    const word = LEVEL_WORD[f.level].padEnd(7);
    const shown =
      f.level === 'problem'
        ? paint(cli.style, 'red', word)
        : f.level === 'note'
          ? paint(cli.style, 'yellow', word)
          : word;
    text.push(`  ${shown}  ${f.area.padEnd(8)}  ${f.message}`);
    if (f.fix !== null)
      text.push(`  ${' '.repeat(7)}  ${' '.repeat(8)}  ${f.level === 'problem' ? 'fix' : 'try'}: ${f.fix}`);
  }
  return {
    command: 'doctor',
    status,
    exitCode: exitCodeFor('doctor', status),
    locks: [],
    conflicts: [],
    message: `${status}: ${counts}`,
    text,
    extra: { checks: found },
  };
}

export const doctorCommand = defineCommand({
  name: 'doctor',
  args: '',
  summary: 'check the settings, store, backend, identity, hooks and frozen files, and say how to fix each',
  flags: [],
  run: async (cli) => {
    // The checks (and what they read: git, harness settings, the store's files) load only here.
    const { found, where } = await (await import('../../doctor/doctor.js')).diagnose(cli);
    return answer(cli, found, where);
  },
});
