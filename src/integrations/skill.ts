/**
 * `alock skill path|install`: the bundled SKILL.md that teaches an agent the protocol, copied into the
 * folder its agent reads skills from. A copy never goes through a symlink and never silently replaces
 * a different file.
 */
import { type Stats, existsSync, lstatSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Answer, CliContext } from '../answers/answer.js';
import type { StatusOf } from '../answers/contract.js';
import { AgentLockError } from '../core/errors.js';
import { makeDirs } from '../host/make-dirs.js';
import { findTree } from '../host/tree.js';
import { INSTRUCTION_FILES, installInstructions } from './instructions.js';

const SKILL_NAME = 'agent-lock';

/** Where each agent reads a repository's skills from (relative to the tree root). */
const SKILLS_FOLDER: Record<string, string> = {
  claude: '.claude/skills',
  // Codex scans `.agents/skills` from the working folder up to the repository root.
  codex: '.agents/skills',
};

/**
 * The bundled SKILL.md: found upward from this module, so it resolves from src/integrations/ (vitest),
 * from dist/ (the bundled CLI and its chunks) and from an installed package alike.
 */
export function bundledSkillPath(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    const candidate = path.join(dir, 'assets', 'skill', 'SKILL.md');
    if (existsSync(candidate)) return candidate;
    const parent = path.dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  throw new AgentLockError('E_INTERNAL', 'the bundled assets/skill/SKILL.md is missing from this install', {
    hint: 'reinstall agent-lock',
  });
}

function answer(
  status: StatusOf<'skill'>,
  text: string[],
  message: string,
  extra: Record<string, unknown>,
): Answer {
  return { command: 'skill', status, exitCode: 0, locks: [], conflicts: [], message, text, extra };
}

function lstatOrNull(p: string): Stats | null {
  try {
    return lstatSync(p);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

/** The skill file to write: `<skills folder>/agent-lock/SKILL.md`. */
function targetFile(cli: CliContext, opts: Record<string, unknown>): string {
  const agent = typeof opts.for === 'string' ? opts.for : 'claude';
  const folder = SKILLS_FOLDER[agent];
  if (folder === undefined) {
    throw new AgentLockError(
      'E_USAGE',
      `--for must be claude, codex, agents-md or gemini (got ${JSON.stringify(agent)})`,
      {
        hint: 'or --into DIR for another folder',
      },
    );
  }
  if (typeof opts.into === 'string') {
    if (opts.into.trim() === '')
      throw new AgentLockError('E_USAGE', '--into is empty', {
        hint: 'name the skills folder, e.g. --into ~/.claude/skills',
      });
    return path.join(path.resolve(cli.io.cwd, opts.into), SKILL_NAME, 'SKILL.md');
  }
  const start = path.resolve(cli.io.cwd, cli.globals().dir ?? '.');
  let root: string;
  try {
    root = findTree(start).root;
  } catch (error) {
    throw new AgentLockError('E_USAGE', `the folder ${start} does not exist or cannot be read`, {
      cause: error,
      hint: 'run it inside the tree, or pass --dir or --into',
    });
  }
  return path.join(root, folder, SKILL_NAME, 'SKILL.md');
}

function install(cli: CliContext, opts: Record<string, unknown>): Answer {
  const source = bundledSkillPath();
  const content = readFileSync(source, 'utf8');
  const target = targetFile(cli, opts);
  const folder = path.dirname(target);
  // A symlinked skill (or skill folder) points at someone's own copy, often in another repository:
  // writing through it would change that copy, replacing it would silently unlink it. --force neither.
  for (const p of [folder, target]) {
    if (lstatOrNull(p)?.isSymbolicLink()) {
      throw new AgentLockError('E_USAGE', `${p} is a symlink; not replacing it`, {
        hint: 'remove the link yourself, or pass --into another folder',
      });
    }
  }
  const existing = lstatOrNull(target);
  if (existing !== null && !existing.isFile()) {
    throw new AgentLockError('E_USAGE', `${target} exists and is not a regular file`, {
      hint: 'move it away, or pass --into another folder',
    });
  }
  const extra = { skill: { path: target, source } };
  if (existing !== null) {
    if (readFileSync(target, 'utf8') === content) {
      return answer('unchanged', [`UNCHANGED ${target} (already the bundled skill)`], 'unchanged', extra);
    }
    if (opts.force !== true) {
      throw new AgentLockError('E_USAGE', `${target} exists and differs from the bundled skill`, {
        hint: 'pass --force to replace it',
      });
    }
  }
  makeDirs(folder);
  // Written aside and renamed over: a reader (an agent loading skills) never sees half a file.
  const temp = path.join(folder, `.SKILL.md.${process.pid}.${Date.now()}.tmp`);
  try {
    writeFileSync(temp, content, { flag: 'wx', mode: 0o644 });
    renameSync(temp, target);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
  const verb = existing === null ? 'INSTALLED' : 'REPLACED';
  return answer(
    'installed',
    [`${verb} ${target}`, 'next: start a new agent session so it loads the skill'],
    `installed ${target}`,
    extra,
  );
}

export async function skillAction(
  cli: CliContext,
  action: string,
  opts: Record<string, unknown>,
): Promise<Answer> {
  if (action === 'path') {
    const file = bundledSkillPath();
    return answer('path', [file], file, { skill: { path: file } });
  }
  if (action === 'install' && typeof opts.for === 'string' && opts.for in INSTRUCTION_FILES) {
    if (opts.into !== undefined || opts.force !== undefined) {
      throw new AgentLockError('E_USAGE', `--for ${opts.for} takes neither --into nor --force`, {
        hint: 'it updates its own section of the file at the tree root in place',
      });
    }
    const start = path.resolve(cli.io.cwd, cli.globals().dir ?? '.');
    let root: string;
    try {
      root = findTree(start).root;
    } catch (error) {
      throw new AgentLockError('E_USAGE', `the folder ${start} does not exist or cannot be read`, {
        cause: error,
        hint: 'run it inside the tree, or pass --dir',
      });
    }
    return installInstructions(cli, root, opts.for);
  }
  if (action === 'install') return install(cli, opts);
  throw new AgentLockError('E_USAGE', `unknown skill action ${JSON.stringify(action)}`, {
    hint: `${cli.name} skill install [--for claude|codex|agents-md|gemini] [--into DIR] [--force], or ${cli.name} skill path`,
  });
}
