/**
 * bin/alock.js compiles the hook runtime with a V8 code cache kept in the user's cache folder. The
 * cache may only ever save time: a missing, foreign, damaged or unwritable one gives the same
 * answer, and the file that stands afterwards is one V8 accepts.
 */
import { spawnSync } from 'node:child_process';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { describeRedis, redisForSuite } from '../backends/redis/server.js';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const bin = path.join(repo, 'bin', 'alock.js');

let base: string;
let tree: string;
let cacheHome: string;
const cacheDir = () => path.join(cacheHome, 'agent-lock');

beforeAll(() => {
  base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'alock-code-cache-')));
  tree = path.join(base, 'repo');
  mkdirSync(path.join(tree, 'src'), { recursive: true });
  spawnSync('git', ['init', '-q', tree]);
});

afterAll(() => rmSync(base, { recursive: true, force: true }));

beforeEach(() => {
  cacheHome = mkdtempSync(path.join(base, 'cache-'));
});

/**
 * One hook call: `held.ts` is held by another agent, so the answer says whether the runtime that
 * ran was whole. With `accepted`, the process also reports whether V8 took the cache it was given.
 */
function hookCall(env: Record<string, string> = {}) {
  const clean: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!/^(AGENT_|CLAUDE_|CODEX_|REDIS_URL$|XDG_CACHE_HOME$)/.test(key)) clean[key] = value;
  }
  const r = spawnSync(process.execPath, [bin, 'hooks', 'claude-pre-tool-use'], {
    cwd: tree,
    env: { ...clean, XDG_CACHE_HOME: cacheHome, AGENT_LOCK_DIR: path.join(base, 'store'), ...env },
    encoding: 'utf8',
    input: JSON.stringify({
      session_id: 'c0de0001-0000-4000-8000-000000000001',
      hook_event_name: 'PreToolUse',
      tool_name: 'Edit',
      tool_input: { file_path: path.join(tree, 'src', 'held.ts'), old_string: 'a', new_string: 'b' },
      cwd: tree,
    }),
  });
  return r;
}

function expectRefusedByHolder(r: ReturnType<typeof hookCall>) {
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  const answer = JSON.parse(r.stdout) as {
    hookSpecificOutput: { permissionDecision: string; permissionDecisionReason: string };
  };
  expect(answer.hookSpecificOutput.permissionDecision).toBe('deny');
  expect(answer.hookSpecificOutput.permissionDecisionReason).toContain('holder-agent');
}

function cacheFiles(): string[] {
  try {
    return readdirSync(cacheDir()).sort();
  } catch {
    return [];
  }
}

describe("the hook runtime's code cache", () => {
  beforeAll(() => {
    const r = spawnSync(process.execPath, [bin, 'acquire', 'src/held.ts'], {
      cwd: tree,
      env: { ...process.env, AGENT_ID: 'holder-agent', AGENT_LOCK_DIR: path.join(base, 'store') },
      encoding: 'utf8',
    });
    expect(r.status, r.stderr).toBe(0);
  });

  it('is written by the first call and used, unchanged, by the next', () => {
    expectRefusedByHolder(hookCall());
    const files = cacheFiles();
    expect(files).toHaveLength(1);
    expect(files[0]).toMatch(/^hook-v\d+\.\d+\.\d+-.*\.v8$/);
    const file = path.join(cacheDir(), files[0]!);
    const first = statSync(file);
    expect(first.size).toBeGreaterThan(1000);
    expectRefusedByHolder(hookCall());
    // Accepted: the call wrote nothing (a rejected cache is written anew, a new inode).
    const second = statSync(file);
    expect([second.ino, second.mtimeMs]).toEqual([first.ino, first.mtimeMs]);
    expect(cacheFiles()).toEqual(files);
  });

  it('a damaged cache gives the same answer and is replaced by a good one', () => {
    expectRefusedByHolder(hookCall());
    const [name] = cacheFiles();
    const file = path.join(cacheDir(), name!);
    const good = readFileSync(file);
    const flipped = (from: number, to: number, mask: number) => {
      const bad = Buffer.from(good);
      for (let i = from; i < to; i++) bad[i] = bad[i]! ^ mask;
      return bad;
    };
    const half = (good.length - 8) / 2;
    const damaged = [
      // One bit of the second copy: V8 would take it as it is (Node 20 checks no checksum).
      flipped(good.length - 100, good.length - 99, 0x01),
      // Every byte of the first copy after its header turned over: V8 crashed on such a cache.
      flipped(8 + 64, 8 + half, 0x5a),
      good.subarray(0, good.length - 1), // cut short
      Buffer.alloc(0), // emptied
      Buffer.from('not a cache at all'),
    ];
    for (const bad of damaged) {
      writeFileSync(file, bad);
      expectRefusedByHolder(hookCall());
      const after = readFileSync(file);
      expect(after.equals(bad)).toBe(false);
      expect(after.length).toBeGreaterThan(1000);
    }
  });

  it('a cache folder that cannot be written only costs the compile', () => {
    // XDG_CACHE_HOME is a file: no folder can be made under it.
    const blocked = path.join(base, 'not-a-folder');
    writeFileSync(blocked, 'x');
    cacheHome = blocked;
    expectRefusedByHolder(hookCall());
    expect(readFileSync(blocked, 'utf8')).toBe('x');
  });

  it('caches of other builds are removed when a new one is written; off writes none', () => {
    mkdirSync(cacheDir(), { recursive: true });
    writeFileSync(path.join(cacheDir(), 'hook-v0.0.0-x64-1-1-1.v8'), 'old');
    writeFileSync(path.join(cacheDir(), 'unrelated.txt'), 'keep');
    expectRefusedByHolder(hookCall());
    const files = cacheFiles();
    expect(files).toHaveLength(2);
    expect(files).toContain('unrelated.txt');
    expect(files.some((f) => f.startsWith('hook-v0.0.0'))).toBe(false);

    cacheHome = mkdtempSync(path.join(base, 'cache-off-'));
    expectRefusedByHolder(hookCall({ AGENT_LOCK_HOOK_CODE_CACHE: 'off' }));
    expect(cacheFiles()).toEqual([]);
  });

  it('a bad setting is refused in one line, exit 2, and writes nothing', () => {
    const r = hookCall({ AGENT_LOCK_HOOK_CODE_CACHE: 'yes' });
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      'ERROR: alock: AGENT_LOCK_HOOK_CODE_CACHE must be on or off (got "yes"); fix or unset it\n',
    );
    expect(cacheFiles()).toEqual([]);
  });
});

describeRedis('the code cache of a hook on Redis', () => {
  const server = redisForSuite();
  const redis = () => ({
    AGENT_LOCK_BACKEND: 'redis',
    AGENT_LOCK_REDIS_URL: server().url,
    AGENT_LOCK_REDIS_PREFIX: 'code-cache',
  });
  const claim = (file: string) =>
    spawnSync(process.execPath, [bin, 'hooks', 'claude-pre-tool-use'], {
      cwd: tree,
      env: { ...process.env, XDG_CACHE_HOME: cacheHome, ...redis() },
      encoding: 'utf8',
      input: JSON.stringify({
        session_id: 'c0de0002-0000-4000-8000-000000000002',
        hook_event_name: 'PreToolUse',
        tool_name: 'Edit',
        tool_input: { file_path: path.join(tree, 'src', file), old_string: 'a', new_string: 'b' },
        cwd: tree,
      }),
    });

  it('claims on Redis without loading node:crypto, node:tls, node:dns or node:assert (each waits for its first use)', () => {
    const loaded = path.join(base, 'loaded-modules.cjs');
    writeFileSync(
      loaded,
      "process.on('exit', () => process.stderr.write(JSON.stringify(process.moduleLoadList.filter((m) => /^NativeModule (crypto|tls|dns|assert|perf_hooks)$/.test(m)))));\n",
    );
    const r = spawnSync(process.execPath, ['--require', loaded, bin, 'hooks', 'claude-pre-tool-use'], {
      cwd: tree,
      env: { ...process.env, XDG_CACHE_HOME: cacheHome, ...redis() },
      encoding: 'utf8',
      input: JSON.stringify({
        session_id: 'c0de0003-0000-4000-8000-000000000003',
        hook_event_name: 'PreToolUse',
        tool_name: 'Edit',
        tool_input: { file_path: path.join(tree, 'src', 'no-crypto.ts'), old_string: 'a', new_string: 'b' },
        cwd: tree,
      }),
    });
    expect(r.status).toBe(0);
    expect(r.stdout).toBe('');
    expect(JSON.parse(r.stderr)).toEqual([]);
  });

  it("caches the Redis store's bundle beside the runtime's, and the claims land in Redis", () => {
    for (const file of ['r1.ts', 'r2.ts', 'r3.ts']) {
      const r = claim(file);
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toBe('');
    }
    const files = cacheFiles();
    expect(files.map((f) => f.replace(/-v\d.*$/, ''))).toEqual(['hook', 'redis-store']);
    const before = files.map((f) => statSync(path.join(cacheDir(), f)).ino);
    expect(claim('r4.ts').status).toBe(0);
    expect(cacheFiles().map((f) => statSync(path.join(cacheDir(), f)).ino)).toEqual(before);
    const listed = spawnSync(process.execPath, [bin, 'list', '--json'], {
      cwd: tree,
      env: { ...process.env, ...redis() },
      encoding: 'utf8',
    });
    const scopes = (JSON.parse(listed.stdout) as { locks: { scope: string }[] }).locks.map((l) => l.scope);
    expect(scopes.sort()).toEqual(['src/no-crypto.ts', 'src/r1.ts', 'src/r2.ts', 'src/r3.ts', 'src/r4.ts']);
  });
});
