/**
 * Issue 3, the tree key (docs/concepts.md#tree-and-store): two clones of one git repository, at different paths and each
 * with its own store folder (the default, `<git common dir>/agent-locks`), sharing one Redis server
 * and prefix, as agents on two machines would. Driven through the real CLI with different AGENT_IDs:
 * - with the same AGENT_LOCK_TREE their overlapping path scopes block each other (`src/**` against
 *   `src/a.ts`, both ways round);
 * - without it each clone is its own tree, and the same scopes do not block each other;
 * - a resource (`@merge`) is one lock for the whole store either way.
 */
import { execFileSync, spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CLI, requireBuild, uniquePrefix } from '../../race/helpers.js';
import { describeRedis, type RedisServer, startRedis } from './server.js';

interface Envelope {
  status: string;
  ok: boolean;
  exit_code: number;
  locks: { scope: string; agent_id: string; tree: string | null; kind: string }[];
  conflicts: { scope: string; agent_id: string; tree: string | null }[];
  error: { code: string; message: string } | null;
}

interface Run {
  code: number | null;
  stderr: string;
  body: Envelope;
}

const gitEnv = {
  PATH: process.env.PATH ?? '',
  HOME: os.tmpdir(),
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_AUTHOR_NAME: 'test',
  GIT_AUTHOR_EMAIL: 'test@example.invalid',
  GIT_COMMITTER_NAME: 'test',
  GIT_COMMITTER_EMAIL: 'test@example.invalid',
};

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, env: gitEnv, encoding: 'utf8' }).trim();
}

describeRedis('two clones of one repository on one Redis store', () => {
  let server: RedisServer;
  let root: string;

  beforeAll(async () => {
    requireBuild();
    server = await startRedis();
    root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'alock-clones-')));
  });

  /** A repository and two clones of it at different paths (as on two machines), each its own .git. */
  function makeClones(name: string): { a: string; b: string } {
    const origin = path.join(root, name, 'origin');
    mkdirSync(path.join(origin, 'src'), { recursive: true });
    writeFileSync(path.join(origin, 'src', 'a.ts'), 'export const a = 1;\n');
    git(origin, 'init', '-q');
    git(origin, 'add', '.');
    git(origin, 'commit', '-q', '-m', 'initial');
    const clones = {
      a: path.join(root, name, 'machine-a', 'repo'),
      b: path.join(root, name, 'machine-b', 'checkout'),
    };
    for (const clone of [clones.a, clones.b]) {
      mkdirSync(path.dirname(clone), { recursive: true });
      git(root, 'clone', '-q', origin, clone);
      expect(git(clone, 'rev-parse', '--git-common-dir')).toBe('.git');
    }
    return clones;
  }

  afterAll(async () => {
    await server?.stop();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  /** The CLI at `clone`'s top level as `agent`, on the shared server and `prefix`. */
  function alock(
    clone: string,
    agent: string,
    prefix: string,
    argv: string[],
    extra: Record<string, string> = {},
  ): Promise<Run> {
    const child = spawn(process.execPath, [CLI, '--json', ...argv], {
      // From inside the tree: scopes are relative to the current folder, the tree is found by git.
      cwd: clone,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: os.tmpdir(),
        AGENT_ID: agent,
        AGENT_LOCK_REDIS_URL: server.url,
        AGENT_LOCK_REDIS_PREFIX: prefix,
        ...extra,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    // A hang guard, not a timing.
    const guard = setTimeout(() => child.kill('SIGKILL'), 30_000);
    return new Promise((resolve, reject) => {
      child.on('close', (code) => {
        clearTimeout(guard);
        try {
          resolve({ code, stderr, body: JSON.parse(stdout) as Envelope });
        } catch {
          reject(new Error(`alock ${argv.join(' ')} (exit ${code}): ${stdout}${stderr}`));
        }
      });
    });
  }

  /** Each clone's own store folder names the shared server and prefix, and holds no lock file. */
  function expectOwnStores(clones: { a: string; b: string }, prefix: string): void {
    for (const clone of [clones.a, clones.b]) {
      const marker = path.join(clone, '.git', 'agent-locks', 'backend.json');
      expect(existsSync(marker), marker).toBe(true);
      expect(JSON.parse(readFileSync(marker, 'utf8'))).toMatchObject({
        backend: 'redis',
        redis: { url: server.url, prefix },
      });
      expect(existsSync(path.join(clone, '.git', 'agent-locks', 'locks.log'))).toBe(false);
    }
  }

  it('with the same AGENT_LOCK_TREE, overlapping path scopes block each other across the clones', async () => {
    const prefix = uniquePrefix('clones-tree');
    const clones = makeClones('tree');
    const tree = { AGENT_LOCK_TREE: 'shop-repo' };
    const a = (argv: string[]) => alock(clones.a, 'agent-a', prefix, argv, tree);
    const b = (argv: string[]) => alock(clones.b, 'agent-b', prefix, argv, tree);

    const wide = await a(['acquire', 'src/**', '-m', 'refactor']);
    expect(wide.code, wide.stderr).toBe(0);
    expect(wide.body.locks[0]).toMatchObject({ scope: 'src/**', agent_id: 'agent-a', tree: 'shop-repo' });

    const narrow = await b(['acquire', 'src/a.ts']);
    expect(narrow.code).toBe(1);
    expect(narrow.body.status).toBe('held');
    expect(narrow.body.conflicts).toMatchObject([
      { scope: 'src/**', agent_id: 'agent-a', tree: 'shop-repo' },
    ]);
    expect((await b(['check', 'src/lib/new.ts'])).body.status).toBe('held');
    // Files outside the claim are free in the other clone too.
    expect((await b(['check', 'docs/readme.md'])).body.status).toBe('free');

    // The other way round: B holds the file, A cannot take the folder over it.
    expect((await a(['release', 'src/**'])).code).toBe(0);
    const file = await b(['acquire', 'src/a.ts']);
    expect(file.code, file.stderr).toBe(0);
    const over = await a(['acquire', 'src/**']);
    expect(over.code).toBe(1);
    expect(over.body.conflicts).toMatchObject([{ scope: 'src/a.ts', agent_id: 'agent-b' }]);

    // A resource is one lock for the store.
    expect((await a(['acquire', '@merge'])).code).toBe(0);
    const merge = await b(['acquire', '@merge']);
    expect(merge.code).toBe(1);
    expect(merge.body.conflicts).toMatchObject([{ scope: '@merge', agent_id: 'agent-a', tree: null }]);

    // Both clones see the same two locks.
    for (const run of [a, b]) {
      const listed = await run(['list']);
      expect(listed.body.locks.map((lock) => `${lock.agent_id}:${lock.scope}`).sort()).toEqual([
        'agent-a:@merge',
        'agent-b:src/a.ts',
      ]);
    }
  });

  it('without AGENT_LOCK_TREE each clone is its own tree: the same path scopes do not block; @merge still does', async () => {
    const prefix = uniquePrefix('clones-notree');
    const clones = makeClones('notree');
    const a = (argv: string[]) => alock(clones.a, 'agent-a', prefix, argv);
    const b = (argv: string[]) => alock(clones.b, 'agent-b', prefix, argv);

    const wide = await a(['acquire', 'src/**']);
    expect(wide.code, wide.stderr).toBe(0);
    expect(wide.body.locks[0]).toMatchObject({ scope: 'src/**', tree: clones.a });
    const narrow = await b(['acquire', 'src/a.ts']);
    expect(narrow.code, narrow.stderr).toBe(0);
    expectOwnStores(clones, prefix);
    expect(narrow.body.locks[0]).toMatchObject({ scope: 'src/a.ts', agent_id: 'agent-b', tree: clones.b });
    const sameWide = await b(['acquire', 'src/**']);
    // B's own file lock is inside; A's src/** is another tree's: granted.
    expect(sameWide.code, sameWide.stderr).toBe(0);

    // The store is still one: both clones list all three locks, and @merge blocks across them.
    const listed = await a(['list']);
    expect(listed.body.locks.map((lock) => `${lock.agent_id}:${lock.scope}`).sort()).toEqual([
      'agent-a:src/**',
      'agent-b:src/**',
      'agent-b:src/a.ts',
    ]);
    expect((await b(['acquire', '@merge'])).code).toBe(0);
    const merge = await a(['acquire', '@merge']);
    expect(merge.code).toBe(1);
    expect(merge.body.conflicts).toMatchObject([{ scope: '@merge', agent_id: 'agent-b' }]);
    // Released in one clone, free in the other.
    expect((await b(['release', '@merge'])).code).toBe(0);
    expect((await a(['acquire', '@merge'])).code).toBe(0);
  });
});
