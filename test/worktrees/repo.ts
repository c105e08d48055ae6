/**
 * A real git repository with real linked worktrees (`git worktree add`), and the CLI run in-process
 * from inside any of them, on the default store (`<git common dir>/agent-locks`, shared by all).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runCli } from '../../src/cli/run-cli.js';
import { type Envelope, parseOneJson } from '../cli/cli-harness.js';

export const gitEnv = {
  PATH: process.env.PATH ?? '',
  HOME: os.tmpdir(),
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_AUTHOR_NAME: 'test',
  GIT_AUTHOR_EMAIL: 'test@example.invalid',
  GIT_COMMITTER_NAME: 'test',
  GIT_COMMITTER_EMAIL: 'test@example.invalid',
};

export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, env: gitEnv, encoding: 'utf8' }).trim();
}

export interface Repo {
  /** The base folder holding everything (removed by cleanup). */
  readonly base: string;
  /** The main worktree, on `main`. */
  readonly main: string;
  /** Adds a linked worktree on a new branch `branch` (from main), at base/<branch>. */
  addWorktree(branch: string): string;
  /** Writes a file in a worktree and commits it there. */
  commit(worktree: string, file: string, text: string): void;
  run(
    cwd: string,
    agent: string,
    argv: string[],
    env?: Record<string, string | undefined>,
    stdin?: string,
  ): Promise<{ code: number; stdout: string; stderr: string }>;
  json(
    cwd: string,
    agent: string,
    argv: string[],
    env?: Record<string, string | undefined>,
  ): Promise<{ code: number; stderr: string; body: Envelope }>;
  cleanup(): void;
}

export function makeRepo(files: Record<string, string> = {}): Repo {
  const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'alock-wt-')));
  const main = path.join(base, 'main');
  mkdirSync(main);
  const seed = { 'src/auth/login.ts': 'export const login = 1;\n', 'docs/readme.md': '# docs\n', ...files };
  for (const [file, text] of Object.entries(seed)) {
    mkdirSync(path.dirname(path.join(main, file)), { recursive: true });
    writeFileSync(path.join(main, file), text);
  }
  git(main, 'init', '-q', '-b', 'main');
  git(main, 'add', '.');
  git(main, 'commit', '-q', '-m', 'initial');
  const run: Repo['run'] = async (cwd, agent, argv, env = {}, stdin) => {
    let stdout = '';
    let stderr = '';
    const code = await runCli(argv, {
      stdout: (t) => {
        stdout += t;
      },
      stderr: (t) => {
        stderr += t;
      },
      env: { ...gitEnv, AGENT_LOCK_REDIS_PROBE: 'off', AGENT_ID: agent, ...env },
      cwd,
      isTTY: false,
      ...(stdin === undefined ? {} : { stdin: async () => stdin }),
    });
    return { code, stdout, stderr };
  };
  return {
    base,
    main,
    addWorktree(branch) {
      const dir = path.join(base, branch);
      git(main, 'worktree', 'add', '-q', '-b', branch, dir, 'main');
      return dir;
    },
    commit(worktree, file, text) {
      mkdirSync(path.dirname(path.join(worktree, file)), { recursive: true });
      writeFileSync(path.join(worktree, file), text);
      git(worktree, 'add', file);
      git(worktree, 'commit', '-q', '-m', `change ${file}`);
    },
    run,
    async json(cwd, agent, argv, env = {}) {
      const r = await run(cwd, agent, ['--json', ...argv], env);
      return { code: r.code, stderr: r.stderr, body: parseOneJson(r.stdout) };
    },
    cleanup() {
      rmSync(base, { recursive: true, force: true });
    },
  };
}
