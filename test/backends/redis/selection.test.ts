/**
 * Which backend a store gets, and how the Redis backend fails: through the built binary (`node
 * bin/alock.js`, each run a process of its own, in a temp git repo whose store is
 * .git/agent-locks) and through openLocks, against real redis-servers.
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { RedisStore } from '../../../src/backends/redis/redis-store.js';
import { openLocks } from '../../../src/locks.js';
import { parseOneJson, STACK_FRAME } from '../../cli/cli-harness.js';
import { describeRedis, freePort, type RedisServer, startRedis } from './server.js';

const repo = fileURLToPath(new URL('../../../', import.meta.url));
const bin = path.join(repo, 'bin', 'alock.js');
const PASSWORD = 'S3cret-pw-4711';
/** A run that takes longer than this is hung: it is killed and the test fails. */
const HANG_MS = 60_000;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

let base: string;
let server: RedisServer;
let secured: RedisServer;
let admin: Redis;
let securedAdmin: Redis;
let securedUrl: string;

/** The caller's environment without any agent-lock or agent-session setting that could leak in. */
function cleanEnv(extra: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(AGENT_|CLAUDE_|CODEX_|REDIS_URL$|NO_COLOR$)/.test(key)) continue;
    env[key] = value;
  }
  // No probe of 127.0.0.1:6379 (whatever runs there) unless a test asks for one.
  const merged: NodeJS.ProcessEnv = { ...env, HOME: base, AGENT_LOCK_REDIS_PROBE: 'off' };
  for (const [key, value] of Object.entries(extra)) {
    if (value === undefined) delete merged[key];
    else merged[key] = value;
  }
  return merged;
}

interface Sandbox {
  readonly tree: string;
  /** <tree>/.git/agent-locks: the store a git repo gets without AGENT_LOCK_DIR. */
  readonly store: string;
  readonly markerFile: string;
  /** A unique key prefix for this test's Redis store. */
  readonly prefix: string;
  marker(): Record<string, unknown> | null;
  run(args: string[], env?: Record<string, string | undefined>, agent?: string): Promise<Run>;
}

function sandbox(): Sandbox {
  const dir = realpathSync(mkdtempSync(path.join(base, 'repo-')));
  mkdirSync(path.join(dir, 'src'), { recursive: true });
  execFileSync('git', ['init', '-q'], { cwd: dir });
  const store = path.join(dir, '.git', 'agent-locks');
  const markerFile = path.join(store, 'backend.json');
  return {
    tree: dir,
    store,
    markerFile,
    prefix: `sel-${randomBytes(6).toString('hex')}`,
    marker: () => (existsSync(markerFile) ? JSON.parse(readFileSync(markerFile, 'utf8')) : null),
    run: (args, env = {}, agent = 'A') => alock(dir, args, { AGENT_ID: agent, ...env }),
  };
}

function alock(cwd: string, args: string[], env: Record<string, string | undefined>): Promise<Run> {
  const started = performance.now();
  const child = spawn(process.execPath, [bin, ...args], {
    cwd,
    env: cleanEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (t: string) => {
    stdout += t;
  });
  child.stderr.setEncoding('utf8').on('data', (t: string) => {
    stderr += t;
  });
  return new Promise((resolve, reject) => {
    const guard = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`alock ${args.join(' ')} hung for ${HANG_MS} ms: ${stdout}${stderr}`));
    }, HANG_MS);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(guard);
      resolve({ code, stdout, stderr, ms: performance.now() - started });
    });
  });
}

/** Exit 2 with exactly one `ERROR: alock: ` line on stderr, nothing on stdout, no stack. */
function expectOneErrorLine(r: Run): string {
  expect(r.code, r.stderr).toBe(2);
  expect(r.stdout).toBe('');
  const lines = r.stderr.split('\n').filter((line) => line !== '');
  expect(lines, r.stderr).toHaveLength(1);
  expect(lines[0]!.startsWith('ERROR: alock: ')).toBe(true);
  expect(STACK_FRAME.test(r.stderr)).toBe(false);
  return lines[0]!;
}

/** Exit 2 with one JSON object on stdout carrying the error code. */
function expectJsonError(r: Run, code: string): string {
  expect(r.code, r.stdout + r.stderr).toBe(2);
  const body = parseOneJson(r.stdout);
  expect(body).toMatchObject({ ok: false, exit_code: 2, error: { code } });
  expect(STACK_FRAME.test(r.stdout + r.stderr)).toBe(false);
  return body.error!.message;
}

async function redisLocks(client: Redis, prefix: string): Promise<{ scope: string; agent_id: string }[]> {
  const all = await client.hgetall(`{${prefix}}:store`);
  // Fields starting with '#' are the store's metadata, not locks.
  return Object.entries(all)
    .filter(([field]) => !field.startsWith('#'))
    .map(([, json]) => JSON.parse(json) as { scope: string; agent_id: string });
}

async function keyCount(client: Redis, prefix: string): Promise<number> {
  return (await client.keys(`{${prefix}}:*`)).length;
}

describeRedis('backend selection and failures of the redis backend', () => {
  beforeAll(async () => {
    base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'alock-sel-')));
    server = await startRedis();
    secured = await startRedis({ args: ['--requirepass', PASSWORD] });
    securedUrl = `redis://:${PASSWORD}@127.0.0.1:${secured.port}`;
    admin = new Redis(server.url);
    securedAdmin = new Redis(securedUrl);
  });
  afterAll(async () => {
    admin?.disconnect();
    securedAdmin?.disconnect();
    await server?.stop();
    await secured?.stop();
    if (base) rmSync(base, { recursive: true, force: true });
  });

  it('a new store with AGENT_LOCK_REDIS_URL uses redis and records the server and prefix', async () => {
    const s = sandbox();
    const env = { AGENT_LOCK_REDIS_URL: server.url, AGENT_LOCK_REDIS_PREFIX: s.prefix };
    const taken = await s.run(['acquire', 'src/a.ts', '-m', 'edit'], env);
    expect(taken.code, taken.stderr).toBe(0);
    expect(taken.stdout.split('\n')[0]).toBe('ACQUIRED src/a.ts');
    expect(s.marker()).toEqual({
      schema: 'agent-lock/store-v1',
      backend: 'redis',
      created_at: expect.any(String),
      redis: { url: server.url, prefix: s.prefix },
    });
    expect(statSync(s.markerFile).mode & 0o777).toBe(0o600);
    expect(await redisLocks(admin, s.prefix)).toMatchObject([{ scope: 'src/a.ts', agent_id: 'A' }]);

    // Later processes follow the marker, with nothing set.
    const list = await s.run(['--json', 'list'], {}, 'B');
    expect(list.code, list.stdout).toBe(0);
    expect(parseOneJson(list.stdout).locks).toMatchObject([{ scope: 'src/a.ts', agent_id: 'A' }]);
    const held = await s.run(['acquire', 'src/a.ts'], {}, 'B');
    expect(held.code).toBe(1);
    expect(held.stdout.split('\n')[0]).toBe('HELD src/a.ts');
    const who = await s.run(['whoami']);
    expect(who.stdout).toContain(`STORE redis ${server.url}`);
    // Nothing went into a file store.
    expect(existsSync(path.join(s.store, 'locks.log'))).toBe(false);
  });

  it('REDIS_URL is used when AGENT_LOCK_REDIS_URL is unset, and AGENT_LOCK_REDIS_URL wins over it', async () => {
    const s = sandbox();
    const refused = `redis://127.0.0.1:${await freePort()}`;
    const r = await s.run(['acquire', '@x'], { REDIS_URL: server.url, AGENT_LOCK_REDIS_PREFIX: s.prefix });
    expect(r.code, r.stderr).toBe(0);
    expect(s.marker()).toMatchObject({ backend: 'redis', redis: { url: server.url, prefix: s.prefix } });

    const t = sandbox();
    const both = await t.run(['acquire', '@x'], {
      REDIS_URL: refused,
      AGENT_LOCK_REDIS_URL: server.url,
      AGENT_LOCK_REDIS_PREFIX: t.prefix,
    });
    expect(both.code, both.stderr).toBe(0);
    expect(t.marker()).toMatchObject({ backend: 'redis', redis: { url: server.url } });
  });

  it('with AGENT_LOCK_REDIS_PROBE=host:port of a running server and no URL, a new store picks redis', async () => {
    const s = sandbox();
    const r = await s.run(['acquire', '@probe'], {
      AGENT_LOCK_REDIS_PROBE: `127.0.0.1:${server.port}`,
      AGENT_LOCK_REDIS_PREFIX: s.prefix,
    });
    expect(r.code, r.stderr).toBe(0);
    expect(s.marker()).toMatchObject({
      backend: 'redis',
      redis: { url: `redis://127.0.0.1:${server.port}`, prefix: s.prefix },
    });
    expect(await redisLocks(admin, s.prefix)).toMatchObject([{ scope: '@probe' }]);
  });

  it('a probe answered by a server that wants a password is not taken: the new store is a file store', async () => {
    const s = sandbox();
    const r = await s.run(['acquire', '@probe'], {
      AGENT_LOCK_REDIS_PROBE: `127.0.0.1:${secured.port}`,
      AGENT_LOCK_REDIS_PREFIX: s.prefix,
    });
    expect(r.code, r.stderr).toBe(0);
    expect(s.marker()).toMatchObject({ backend: 'file' });
    expect(await redisLocks(admin, s.prefix)).toEqual([]);
  });

  it('a store first opened with the URL and password of the probed server uses it, and records it', async () => {
    const s = sandbox();
    const ok = await s.run(['acquire', '@probe'], {
      AGENT_LOCK_REDIS_PROBE: `127.0.0.1:${secured.port}`,
      AGENT_LOCK_REDIS_URL: securedUrl,
      AGENT_LOCK_REDIS_PREFIX: s.prefix,
    });
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout + ok.stderr).not.toContain(PASSWORD);
    expect(s.marker()).toMatchObject({ backend: 'redis', redis: { url: securedUrl, prefix: s.prefix } });
  });

  it('with AGENT_LOCK_REDIS_PROBE=off (or nothing answering) and no URL, a new store is a file store', async () => {
    const s = sandbox();
    const r = await s.run(['acquire', '@file'], { AGENT_LOCK_REDIS_PREFIX: s.prefix });
    expect(r.code, r.stderr).toBe(0);
    expect(s.marker()).toEqual({
      schema: 'agent-lock/store-v1',
      backend: 'file',
      created_at: expect.any(String),
      log: true,
    });
    expect(await keyCount(admin, s.prefix)).toBe(0);
    expect((await s.run(['whoami'])).stdout).toMatch(/^STORE file /m);

    // A probe at a port where nothing listens finds nothing either.
    const t = sandbox();
    const quiet = await t.run(['acquire', '@file'], {
      AGENT_LOCK_REDIS_PROBE: `127.0.0.1:${await freePort()}`,
      AGENT_LOCK_REDIS_PREFIX: t.prefix,
    });
    expect(quiet.code, quiet.stderr).toBe(0);
    expect(t.marker()).toMatchObject({ backend: 'file' });

    // The probe only matters for a new store: a file store stays one when a server appears.
    const later = await s.run(['--json', 'list'], { AGENT_LOCK_REDIS_PROBE: `127.0.0.1:${server.port}` });
    expect(parseOneJson(later.stdout).locks).toMatchObject([{ scope: '@file' }]);
    expect(s.marker()).toMatchObject({ backend: 'file' });
  });

  it('AGENT_LOCK_BACKEND=file (or --backend file) wins over a Redis URL', async () => {
    for (const how of ['env', 'flag'] as const) {
      const s = sandbox();
      const env = {
        AGENT_LOCK_REDIS_URL: server.url,
        AGENT_LOCK_REDIS_PREFIX: s.prefix,
        ...(how === 'env' ? { AGENT_LOCK_BACKEND: 'file' } : {}),
      };
      const r = await s.run([...(how === 'flag' ? ['--backend', 'file'] : []), 'acquire', '@f'], env);
      expect(r.code, r.stderr).toBe(0);
      expect(s.marker(), how).toMatchObject({ backend: 'file' });
      expect(s.marker()).not.toHaveProperty('redis');
      expect(await keyCount(admin, s.prefix)).toBe(0);
      // And the store stays a file store for a process that has only the URL.
      const list = await s.run(['--json', 'list'], { AGENT_LOCK_REDIS_URL: server.url });
      expect(parseOneJson(list.stdout).locks).toMatchObject([{ scope: '@f' }]);
      expect(await keyCount(admin, s.prefix)).toBe(0);
    }
  });

  it('a URL naming a database the server does not have is one error, and nothing is written anywhere', async () => {
    const s = sandbox();
    const r = await s.run(['acquire', '@x'], {
      AGENT_LOCK_REDIS_URL: `${server.url}/99`,
      AGENT_LOCK_REDIS_PREFIX: s.prefix,
    });
    expect(expectOneErrorLine(r)).toMatch(/has no database 99 \(use a database number the server has/);
    expect(s.marker()).toBeNull();
    expect(await keyCount(admin, s.prefix)).toBe(0);
  });

  it('init --backend redis --redis-url records the server; later processes without env use it', async () => {
    const s = sandbox();
    const init = await s.run(['init', '--backend', 'redis', '--redis-url', server.url], {
      AGENT_LOCK_REDIS_PREFIX: s.prefix,
    });
    expect(init.code, init.stderr).toBe(0);
    expect(init.stdout).toBe(`INITIALIZED redis store ${server.url} namespace ${s.prefix}\n`);
    expect(s.marker()).toMatchObject({ backend: 'redis', redis: { url: server.url, prefix: s.prefix } });

    const taken = await s.run(['acquire', 'src/**'], {}, 'A');
    expect(taken.code, taken.stderr).toBe(0);
    expect(await redisLocks(admin, s.prefix)).toMatchObject([{ scope: 'src/**', agent_id: 'A' }]);
    const list = await s.run(['list'], {}, 'B');
    expect(list.stdout.split('\n')[0]).toContain(`(redis store ${server.url} namespace ${s.prefix})`);
    const json = await s.run(['--json', 'init'], {}, 'B');
    expect(json.code).toBe(0);
    expect(parseOneJson(json.stdout)).toMatchObject({
      status: 'initialized',
      store: { backend: 'redis', location: server.url },
    });
    // init again changes nothing: the lock is still there.
    expect(await redisLocks(admin, s.prefix)).toHaveLength(1);
  });

  it('a file store holding locks refuses a switch to redis and keeps its locks; an empty one may switch', async () => {
    const s = sandbox();
    expect((await s.run(['acquire', 'src/a.ts'])).code).toBe(0);
    const before = readFileSync(s.markerFile, 'utf8');
    const env = { AGENT_LOCK_REDIS_PREFIX: s.prefix };

    const refused = await s.run(['init', '--backend', 'redis', '--redis-url', server.url], env);
    const line = expectOneErrorLine(refused);
    expect(line).toContain('uses the file backend');
    expect(line).toContain(`redis at ${server.url} with prefix ${s.prefix}`);
    expect(line).toMatch(/release its locks first, then run init with the new backend/);
    const json = await s.run(['--json', '--backend', 'redis', 'acquire', '@y'], {
      ...env,
      AGENT_LOCK_REDIS_URL: server.url,
    });
    expectJsonError(json, 'E_BACKEND_MISMATCH');

    expect(readFileSync(s.markerFile, 'utf8')).toBe(before);
    expect(await keyCount(admin, s.prefix)).toBe(0);
    const list = await s.run(['--json', 'list'], {}, 'B');
    expect(parseOneJson(list.stdout).locks).toMatchObject([{ scope: 'src/a.ts', agent_id: 'A' }]);

    // Once empty, it may move.
    expect((await s.run(['release', 'src/a.ts'])).code).toBe(0);
    const moved = await s.run(['init', '--backend', 'redis', '--redis-url', server.url], env);
    expect(moved.code, moved.stderr).toBe(0);
    expect(s.marker()).toMatchObject({ backend: 'redis', redis: { url: server.url, prefix: s.prefix } });
    expect((await s.run(['acquire', '@moved'])).code).toBe(0);
    expect(await redisLocks(admin, s.prefix)).toMatchObject([{ scope: '@moved' }]);
  });

  it('a redis store holding locks refuses a switch to file, another prefix or another server', async () => {
    const s = sandbox();
    const other = await startRedis();
    try {
      const env = { AGENT_LOCK_REDIS_URL: server.url, AGENT_LOCK_REDIS_PREFIX: s.prefix };
      expect((await s.run(['acquire', 'src/a.ts'], env)).code).toBe(0);
      const before = readFileSync(s.markerFile, 'utf8');
      const attempts: [string[], Record<string, string>][] = [
        [['--backend', 'file', 'acquire', '@z'], {}],
        [['acquire', '@z'], { AGENT_LOCK_BACKEND: 'file' }],
        [['init', '--backend', 'file'], {}],
        [['acquire', '@z'], { AGENT_LOCK_REDIS_PREFIX: `${s.prefix}-other` }],
        [['acquire', '@z'], { AGENT_LOCK_REDIS_URL: other.url }],
        [['init', '--redis-url', other.url], {}],
      ];
      for (const [args, extra] of attempts) {
        const r = await s.run(args, extra);
        const line = expectOneErrorLine(r);
        expect(line, args.join(' ')).toContain(`uses redis at ${server.url} with prefix ${s.prefix}`);
        expect(line).toContain('run init with the new backend');
        const j = await s.run(['--json', ...args], extra);
        expect(expectJsonError(j, 'E_BACKEND_MISMATCH')).toContain('uses redis at');
      }
      expect(readFileSync(s.markerFile, 'utf8')).toBe(before);
      expect(await redisLocks(admin, s.prefix)).toMatchObject([{ scope: 'src/a.ts', agent_id: 'A' }]);
      expect(await redisLocks(admin, `${s.prefix}-other`)).toEqual([]);
      const otherAdmin = new Redis(other.url);
      expect(await keyCount(otherAdmin, s.prefix)).toBe(0);
      otherAdmin.disconnect();
      expect(existsSync(path.join(s.store, 'locks.log'))).toBe(false);

      // Emptied, it may move to another server.
      expect((await s.run(['release', '--all'])).code).toBe(0);
      const moved = await s.run(['init', '--redis-url', other.url]);
      expect(moved.code, moved.stderr).toBe(0);
      expect(s.marker()).toMatchObject({ redis: { url: other.url, prefix: s.prefix } });
      const back = await s.run(['init', '--backend', 'file']);
      expect(back.code, back.stderr).toBe(0);
      expect(s.marker()).toMatchObject({ backend: 'file' });
    } finally {
      await other.stop();
    }
  });

  it('a URL with a password is never printed, in text or JSON, on success or error', async () => {
    const s = sandbox();
    const env = { AGENT_LOCK_REDIS_PREFIX: s.prefix };
    const display = `redis://127.0.0.1:${secured.port}`;
    const outputs: Run[] = [];
    const ok = async (args: string[], extra: Record<string, string | undefined> = {}, agent = 'A') => {
      const r = await s.run(args, { ...env, ...extra }, agent);
      outputs.push(r);
      return r;
    };

    const init = await ok(['init', '--backend', 'redis', '--redis-url', securedUrl]);
    expect(init.code, init.stderr).toBe(0);
    expect(init.stdout).toBe(`INITIALIZED redis store ${display} namespace ${s.prefix}\n`);
    const initJson = await ok(['--json', 'init', '--redis-url', securedUrl]);
    expect(parseOneJson(initJson.stdout)).toMatchObject({ store: { location: display } });
    // The marker (0600) keeps the password, so later processes need no setting at all.
    expect(s.marker()).toMatchObject({ redis: { url: securedUrl } });
    expect(statSync(s.markerFile).mode & 0o777).toBe(0o600);

    expect((await ok(['acquire', 'src/**', '-m', 'secret work'])).code).toBe(0);
    expect((await ok(['--json', 'acquire', '@j'], { AGENT_LOCK_REDIS_URL: securedUrl })).code).toBe(0);
    const list = await ok(['list'], {}, 'B');
    expect(list.stdout).toContain(`(redis store ${display} namespace ${s.prefix})`);
    expect(parseOneJson((await ok(['--json', 'list'], {}, 'B')).stdout).locks).toHaveLength(2);
    expect((await ok(['whoami'])).stdout).toContain(`STORE redis ${display}`);
    expect((await ok(['--json', 'whoami'])).code).toBe(0);
    expect((await ok(['acquire', 'src/x.ts'], {}, 'B')).code).toBe(1);
    expect((await ok(['--json', 'check', 'src/x.ts'], {}, 'B')).code).toBe(1);
    // The same server without the password in the setting: the marker's password is used.
    const noPw = await ok(['--json', 'list'], { AGENT_LOCK_REDIS_URL: display }, 'B');
    expect(noPw.code, noPw.stdout).toBe(0);
    expect(parseOneJson(noPw.stdout).locks).toHaveLength(2);

    // Errors: a switch refused, a wrong password, a store elsewhere.
    const mismatch = await ok(['acquire', '@m'], { AGENT_LOCK_REDIS_PREFIX: `${s.prefix}-2` });
    expect(expectOneErrorLine(mismatch)).toContain(`redis at ${display} with prefix`);
    const mismatchJson = await ok(['--json', 'acquire', '@m'], { AGENT_LOCK_BACKEND: 'file' });
    expectJsonError(mismatchJson, 'E_BACKEND_MISMATCH');
    const wrongUrl = `redis://:wrong-${PASSWORD}@127.0.0.1:${secured.port}`;
    const t = sandbox();
    for (const json of [false, true]) {
      const wrong = await t.run([...(json ? ['--json'] : []), 'acquire', '@w'], {
        AGENT_LOCK_REDIS_URL: wrongUrl,
        AGENT_LOCK_REDIS_PREFIX: t.prefix,
      });
      outputs.push(wrong);
      if (json) expect(expectJsonError(wrong, 'E_BACKEND_UNAVAILABLE')).toContain(display);
      else expect(expectOneErrorLine(wrong)).toContain(display);
      const initWrong = await t.run([...(json ? ['--json'] : []), 'init', '--redis-url', wrongUrl], {
        AGENT_LOCK_REDIS_PREFIX: t.prefix,
      });
      outputs.push(initWrong);
      expect(initWrong.code).toBe(2);
    }
    expect(t.marker()).toBeNull();

    expect(outputs.length).toBeGreaterThan(15);
    for (const r of outputs) {
      expect(r.stdout + r.stderr).not.toContain(PASSWORD);
      expect(r.stdout + r.stderr).not.toContain(encodeURIComponent(PASSWORD));
    }
  });

  it('init with a rotated password records the new one in the marker', async () => {
    const s = sandbox();
    const env = { AGENT_LOCK_REDIS_PREFIX: s.prefix };
    expect((await s.run(['init', '--backend', 'redis', '--redis-url', securedUrl], env)).code).toBe(0);
    const rotated = `redis://:${PASSWORD}-2@127.0.0.1:${secured.port}`;
    await securedAdmin.config('SET', 'requirepass', `${PASSWORD}-2`);
    try {
      // The marker's old password no longer gets in; init with the new one is enough again.
      expect((await s.run(['list'], env)).code).toBe(2);
      const init = await s.run(['init', '--redis-url', rotated], env);
      expect(init.code, init.stderr).toBe(0);
      expect(s.marker()).toMatchObject({ redis: { url: rotated } });
      expect((await s.run(['list'], env)).code).toBe(0);
      // A password from the environment is used, never written into the marker.
      await securedAdmin.call('ACL', 'SETUSER', 'default', `>${PASSWORD}-3`);
      const fromEnv = `redis://:${PASSWORD}-3@127.0.0.1:${secured.port}`;
      expect((await s.run(['list'], { ...env, AGENT_LOCK_REDIS_URL: fromEnv })).code).toBe(0);
      expect(s.marker()).toMatchObject({ redis: { url: rotated } });
    } finally {
      await securedAdmin.config('SET', 'requirepass', PASSWORD);
    }
  });

  it('a wrong or missing password fails with exit 2, one ERROR line, and writes no marker', async () => {
    for (const [url, reason] of [
      [`redis://:nope@127.0.0.1:${secured.port}`, /unavailable: /],
      [`redis://127.0.0.1:${secured.port}`, /wants a password/],
    ] as const) {
      const s = sandbox();
      const r = await s.run(['acquire', '@p'], {
        AGENT_LOCK_REDIS_URL: url,
        AGENT_LOCK_REDIS_PREFIX: s.prefix,
      });
      const line = expectOneErrorLine(r);
      expect(line).toContain(`the redis server at redis://127.0.0.1:${secured.port} is unavailable`);
      expect(line).toMatch(reason);
      expect(line).not.toContain('nope');
      expect(s.marker()).toBeNull();
      const j = await s.run(['--json', 'list'], {
        AGENT_LOCK_REDIS_URL: url,
        AGENT_LOCK_REDIS_PREFIX: s.prefix,
      });
      expectJsonError(j, 'E_BACKEND_UNAVAILABLE');
      expect(s.marker()).toBeNull();
      expect(await keyCount(securedAdmin, s.prefix)).toBe(0);
    }
  });

  it('a refused port fails with exit 2, one ERROR line, and writes no marker', async () => {
    const s = sandbox();
    const port = await freePort();
    const url = `redis://127.0.0.1:${port}`;
    const r = await s.run(['acquire', '@r'], {
      AGENT_LOCK_REDIS_URL: url,
      AGENT_LOCK_REDIS_PREFIX: s.prefix,
    });
    expect(expectOneErrorLine(r)).toContain(`the redis server at ${url} is unavailable: connection refused`);
    expect(s.marker()).toBeNull();
    const init = await s.run(['init', '--backend', 'redis', '--redis-url', url]);
    expectOneErrorLine(init);
    expect(s.marker()).toBeNull();
    const j = await s.run(['--json', 'acquire', '@r'], { AGENT_LOCK_REDIS_URL: url });
    expect(expectJsonError(j, 'E_BACKEND_UNAVAILABLE')).toContain('connection refused');
    expect(s.marker()).toBeNull();
    // With nothing recorded, the next process with no settings gets a file store as usual.
    expect((await s.run(['acquire', '@r'])).code).toBe(0);
    expect(s.marker()).toMatchObject({ backend: 'file' });
  });

  it('a malformed URL in the environment is E_ENV_INVALID naming the variable', async () => {
    for (const variable of ['AGENT_LOCK_REDIS_URL', 'REDIS_URL']) {
      for (const url of [
        'http://127.0.0.1:6379',
        'redis://127.0.0.1:99999',
        'redis://a:1,b:2',
        'redis://127.0.0.1/x',
      ]) {
        const s = sandbox();
        const r = await s.run(['acquire', '@e'], { [variable]: url });
        const line = expectOneErrorLine(r);
        expect(line, url).toMatch(new RegExp(`^ERROR: alock: ${variable}: `));
        expect(line).toContain(`fix or unset ${variable}`);
        const j = await s.run(['--json', 'acquire', '@e'], { [variable]: url });
        expect(expectJsonError(j, 'E_ENV_INVALID')).toContain(variable);
        expect(s.marker()).toBeNull();
      }
    }
  });

  it('a malformed --redis-url is exit 2 with one line and no marker', async () => {
    for (const url of ['127.0.0.1:6379', 'redis://', 'redis://h:0', `redis://:${PASSWORD}@h:70000`]) {
      const s = sandbox();
      const r = await s.run(['init', '--backend', 'redis', '--redis-url', url]);
      const line = expectOneErrorLine(r);
      expect(line, url).toContain('redis URL');
      expect(line).not.toContain(PASSWORD);
      const j = await s.run(['--json', 'init', '--backend', 'redis', '--redis-url', url]);
      expect(expectJsonError(j, 'E_USAGE')).not.toContain(PASSWORD);
      expect(s.marker()).toBeNull();
    }
  });

  it('a paused server makes an acquire fail with exit 2 ("no answer"); after resume nothing was written', async () => {
    const paused = await startRedis();
    const client = new Redis(paused.url);
    try {
      const s = sandbox();
      const env = { AGENT_LOCK_REDIS_PREFIX: s.prefix };
      const short = { ...env, AGENT_LOCK_REDIS_TIMEOUT: '1' };
      const init = await s.run(['init', '--backend', 'redis', '--redis-url', paused.url], env);
      expect(init.code, init.stderr).toBe(0);
      expect((await s.run(['acquire', '@before'], env)).code).toBe(0);

      const fresh = sandbox();
      paused.pause();
      let failed: Run;
      let json: Run;
      let first: Run;
      try {
        failed = await s.run(['acquire', '@during', '-m', 'while paused'], short);
        json = await s.run(['--json', 'acquire', '@during2'], short);
        // A new store pointed at the paused server is not recorded as a redis store.
        first = await fresh.run(['acquire', '@new'], { ...short, AGENT_LOCK_REDIS_URL: paused.url });
      } finally {
        paused.resume();
      }
      expect(expectOneErrorLine(first)).toContain('no answer');
      expect(fresh.marker()).toBeNull();
      expect(expectOneErrorLine(failed)).toMatch(
        new RegExp(`the redis server at ${paused.url} is unavailable: no answer within 1 s`),
      );
      expect(failed.ms).toBeLessThan(20_000);
      expect(expectJsonError(json, 'E_BACKEND_UNAVAILABLE')).toContain('no answer');
      expect(json.ms).toBeLessThan(20_000);

      // Awake again: the failed acquires left nothing behind.
      const list = await s.run(['--json', 'list'], env, 'B');
      expect(list.code, list.stdout).toBe(0);
      expect(parseOneJson(list.stdout).locks.map((l) => l.scope)).toEqual(['@before']);
      expect((await redisLocks(client, s.prefix)).map((l) => l.scope)).toEqual(['@before']);
      expect((await s.run(['acquire', '@during'], env, 'B')).code).toBe(0);
    } finally {
      client.disconnect();
      await paused.stop();
    }
  });

  it('a commit sent just before the server paused is not applied when it wakes after the client gave up', async () => {
    const paused = await startRedis();
    const client = new Redis(paused.url);
    const dir = realpathSync(mkdtempSync(path.join(base, 'lib-')));
    const prefix = `sel-${randomBytes(6).toString('hex')}`;
    const open = (agentId: string) =>
      openLocks({
        dir,
        env: {},
        identity: { agentId },
        backend: new RedisStore({
          url: paused.url,
          prefix,
          timeoutMs: 1000,
          busyTimeoutMs: 15_000,
          staleMs: 7_200_000,
        }),
      });
    try {
      const a = await open('A');
      // The snapshot is loaded: the next acquire is a single commit, sent at once.
      expect((await a.acquire('@before')).status).toBe('acquired');
      paused.pause();
      let error: unknown;
      try {
        error = await a.acquire('@during').then(
          () => null,
          (e: unknown) => e,
        );
        // The server wakes well after the decision's window closed.
        await new Promise((resolve) => setTimeout(resolve, 1500));
      } finally {
        paused.resume();
      }
      expect(error).toMatchObject({ code: 'E_BACKEND_UNAVAILABLE' });
      expect(String((error as Error).message)).toContain('no answer');
      await a.close();
      // Whatever the server still had queued ran on waking: it must not have taken the lock.
      await client.ping();
      expect((await redisLocks(client, prefix)).map((l) => l.scope)).toEqual(['@before']);
      const b = await open('B');
      expect((await b.list()).locks.map((l) => l.scope)).toEqual(['@before']);
      expect((await b.acquire('@during')).status).toBe('acquired');
      await b.close();
    } finally {
      client.disconnect();
      await paused.stop();
    }
  });

  it('openLocks: redisUrl selects redis for a new store; a malformed one is E_USAGE; a file store refuses', async () => {
    const s = sandbox();
    const env = { AGENT_LOCK_REDIS_PREFIX: s.prefix, AGENT_LOCK_REDIS_PROBE: 'off', HOME: base };
    const locks = await openLocks({ dir: s.tree, env, identity: { agentId: 'L' }, redisUrl: server.url });
    try {
      expect(locks.store.kind).toBe('redis');
      expect(locks.store.location).toBe(server.url);
      expect((await locks.acquire('src/**')).status).toBe('acquired');
    } finally {
      await locks.close();
    }
    expect(s.marker()).toMatchObject({ backend: 'redis', redis: { url: server.url, prefix: s.prefix } });
    expect(await redisLocks(admin, s.prefix)).toMatchObject([{ scope: 'src/**', agent_id: 'L' }]);

    const t = sandbox();
    await expect(
      openLocks({ dir: t.tree, env, identity: { agentId: 'L' }, redisUrl: 'redis://h:0' }),
    ).rejects.toMatchObject({ code: 'E_USAGE' });
    await expect(
      openLocks({ dir: t.tree, env: { ...env, AGENT_LOCK_REDIS_URL: 'nope' }, identity: { agentId: 'L' } }),
    ).rejects.toMatchObject({
      code: 'E_ENV_INVALID',
      message: expect.stringContaining('AGENT_LOCK_REDIS_URL'),
    });
    expect(t.marker()).toBeNull();

    const f = await openLocks({ dir: t.tree, env, identity: { agentId: 'L' } });
    expect(f.store.kind).toBe('file');
    expect((await f.acquire('@held')).status).toBe('acquired');
    await f.close();
    await expect(
      openLocks({ dir: t.tree, env, identity: { agentId: 'L' }, backend: 'redis', redisUrl: server.url }),
    ).rejects.toMatchObject({ code: 'E_BACKEND_MISMATCH' });
    expect(t.marker()).toMatchObject({ backend: 'file' });
  });
});
