/**
 * docs/cli.md, written from the contract table that `alock contract`, `--help`, completion and the
 * exit codes come from, so that the reference cannot drift from the program (`npm run docs`
 * rewrites it; a test fails when the committed file differs). Not part of the CLI bundle.
 */
import { ENVIRONMENT, EXIT_CODES, LOCK_FIELDS } from '../answers/contract.js';
import { STATUS_WORD } from '../answers/render.js';
import { type FlagSpec, GLOBAL_FLAGS } from './command.js';
import { COMMANDS, contractDocument } from './contract.js';

const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
const code = (text: string) => `\`${text.replace(/`/g, "'")}\``;

function flagTable(flags: readonly FlagSpec[]): string[] {
  if (flags.length === 0) return [];
  return [
    '| flag | meaning |',
    '|---|---|',
    ...flags.map((f) => `| ${cell(code(f.flags))} | ${cell(f.description)} |`),
    '',
  ];
}

/** An answer as JSON `status` and as the first word of the text answer. */
function answers(statuses: readonly string[]): string {
  return statuses.map((s) => (STATUS_WORD[s] ? `${code(s)} (${STATUS_WORD[s]})` : code(s))).join(', ');
}

/** Answers whose exit code is neither 0 nor 1 (a signal's, a program's), each with its code. */
function others(c: { readonly other?: Readonly<Record<string, string>> }): string {
  return Object.entries(c.other ?? {})
    .map(([status, exit]) => `${answers([status])}: ${exit}`)
    .join('; ');
}

export function contractMarkdown(): string {
  const { json_envelope: envelope, lock_statuses: lockStatuses } = contractDocument('') as {
    json_envelope: string[];
    lock_statuses: string[];
  };
  const out: string[] = [
    '<!-- Generated from the command table in src/cli/contract.ts by `npm run docs`. Do not edit by hand. -->',
    '',
    '# Command-line reference',
    '',
    'Every command, its flags and its answers, as `alock contract` prints them (JSON). What the answers',
    'mean in practice is in [concepts.md](concepts.md); the JSON fields in [json.md](json.md).',
    '',
    '```text',
    'alock [--dir PATH] [--json] [--backend file|redis] COMMAND ...',
    '```',
    '',
    '`agent-lock` is the same program under a second name. `alock --version` (or `-V`) and',
    '`alock help COMMAND` (or `alock COMMAND --help`) work as in most tools.',
    '',
    '## Global flags',
    '',
    ...flagTable(GLOBAL_FLAGS),
    '## Commands',
    '',
    '| command | answers that exit 0 | answers that exit 1 | other answers (exit code) |',
    '|---|---|---|---|',
    ...COMMANDS.map(
      (c) =>
        `| [${c.name}](#${c.name}) | ${cell(answers(c.ok)) || '-'} | ${cell(answers(c.fail)) || '-'} | ${cell(others(c)) || '-'} |`,
    ),
    '',
  ];
  for (const c of COMMANDS) {
    out.push(`### ${c.name}`, '', '```text', `alock ${c.name}${c.args ? ` ${c.args}` : ''}`, '```', '');
    out.push(`${c.summary.charAt(0).toUpperCase()}${c.summary.slice(1)}.`, '');
    if (c.aliases?.length) out.push(`Also spelled: ${c.aliases.map(code).join(', ')}.`, '');
    out.push(...flagTable(c.flags));
    out.push(
      `Answers: exit 0 ${answers(c.ok) || '-'}; exit 1 ${answers(c.fail) || 'none'}${c.other ? `; ${others(c)}` : ''}.`,
      '',
    );
  }
  out.push('## Exit codes', '', '| code | meaning |', '|---|---|');
  for (const [key, meaning] of Object.entries(EXIT_CODES)) out.push(`| ${key} | ${cell(meaning)} |`);
  out.push(
    '',
    'An error (exit 2) prints one line on stderr, `ERROR: alock: <what happened> (<what to do>)`, and',
    'changes nothing; with `--json` it is the `error` of the one JSON object instead.',
    '',
    '## JSON',
    '',
    `With \`--json\` every command prints exactly one object with the fields ${envelope.map(code).join(', ')}`,
    '(plus fields of its own, such as `waiting` for `list` or `checks` for `doctor`).',
    `A lock has the fields ${LOCK_FIELDS.map(code).join(', ')}; its \`status\` is one of ${lockStatuses.map(code).join(', ')}.`,
    '',
    '## Environment',
    '',
    ENVIRONMENT.map(code).join(', '),
    '',
    'See [configuration](concepts.md#configuration) for what each one does and its default.',
    '',
  );
  return out.join('\n');
}
