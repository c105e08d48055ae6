/**
 * A git guard run that reaps a dead holder thaws that holder's files. The holder is a real process
 * that takes an `enforce` lock (its files made read-only) and is SIGKILLed; the guard runs from a
 * real `git commit` through the installed hook and the built CLI. Before the guard decided through
 * the store, its decision dropped the lock and left the files read-only for good.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openLocks } from '../../src/locks.js';
import { enforceHolder, killHolder } from './enforce-holder.js';

const repoRoot = path.resolve(import.meta.dirname, '../..');
const bin = path.join(repoRoot, 'bin', 'alock.js');

let tmp = '';
let tree = '';
let store = '';

const mode = (file: string) => statSync(file).mode & 0o777;

/** The environment without agent or git settings that could leak in, with the test's store. */
function env(agent: string | null): Record<string, string | undefined> {
  const clean: Record<string, string | undefined> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(AGENT_|CLAUDE_|CODEX_|GIT_|REDIS_URL$|NO_COLOR$)/.test(key)) continue;
    clean[key] = value;
  }
  return {
    ...clean,
    GIT_CONFIG_NOSYSTEM: '1',
    HOME: tmp,
    AGENT_LOCK_REDIS_PROBE: 'off',
    AGENT_LOCK_BACKEND: 'file',
    AGENT_LOCK_DIR: store,
    ...(agent === null ? {} : { AGENT_ID: agent }),
  };
}

function run(file: string, args: string[], agent: string | null = null) {
  const r = spawnSync(file, args, { cwd: tree, env: env(agent) as NodeJS.ProcessEnv, encoding: 'utf8' });
  if (r.error) throw r.error;
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

beforeEach(() => {
  tmp = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'alock-guard-thaw-')));
  tree = path.join(tmp, 'repo');
  store = path.join(tmp, 'store');
  mkdirSync(path.join(tree, 'src/lib'), { recursive: true });
  writeFileSync(path.join(tree, 'src/a.ts'), 'a', { mode: 0o644 });
  writeFileSync(path.join(tree, 'src/lib/b.ts'), 'b', { mode: 0o600 });
  expect(run('git', ['init', '-q', '-b', 'main']).code).toBe(0);
  run('git', ['config', 'user.name', 'Test Agent']);
  run('git', ['config', 'user.email', 'agent@example.com']);
  run('git', ['config', 'commit.gpgsign', 'false']);
  expect(run(process.execPath, [bin, 'hooks', 'install', '--git'], 'installer').code).toBe(0);
});

afterEach(() => {
  rmSync(tmp, { recursive: true, force: true });
});

describe('the git guard and a dead enforce holder', () => {
  it.each([
    ['reaped', false],
    ['orphaned', true],
  ])('thaws the files of a killed holder whose lock the guard finds %s', async (_how, withNote) => {
    const { child, said } = await enforceHolder(tree, store, withNote);
    expect(said).toBe('acquired');
    expect(mode(path.join(tree, 'src/a.ts')) & 0o222).toBe(0);
    await killHolder(child);

    // Another agent commits a new file under the dead holder's scope: only the guard decides.
    writeFileSync(path.join(tree, 'src/new.ts'), 'new');
    expect(run('git', ['add', '--', 'src/new.ts'], 'b').code).toBe(0);
    const commit = run('git', ['commit', '-q', '-m', 'add src/new.ts'], 'b');
    expect(commit.out).toBe('');
    expect(commit.code).toBe(0);

    // Looked at before anything else touches the store: the guard's own decision thawed them.
    expect(mode(path.join(tree, 'src/a.ts'))).toBe(0o644);
    expect(mode(path.join(tree, 'src/lib/b.ts'))).toBe(0o600);
    const locks = await openLocks({ dir: tree, storeDir: store, identity: { agentId: 'c' }, env: {} });
    try {
      const listed = await locks.list();
      if (withNote) {
        expect(listed.locks.map((l) => [l.status, l.frozen_paths])).toEqual([['orphaned', []]]);
      } else {
        expect(listed.locks).toEqual([]);
      }
    } finally {
      await locks.close();
    }
  });
});
