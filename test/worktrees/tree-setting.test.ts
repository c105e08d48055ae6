/**
 * AGENT_LOCK_TREE names the tree key clones on several machines share. Set for one agent and not
 * for another in the same checkout, it once put their locks in two trees that never met: both
 * acquired src/a.ts. One checkout is one tree, whatever the variable says (real processes, real git).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { CLI } from '../race/helpers.js';

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

function checkout(): string {
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'alock-tree-setting-')));
  roots.push(root);
  const tree = path.join(root, 'repo');
  mkdirSync(path.join(tree, 'src'), { recursive: true });
  expect(spawnSync('git', ['init', '-q', tree]).status).toBe(0);
  return tree;
}

function alock(tree: string, agent: string, treeName: string | undefined, argv: string[]) {
  const env: Record<string, string | undefined> = {
    ...process.env,
    AGENT_ID: agent,
    AGENT_PARENT_ID: 'none',
    AGENT_LOCK_REDIS_PROBE: 'off',
    AGENT_LOCK_DIR: undefined,
    AGENT_LOCK_TREE: treeName,
  };
  return spawnSync(process.execPath, [CLI, ...argv], { cwd: tree, env, encoding: 'utf8' });
}

it.each([
  ['set for the first agent only', 'shared', undefined],
  ['set for the second agent only', undefined, 'shared'],
  ['set to two names', 'one', 'two'],
])('AGENT_LOCK_TREE %s: the second agent in the same checkout is refused', (_why, first, second) => {
  const tree = checkout();
  expect(alock(tree, 'p1', first, ['acquire', 'src/a.ts']).status).toBe(0);
  const other = alock(tree, 'p2', second, ['acquire', 'src/a.ts']);
  expect(other.stdout.split('\n')[0]).toBe('HELD src/a.ts');
  expect(other.status).toBe(1);
  expect(alock(tree, 'p2', second, ['acquire', 'src/**']).status).toBe(1);
  // Files nobody holds are still free, whatever the setting.
  expect(alock(tree, 'p2', second, ['acquire', 'src/b.ts']).status).toBe(0);
});
