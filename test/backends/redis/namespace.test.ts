/**
 * One store per repository (docs/stores.md): a Redis server that new stores find by the automatic probe
 * is shared only by clones of one repository. Real repositories, a real server at the probed port,
 * the real CLI; nothing sets a prefix unless the case says so.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { normaliseRemote, repositoryPrefix } from '../../../src/host/tree.js';
import { CLI, requireBuild } from '../../race/helpers.js';
import { parseOneJson } from '../../cli/cli-harness.js';
import { describeRedis, type RedisServer, startRedis } from './server.js';

let base = '';
let server: RedisServer;

function repo(name: string, origin?: string): string {
  const dir = path.join(base, name);
  mkdirSync(dir, { recursive: true });
  execFileSync('git', ['init', '-q'], { cwd: dir });
  if (origin) execFileSync('git', ['remote', 'add', 'origin', origin], { cwd: dir });
  return realpathSync(dir);
}

function alock(cwd: string, args: string[], agent = 'A') {
  const r = spawnSync(process.execPath, [CLI, ...args], {
    cwd,
    encoding: 'utf8',
    env: {
      PATH: process.env.PATH ?? '',
      HOME: base,
      AGENT_ID: agent,
      AGENT_LOCK_REDIS_PROBE: `127.0.0.1:${server.port}`,
    },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describeRedis('redis namespaces: one store per repository', () => {
  beforeAll(async () => {
    requireBuild();
    base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'alock-ns-')));
    server = await startRedis();
  });
  afterAll(async () => {
    await server?.stop();
    if (base) rmSync(base, { recursive: true, force: true });
  });

  it('two unrelated repositories that find one server by the probe never see each other', async () => {
    const a = repo('alpha', 'git@github.com:acme/alpha.git');
    const b = repo('beta', 'https://github.com/acme/beta');
    expect(alock(a, ['acquire', '@deploy', '-m', 'ship alpha']).code).toBe(0);
    const inB = alock(b, ['acquire', '@deploy'], 'B');
    expect(inB.code, inB.stderr).toBe(0);
    const listB = parseOneJson(alock(b, ['--json', 'list'], 'B').stdout);
    expect(listB.locks.map((lock) => lock.agent_id)).toEqual(['B']);
    // Each names its own namespace, in text and JSON.
    const listA = parseOneJson(alock(a, ['--json', 'list']).stdout) as { store?: { namespace: string } };
    expect(listA.store?.namespace).toMatch(/^agent-lock:alpha-[0-9a-f]{10}$/);
    expect((listB as { store?: { namespace: string } }).store?.namespace).toMatch(/^agent-lock:beta-/);
    expect(alock(a, ['list']).stdout.split('\n')[0]).toContain(`namespace ${listA.store?.namespace}`);
  });

  it('clones of one repository (any URL form of its origin) share one namespace', async () => {
    const one = repo('clone-1', 'git@github.com:Acme/Gamma.git');
    const two = repo('clone-2', 'https://someone@github.com/Acme/Gamma/');
    expect(alock(one, ['acquire', '@merge']).code).toBe(0);
    const other = alock(two, ['acquire', '@merge'], 'B');
    expect(other.code).toBe(1);
    expect(other.stdout).toContain('HELD @merge');
  });

  it('init --shared NAME puts unrelated repositories in one namespace, when asked', async () => {
    const x = repo('shared-x', 'git@example.com:x/one.git');
    const y = repo('shared-y', 'git@example.com:y/two.git');
    expect(alock(x, ['init', '--backend', 'redis', '--shared', 'team-wide']).code).toBe(0);
    expect(alock(y, ['init', '--backend', 'redis', '--shared', 'team-wide']).code).toBe(0);
    expect(alock(x, ['acquire', '@release-train']).code).toBe(0);
    expect(alock(y, ['acquire', '@release-train'], 'B').code).toBe(1);
    // On a file store that holds nothing, a Redis URL or namespace moves it to Redis, never dropped.
    const z = repo('shared-z');
    expect(alock(z, ['--backend', 'file', 'list']).code).toBe(0);
    const moved = alock(z, ['init', '--shared', 'team-wide']);
    expect(moved.stdout).toMatch(/^INITIALIZED redis store .* namespace team-wide$/m);
    expect(alock(z, ['acquire', '@release-train'], 'C').code).toBe(1);
    const bad = alock(y, ['init', '--shared', 'no spaces allowed'], 'B');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^ERROR: alock: the Redis namespace "no spaces allowed" is not valid/);
  });
});

it('derives a namespace from the origin, else the tree name, else the repository folder', () => {
  const tree = { root: '/w/repo', gitCommonDir: null };
  expect(repositoryPrefix(tree, 'shared-tree')).toMatch(/^agent-lock:shared-tree-[0-9a-f]{10}$/);
  expect(repositoryPrefix(tree, null)).toMatch(/^agent-lock:repo-[0-9a-f]{10}$/);
  expect(repositoryPrefix(tree, null)).not.toBe(
    repositoryPrefix({ root: '/w/other/repo', gitCommonDir: null }, null),
  );
});

it('normalises an origin so that every clone agrees, and unrelated ones do not', () => {
  const same = [
    'git@github.com:Acme/Gamma.git',
    'https://someone@github.com/acme/gamma/',
    'ssh://git@GitHub.com:22/Acme/Gamma.git',
    'git@github.com:/Acme//Gamma',
  ];
  for (const url of same) expect(normaliseRemote(url, '/w'), url).toBe('github.com/acme/gamma');
  // scp-like syntax has no port: digits after the colon are a path.
  expect(normaliseRemote('git@host:2222/repo.git', '/w')).toBe('host/2222/repo');
  expect(normaliseRemote('ssh://git@[::1]:2222/x/y.git', '/w')).toBe('[::1]/x/y');
  // Local paths are made absolute, so two repositories' `../x.git` do not collide.
  expect(normaliseRemote('../x.git', '/w/one')).toBe('path:/w/x.git');
  expect(normaliseRemote('../x.git', '/v/two')).toBe('path:/v/x.git');
  expect(normaliseRemote('file:///srv/git/r.git', '/w')).toBe('path:/srv/git/r.git');
});
