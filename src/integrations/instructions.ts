/**
 * `alock skill install --for agents-md|gemini`: the protocol as a short section of the instructions
 * file an agent reads at the start of every session (AGENTS.md for Codex and the agents that read
 * it, GEMINI.md for Gemini CLI), between markers so that it is added once, updated in place, and
 * never touches the rest of the file.
 */
import { lstatSync, readFileSync, renameSync, rmSync, type Stats, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Answer, CliContext } from '../answers/answer.js';
import { AgentLockError } from '../core/errors.js';

export const INSTRUCTION_FILES: Record<string, string> = { 'agents-md': 'AGENTS.md', gemini: 'GEMINI.md' };

const BEGIN = '<!-- agent-lock:begin (alock skill install keeps this section) -->';
const END = '<!-- agent-lock:end -->';

function section(name: string): string {
  return [
    BEGIN,
    '## Claiming files with agent-lock',
    '',
    'Other agents work in this checkout at the same time. Before you change files, claim them:',
    `\`${name} acquire 'src/auth/**' -m "what you will do"\` (exit 0: yours; exit 1: another agent holds`,
    'them, and the answer names who and why: work on something else, or check again later with',
    `\`${name} check PATH\`). Claim folders or globs for wide changes and \`@name\` for anything that is not`,
    `a file (\`@merge\`, \`@review/pr-12\`). Write progress with \`${name} note SCOPE "done X, next Y"\` and`,
    `\`${name} release SCOPE\` when you are done (\`${name} release --all\` at the end of the task).`,
    'Each sub-agent claims under its own `AGENT_ID`. A hook may refuse an edit or a shell command that',
    'writes a file someone else holds: that refusal is the lock working, not an error to work around.',
    END,
  ].join('\n');
}

function lstatOrNull(p: string): Stats | null {
  try {
    return lstatSync(p);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

export function installInstructions(cli: CliContext, root: string, kind: string): Answer {
  const file = path.join(root, INSTRUCTION_FILES[kind]!);
  const stat = lstatOrNull(file);
  if (stat !== null && !stat.isFile()) {
    throw new AgentLockError(
      'E_USAGE',
      `${file} is not a regular file (a symlink or a folder); left unchanged`,
      {
        hint: 'add the section yourself, or replace the link with a file',
      },
    );
  }
  const text = stat === null ? '' : readFileSync(file, 'utf8');
  const wanted = section(cli.name);
  const begin = text.indexOf(BEGIN);
  const end = text.indexOf(END, begin);
  let next: string;
  if (begin >= 0 && end >= 0) {
    next = text.slice(0, begin) + wanted + text.slice(end + END.length);
  } else if (begin >= 0 || text.includes(END)) {
    throw new AgentLockError(
      'E_USAGE',
      `${file} has one agent-lock marker without the other; left unchanged`,
      {
        hint: `remove the agent-lock lines, then run ${cli.name} skill install again`,
      },
    );
  } else {
    const gap = text === '' ? '' : text.endsWith('\n\n') ? '' : text.endsWith('\n') ? '\n' : '\n\n';
    next = `${text}${gap}${wanted}\n`;
  }
  const extra = { skill: { path: file } };
  const base = { command: 'skill', exitCode: 0, locks: [], conflicts: [], extra };
  if (next === text)
    return { ...base, status: 'unchanged', message: 'unchanged', text: [`UNCHANGED ${file}`] };
  // Written aside and renamed over, keeping the file's mode: an agent never reads half a file.
  const temp = path.join(root, `.${path.basename(file)}.${process.pid}.${Date.now()}.tmp`);
  try {
    writeFileSync(temp, next, { flag: 'wx', mode: stat === null ? 0o644 : stat.mode & 0o777 });
    renameSync(temp, file);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
  return {
    ...base,
    status: 'installed',
    message: `installed the agent-lock section in ${file}`,
    text: [`INSTALLED the agent-lock section in ${file}`, 'next: start a new agent session so it reads it'],
  };
}
