/** A real git repository in a temp folder, and `runCli` run in it in-process, for `alock doctor`. */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runCli } from '../../src/cli/run-cli.js';
import { type CliRun, type Envelope, parseOneJson } from '../cli/cli-harness.js';

export interface Check {
  area: string;
  level: 'ok' | 'note' | 'problem';
  code: string;
  message: string;
  fix: string | null;
}

export interface Repo {
  readonly root: string;
  readonly store: string;
  run(argv: string[], env?: Record<string, string | undefined>): Promise<CliRun>;
  doctor(env?: Record<string, string | undefined>): Promise<CliRun & { body: Envelope; checks: Check[] }>;
  cleanup(): void;
}

/** A repository with `files` committed (so git tracks them), and an empty home. */
export function makeRepo(files: string[] = ['src/a.ts', 'src/b.ts']): Repo {
  const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'alock-doctor-')));
  const root = path.join(base, 'repo');
  mkdirSync(root);
  mkdirSync(path.join(base, 'home'));
  const git = (...args: string[]) =>
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], {
      cwd: root,
      stdio: 'ignore',
    });
  git('init', '-q');
  for (const file of files) {
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    writeFileSync(path.join(root, file), `// ${file}\n`);
  }
  if (files.length > 0) {
    git('add', '.');
    git('commit', '-q', '-m', 'files');
  }
  const run = async (argv: string[], env: Record<string, string | undefined> = {}) => {
    let stdout = '';
    let stderr = '';
    const code = await runCli(argv, {
      stdout: (text) => {
        stdout += text;
      },
      stderr: (text) => {
        stderr += text;
      },
      env: {
        PATH: process.env.PATH,
        HOME: path.join(base, 'home'),
        AGENT_ID: 'doc',
        // Only what a test asks for: a server on 6379 must not turn a new store into a Redis one.
        AGENT_LOCK_REDIS_PROBE: 'off',
        ...env,
      },
      cwd: root,
      isTTY: false,
    });
    return { code, stdout, stderr };
  };
  return {
    root,
    store: path.join(root, '.git', 'agent-locks'),
    run,
    async doctor(env = {}) {
      const result = await run(['--json', 'doctor'], env);
      const body = parseOneJson(result.stdout);
      return { ...result, body, checks: body.checks as Check[] };
    },
    cleanup() {
      rmSync(base, { recursive: true, force: true });
    },
  };
}

export const problems = (checks: Check[]) => checks.filter((c) => c.level === 'problem');
export const byCode = (checks: Check[], code: string) => checks.find((c) => c.code === code);
