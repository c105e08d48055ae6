/**
 * A Redis server found by the probe that later goes away, through the command line (real processes,
 * a real server stopped for good): the first answer names the Redis store the probe chose and how
 * to keep files instead; once the server is gone, `init --backend file --force` goes back to a file
 * store, keeping the old marker aside; it is refused while the server answers and holds locks.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { CLI } from '../../race/helpers.js';
import { describeRedis, startRedis } from './server.js';

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

function alock(tree: string, env: Record<string, string>, argv: string[]) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [CLI, ...argv], {
      cwd: tree,
      env: { ...process.env, AGENT_PARENT_ID: 'none', ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d));
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describeRedis('a Redis store chosen by the probe', () => {
  it('says so on its first answer, and init --backend file --force leaves it once its server is gone', async () => {
    const server = await startRedis();
    const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'alock-probe-gone-')));
    roots.push(root);
    const tree = path.join(root, 'tree');
    const store = path.join(root, 'store');
    mkdirSync(tree, { recursive: true });
    const env = { AGENT_LOCK_DIR: store, AGENT_LOCK_REDIS_PROBE: `127.0.0.1:${server.port}`, AGENT_ID: 'p1' };
    try {
      const first = await alock(tree, env, ['acquire', 'a.ts']);
      expect(first.code).toBe(0);
      expect(first.stdout).toContain(
        `WARNING W_REDIS_PROBED this new store is a Redis store at redis://127.0.0.1:${server.port}, where a server answered the probe; for a file store instead, release its locks and run alock init --backend file`,
      );
      // Told once: the next answer on the same store says nothing of it.
      const second = await alock(tree, env, ['list', '--json']);
      expect(JSON.parse(second.stdout)).toMatchObject({ warnings: [] });
      // While the server answers and the store holds a lock, nothing moves it to files.
      const refused = await alock(tree, env, ['--backend', 'file', 'init', '--force']);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(/^ERROR: alock: the store .* uses redis at .*, not the file backend/);
    } finally {
      await server.stop();
    }
    // Gone: every command says how to go back; init without --force does not.
    const gone = await alock(tree, env, ['list']);
    expect(gone.code).toBe(2);
    expect(gone.stderr).toContain('if the store is gone for good, alock init --backend file --force');
    const plain = await alock(tree, env, ['--backend', 'file', 'init']);
    expect(plain.code).toBe(2);
    expect(readFileSync(path.join(store, 'backend.json'), 'utf8')).toContain('"backend":"redis"');
    const back = await alock(tree, env, ['--backend', 'file', 'init', '--force']);
    expect(back.stderr).toBe('');
    expect(back.stdout).toBe(`INITIALIZED file store ${store}\n`);
    expect(back.code).toBe(0);
    expect(readdirSync(store).filter((f) => f.startsWith('backend.json.redis-gone.'))).toHaveLength(1);
    // A file store from now on, for every agent of the checkout, with no setting.
    const after = await alock(tree, { ...env, AGENT_ID: 'p2' }, ['acquire', 'a.ts']);
    expect(after.code).toBe(0);
    expect(after.stdout).not.toContain('W_REDIS_PROBED');
    expect(existsSync(path.join(store, 'locks.log'))).toBe(true);
  });

  it('refuses --force without --backend file', async () => {
    const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'alock-probe-force-')));
    roots.push(root);
    const r = await alock(
      root,
      { AGENT_LOCK_DIR: path.join(root, 'store'), AGENT_LOCK_REDIS_PROBE: 'off', AGENT_ID: 'p1' },
      ['init', '--force'],
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      'ERROR: alock: --force is for --backend file: it leaves a Redis store that is gone (run alock --backend file init --force)\n',
    );
    expect(existsSync(path.join(root, 'store', 'backend.json'))).toBe(false);
  });
});
