/**
 * The git guard in real repositories: the hook is installed, agents take locks through the built
 * `alock` binary, and real `git commit`s run the hook, which runs the built CLI.
 */
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CliContext } from '../../src/answers/answer.js';
import { runCli } from '../../src/cli/run-cli.js';
import { resolveIdentity } from '../../src/core/identity.js';
import { ancestorChain, hostName } from '../../src/host/process.js';
import { installGitHook, parseNameStatus } from '../../src/integrations/git-guard.js';
import { openLocks } from '../../src/locks.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const bin = path.join(repoRoot, 'bin', 'alock.js');

let base: string;

beforeAll(() => {
  // The hook runs the built CLI, which test/global-setup.ts keeps up to date.
  base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'alock-git-')));
});

afterAll(() => {
  rmSync(base, { recursive: true, force: true });
});

/** The environment without agent, agent-session or git settings that could leak in. */
function cleanEnv(extra: Record<string, string | undefined>): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(AGENT_|CLAUDE_|CODEX_|GIT_|REDIS_URL$|NO_COLOR$)/.test(key)) continue;
    env[key] = value;
  }
  return { ...env, GIT_CONFIG_NOSYSTEM: '1', HOME: base, AGENT_LOCK_REDIS_PROBE: 'off', ...extra };
}

interface Repo {
  dir: string;
  /** AGENT_LOCK_DIR, or undefined for the default store (.git/agent-locks). */
  store: string | undefined;
  env(agent: string | null, extra?: Record<string, string | undefined>): Record<string, string | undefined>;
  git(args: string[], agent?: string | null, extra?: Record<string, string>): Run;
  alock(agent: string | null, args: string[]): Run;
  /** Writes the files, stages them, and runs a real `git commit` as `agent`. */
  commit(agent: string | null, files: string[], extra?: Record<string, string>): Run;
  head(): string;
}

interface Run {
  code: number | null;
  out: string;
}

let repos = 0;
function makeRepo(options: { defaultStore?: boolean } = {}): Repo {
  const dir = path.join(base, `repo${++repos}`);
  const store = options.defaultStore ? undefined : path.join(base, `store${repos}`);
  mkdirSync(dir, { recursive: true });
  const env = (agent: string | null, extra: Record<string, string | undefined> = {}) =>
    cleanEnv({ AGENT_LOCK_DIR: store, ...(agent === null ? {} : { AGENT_ID: agent }), ...extra });
  const run = (file: string, args: string[], e: Record<string, string | undefined>): Run => {
    const r = spawnSync(file, args, { cwd: dir, env: e as NodeJS.ProcessEnv, encoding: 'utf8' });
    if (r.error) throw r.error;
    return { code: r.status, out: `${r.stdout}${r.stderr}` };
  };
  const repo: Repo = {
    dir,
    store,
    env,
    git: (args, agent = null, extra = {}) => run('git', args, env(agent, extra)),
    alock: (agent, args) => run(process.execPath, [bin, ...args], env(agent)),
    commit(agent, files, extra = {}) {
      for (const file of files) {
        mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
        writeFileSync(path.join(dir, file), `${file} ${Math.random()}\n`);
      }
      if (files.length > 0) expect(repo.git(['add', '--', ...files]).code).toBe(0);
      return repo.git(['commit', '-q', '-m', `commit ${files.join(', ')}`], agent, extra);
    },
    head: () => repo.git(['rev-parse', '--verify', '-q', 'HEAD']).out.trim(),
  };
  expect(repo.git(['init', '-q', '-b', 'main']).code).toBe(0);
  repo.git(['config', 'user.name', 'Test Agent']);
  repo.git(['config', 'user.email', 'agent@example.com']);
  repo.git(['config', 'commit.gpgsign', 'false']);
  return repo;
}

/** A CLI context for calling installGitHook directly, as the CLI would. */
function contextFor(repo: Repo, agent: string): CliContext & { out: string[] } {
  const env = repo.env(agent);
  const out: string[] = [];
  return {
    out,
    io: { env, cwd: repo.dir, stdout: (t) => out.push(t), stderr: (t) => out.push(t) },
    name: 'alock',
    style: { color: false },
    open: () => openLocks({ dir: repo.dir, env }),
    identity: () => resolveIdentity(env, ancestorChain(process.pid), hostName()),
    globals: () => ({}),
  };
}

async function install(repo: Repo) {
  return installGitHook(contextFor(repo, 'installer'));
}

async function cli(repo: Repo, agent: string, argv: string[], extra: Record<string, string> = {}) {
  let stdout = '';
  let stderr = '';
  const code = await runCli(argv, {
    stdout: (t) => {
      stdout += t;
    },
    stderr: (t) => {
      stderr += t;
    },
    env: repo.env(agent, extra),
    cwd: repo.dir,
  });
  return { code, stdout, stderr };
}

const hooksWired = readFileSync(path.join(repoRoot, 'src/integrations/hooks.ts'), 'utf8').includes(
  'installGitHook',
);

describe('parseNameStatus', () => {
  it('takes both paths of a rename, the new path of a copy, and odd names verbatim', () => {
    const out = [
      'M',
      'a b.ts',
      'R087',
      'old.ts',
      'new.ts',
      'C100',
      'src.ts',
      'copy.ts',
      'D',
      'x\ny',
      'A',
      'ü.ts',
      '',
    ];
    expect(parseNameStatus(out.join('\0'))).toEqual([
      'a b.ts',
      'old.ts',
      'new.ts',
      'copy.ts',
      'x\ny',
      'ü.ts',
    ]);
  });
});

describe('installing the git hook', () => {
  it('writes an executable pre-commit hook, and a second install changes nothing', async () => {
    const repo = makeRepo();
    const first = await install(repo);
    const hook = path.join(repo.dir, '.git', 'hooks', 'pre-commit');
    expect(first).toMatchObject({ command: 'hooks', status: 'installed', exitCode: 0 });
    expect(first.text[0]).toContain(hook);
    expect(statSync(hook).mode & 0o111).toBe(0o111);
    const text = readFileSync(hook, 'utf8');
    expect(text).toContain('guard pre-commit');
    expect(text).toContain(process.execPath);
    const second = await install(repo);
    expect(second).toMatchObject({ status: 'unchanged', exitCode: 0 });
    expect(readFileSync(hook, 'utf8')).toBe(text);
    expect(
      readdirSync(path.dirname(hook)).filter((f) => f.startsWith('pre-commit') && !f.endsWith('.sample')),
    ).toEqual(['pre-commit']);
  });

  it('respects core.hooksPath, creating the folder', async () => {
    const repo = makeRepo();
    repo.git(['config', 'core.hooksPath', '.githooks']);
    const answer = await install(repo);
    expect(answer.status).toBe('installed');
    expect(readFileSync(path.join(repo.dir, '.githooks', 'pre-commit'), 'utf8')).toContain(
      'guard pre-commit',
    );
    expect(existsSync(path.join(repo.dir, '.git', 'hooks', 'pre-commit'))).toBe(false);
    expect(repo.alock('A', ['acquire', 'src/**']).code).toBe(0);
    const refused = repo.commit('B', ['src/x.ts']);
    expect(refused.code).not.toBe(0);
    expect(refused.out).toContain('held by A');
  });

  it('is an error outside a git repository', async () => {
    const dir = path.join(base, 'not-git');
    mkdirSync(dir, { recursive: true });
    const ctx = { ...contextFor(makeRepo(), 'A'), io: { ...contextFor(makeRepo(), 'A').io, cwd: dir } };
    await expect(installGitHook(ctx)).rejects.toMatchObject({ code: 'E_USAGE' });
  });

  it('moves a symlinked hook aside as a link, never writing through it', async () => {
    const repo = makeRepo();
    const target = path.join(base, 'shared-hook.sh');
    writeFileSync(target, '#!/bin/sh\nexit 0\n', { mode: 0o755 });
    const hook = path.join(repo.dir, '.git', 'hooks', 'pre-commit');
    mkdirSync(path.dirname(hook), { recursive: true });
    symlinkSync(target, hook);
    await install(repo);
    expect(readFileSync(target, 'utf8')).toBe('#!/bin/sh\nexit 0\n');
    expect(lstatSync(hook).isSymbolicLink()).toBe(false);
    expect(lstatSync(`${path.dirname(hook)}/pre-commit.local`).isSymbolicLink()).toBe(true);
  });

  it.skipIf(!hooksWired)('is reachable as `alock hooks install --git`', async () => {
    const repo = makeRepo();
    const first = await cli(repo, 'A', ['hooks', 'install', '--git']);
    expect(first.code).toBe(0);
    expect(first.stdout).toContain('INSTALLED');
    const again = await cli(repo, 'A', ['--json', 'hooks', 'install', '--git']);
    expect(JSON.parse(again.stdout)).toMatchObject({ command: 'hooks', status: 'unchanged' });
  });
});

describe('the pre-commit guard with two agents and real commits', () => {
  let repo: Repo;
  beforeAll(async () => {
    repo = makeRepo();
    expect(repo.commit(null, ['README.md']).code).toBe(0);
    await install(repo);
    expect(repo.alock('A', ['acquire', 'src/**', '-m', 'refactor login']).code).toBe(0);
  });

  it("refuses B's commit of a path A holds, naming the path, A and the intent", () => {
    const before = repo.head();
    const r = repo.commit('B', ['src/x.ts']);
    expect(r.code).toBe(1);
    expect(r.out).toContain('HELD commit refused');
    expect(r.out).toMatch(/src\/x\.ts {2}lock src\/\*\* by A .*"refactor login"/);
    expect(r.out).toContain('next: ask A to release');
    expect(repo.head()).toBe(before);
    repo.git(['reset', '-q']);
  });

  it('lets B commit a path nobody holds, quietly', () => {
    const before = repo.head();
    const r = repo.commit('B', ['docs/guide.md']);
    expect(r.code).toBe(0);
    expect(r.out).toBe('');
    expect(repo.head()).not.toBe(before);
  });

  it('lets A commit its own held path, and a sub-agent of A commit inside it', () => {
    expect(repo.commit('A', ['src/x.ts', 'src/old.ts']).code).toBe(0);
    expect(repo.commit('A-kid', ['src/y.ts'], { AGENT_PARENT_ID: 'A' }).code).toBe(0);
  });

  it('refuses a rename out of a held path, and a deletion of one', () => {
    const before = repo.head();
    mkdirSync(path.join(repo.dir, 'lib'), { recursive: true });
    expect(repo.git(['mv', 'src/old.ts', 'lib/new.ts']).code).toBe(0);
    const renamed = repo.commit('B', []);
    expect(renamed.code).toBe(1);
    expect(renamed.out).toContain('src/old.ts  lock src/**');
    repo.git(['reset', '-q', '--hard']);
    expect(repo.git(['rm', '-q', 'src/x.ts']).code).toBe(0);
    const deleted = repo.commit('B', []);
    expect(deleted.code).toBe(1);
    expect(deleted.out).toContain('src/x.ts  lock src/**');
    repo.git(['reset', '-q', '--hard']);
    expect(repo.head()).toBe(before);
  });

  it('judges names with spaces and newlines exactly', () => {
    expect(repo.alock('A', ['acquire', 'notes/my plan.md']).code).toBe(0);
    const spaced = repo.commit('B', ['notes/my plan.md']);
    expect(spaced.code).toBe(1);
    expect(spaced.out).toContain("'notes/my plan.md'  lock notes/my plan.md by A");
    repo.git(['reset', '-q']);
    const newline = repo.commit('B', ['src/two\nlines.ts']);
    expect(newline.code).toBe(1);
    expect(newline.out).toContain('"src/two\\nlines.ts"  lock src/** by A');
    repo.git(['reset', '-q']);
    // Neither name is held here: they commit.
    expect(repo.commit('B', ['misc/my plan.md', 'misc/two\nlines.txt', 'misc/ünï cödé.txt']).code).toBe(0);
  });

  it('with AGENT_LOCK_GUARD=warn lets the commit through with the same words as a warning', () => {
    const before = repo.head();
    const r = repo.commit('B', ['src/z.ts'], { AGENT_LOCK_GUARD: 'warn' });
    expect(r.code).toBe(0);
    expect(r.out).toContain('WARNING commit allowed (AGENT_LOCK_GUARD=warn), but 1 staged path is held by A');
    expect(r.out).toContain('src/z.ts  lock src/** by A');
    expect(repo.head()).not.toBe(before);
  });

  it('refuses the commit on a bad AGENT_LOCK_GUARD value, naming the variable', () => {
    const before = repo.head();
    const r = repo.commit('B', ['docs/other.md'], { AGENT_LOCK_GUARD: 'maybe' });
    expect(r.code).not.toBe(0);
    expect(repo.head()).toBe(before);
    expect(r.out).toContain('ERROR: alock: AGENT_LOCK_GUARD must be warn or refuse (got "maybe")');
    repo.git(['reset', '-q']);
  });

  it('sees what `git commit PATH` commits (a temporary index), not only what was staged', () => {
    writeFileSync(path.join(repo.dir, 'src', 'x.ts'), 'changed by B\n');
    const r = repo.git(['commit', '-q', '-m', 'only x', '--', 'src/x.ts'], 'B');
    expect(r.code).toBe(1);
    expect(r.out).toContain('src/x.ts  lock src/** by A');
    repo.git(['checkout', '-q', '--', 'src/x.ts']);
  });

  it('answers in JSON in-process: held paths, their locks, exit 1', async () => {
    writeFileSync(path.join(repo.dir, 'src', 'q.ts'), 'q\n');
    repo.git(['add', 'src/q.ts']);
    const r = await cli(repo, 'B', ['--json', 'guard', 'pre-commit']);
    expect(r.code).toBe(1);
    const body = JSON.parse(r.stdout);
    expect(body).toMatchObject({ command: 'guard', status: 'held', ok: false, exit_code: 1, mode: 'refuse' });
    expect(body.held).toEqual([{ path: 'src/q.ts', locks: [body.conflicts[0].id] }]);
    expect(body.conflicts[0]).toMatchObject({ agent_id: 'A', scope: 'src/**', intent: 'refactor login' });
    const mine = await cli(repo, 'A', ['--json', 'guard', 'pre-commit']);
    expect(mine.code).toBe(0);
    expect(JSON.parse(mine.stdout)).toMatchObject({ status: 'clear', held: [] });
    repo.git(['reset', '-q']);
  });

  it('is a usage error for an unknown hook', async () => {
    const r = await cli(repo, 'B', ['guard', 'post-commit']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('unknown git hook "post-commit"');
  });
});

describe('the guard without AGENT_ID', () => {
  it('knows the committing agent from above git: its own lock passes, another agent blocks it', async () => {
    const repo = makeRepo({ defaultStore: true });
    await install(repo);
    // This test process is the agent: `alock acquire` and `git commit` both run under it.
    expect(repo.alock(null, ['acquire', 'app/**']).code).toBe(0);
    expect(existsSync(path.join(repo.dir, '.git', 'agent-locks'))).toBe(true);
    expect(repo.commit(null, ['app/main.ts']).code).toBe(0);
    expect(repo.alock('B', ['acquire', 'lib/**', '-m', 'B works here']).code).toBe(0);
    const r = repo.commit(null, ['lib/a.ts']);
    expect(r.code).toBe(1);
    expect(r.out).toContain('held by B');
    expect(r.out).toMatch(/you committed as node-[0-9a-f]{8} \(process\)/);
  });
});

describe('chaining an existing pre-commit hook', () => {
  it('keeps the old hook, runs it first, and its failure still fails the commit', async () => {
    const repo = makeRepo();
    const hooks = path.join(repo.dir, '.git', 'hooks');
    mkdirSync(hooks, { recursive: true });
    const theirs = '#!/bin/sh\necho "their hook ran"\n[ -z "$THEIR_EXIT" ] || exit "$THEIR_EXIT"\n';
    writeFileSync(path.join(hooks, 'pre-commit'), theirs);
    chmodSync(path.join(hooks, 'pre-commit'), 0o755);
    const answer = await install(repo);
    expect(answer.status).toBe('installed');
    expect(answer.text.join('\n')).toContain('pre-commit.local');
    expect(readFileSync(path.join(hooks, 'pre-commit.local'), 'utf8')).toBe(theirs);
    expect((await install(repo)).status).toBe('unchanged');
    expect(readFileSync(path.join(hooks, 'pre-commit.local'), 'utf8')).toBe(theirs);

    const failing = repo.commit('B', ['free.txt'], { THEIR_EXIT: '3' });
    expect(failing.code).not.toBe(0);
    expect(failing.out).toContain('their hook ran');
    expect(repo.head()).toBe('');

    const passing = repo.commit('B', ['free.txt']);
    expect(passing.code).toBe(0);
    expect(passing.out).toContain('their hook ran');

    expect(repo.alock('A', ['acquire', 'src/**']).code).toBe(0);
    const held = repo.commit('B', ['src/a.ts']);
    expect(held.code).toBe(1);
    expect(held.out).toContain('their hook ran');
    expect(held.out).toContain('held by A');
  });
});

describe('the guard and claims on edit', () => {
  it("refuses another agent's commit of a file an agent's edit claimed, and lets the claimer commit it", async () => {
    const repo = makeRepo();
    expect(repo.commit(null, ['README.md']).code).toBe(0);
    await install(repo);
    // A's harness hook claims the file as A edits it (no alock acquire anywhere).
    const hook = spawnSync(process.execPath, [bin, 'hooks', 'claude-pre-tool-use'], {
      cwd: repo.dir,
      env: repo.env('A') as NodeJS.ProcessEnv,
      encoding: 'utf8',
      input: JSON.stringify({
        session_id: 'guard-claim-1',
        hook_event_name: 'PreToolUse',
        tool_name: 'Write',
        tool_input: { file_path: path.join(repo.dir, 'src', 'claimed.ts'), content: 'x' },
        cwd: repo.dir,
      }),
    });
    expect(hook.status).toBe(0);
    expect(hook.stdout).toBe('');
    const before = repo.head();
    const refused = repo.commit('B', ['src/claimed.ts']);
    expect(refused.code).toBe(1);
    expect(refused.out).toMatch(/src\/claimed\.ts .*by A .*"editing \(Write\)"/);
    expect(repo.head()).toBe(before);
    repo.git(['reset', '-q']);
    expect(repo.commit('A', ['src/claimed.ts']).code).toBe(0);
  });
});
