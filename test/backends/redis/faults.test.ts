/**
 * Issue 3, "How it must be shown": the Redis store under faults, with a real redis-server and real
 * processes (never a mock).
 * (a) the server is SIGKILLed and restarted empty mid-run: fences keep growing past every fence
 *     granted before, a holder's renew with its token answers `expired` (never a silent revival),
 *     and a handle that held a lease keeps working (it reconnects and resyncs on its own);
 * (b) the server is paused (SIGSTOP) during an acquire: the CLI exits 2 with one ERROR line naming
 *     the URL, the library rejects with E_BACKEND_UNAVAILABLE; once the server resumes, nothing of
 *     the abandoned decision was written (the script's time window refuses the queued commit);
 * (c) clients SIGKILLed at random moments while they acquire, note and release: the store answers,
 *     keeps no active lock of a dead holder after the next decision, and every scope can be taken.
 * Timings are hang guards only; the figures observed are printed, never asserted tightly.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { AgentLockError } from '../../../src/core/errors.js';
import { type Locks, openLocks } from '../../../src/index.js';
import {
  CLI,
  type LockBrief,
  readRedisStore,
  requireBuild,
  sleep,
  startWorkers,
  uniquePrefix,
  type Worker,
  churnPool,
} from '../../race/helpers.js';
import { describeRedis, type RedisServer, startRedis } from './server.js';
import { CHURN_SCOPES } from '../../race/fixtures/churn-scopes.mjs';

interface CliRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Runs `alock` as a real process; past `guardMs` it is SIGKILLed (a hang guard, not a timing). */
function alock(
  argv: string[],
  options: { cwd: string; env: Record<string, string>; guardMs?: number },
): Promise<CliRun> {
  const started = performance.now();
  const child = spawn(process.execPath, [CLI, ...argv], {
    cwd: options.cwd,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? os.tmpdir(), ...options.env },
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
  const guard = setTimeout(() => child.kill('SIGKILL'), options.guardMs ?? 30_000);
  return new Promise((resolve) => {
    child.on('close', (code, signal) => {
      clearTimeout(guard);
      resolve({ code, signal, stdout, stderr, ms: Math.round(performance.now() - started) });
    });
  });
}

/** How many Lua scripts the server has run (EVALSHA and EVAL), from INFO commandstats. */
async function scriptRuns(url: string): Promise<number> {
  const { Redis } = await import('ioredis');
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await client.connect();
    const info = await client.info('commandstats');
    let calls = 0;
    for (const match of info.matchAll(/^cmdstat_(?:evalsha|eval):calls=(\d+)/gm)) calls += Number(match[1]);
    return calls;
  } finally {
    client.disconnect();
  }
}

describeRedis('redis store under faults (real server, real processes)', () => {
  const roots: string[] = [];
  const servers: RedisServer[] = [];
  let handles: Locks[] = [];
  const workers: Worker[] = [];

  beforeAll(() => requireBuild());
  afterEach(async () => {
    for (const handle of handles) await handle.close();
    handles = [];
  });
  afterAll(async () => {
    await Promise.all(workers.map((worker) => worker.kill()));
    for (const server of servers) await server.stop();
    for (const root of roots) rmSync(root, { recursive: true, force: true });
  });

  /** A server, a tree, a store folder (for the marker) and a prefix, all this test's own. */
  async function setup(name: string) {
    const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), `alock-faults-${name}-`)));
    roots.push(root);
    const tree = path.join(root, 'tree');
    const store = path.join(root, 'store');
    mkdirSync(tree, { recursive: true });
    const server = await startRedis();
    servers.push(server);
    const prefix = uniquePrefix(name);
    const env = {
      AGENT_LOCK_DIR: store,
      AGENT_LOCK_BACKEND: 'redis',
      AGENT_LOCK_REDIS_URL: server.url,
      AGENT_LOCK_REDIS_PREFIX: prefix,
    };
    const open = async (agentId: string, extra: Record<string, string> = {}) => {
      const handle = await openLocks({ dir: tree, env: { ...env, AGENT_ID: agentId, ...extra } });
      handles.push(handle);
      return handle;
    };
    const cli = (agentId: string, argv: string[], extra: Record<string, string> = {}) =>
      alock(argv, { cwd: tree, env: { ...env, AGENT_ID: agentId, ...extra } });
    const stored = () => readRedisStore(server.url, prefix);
    return { root, tree, store, server, prefix, env, open, cli, stored };
  }

  it('a server killed and restarted empty: fences grow past every earlier one, a token renew answers expired, the handle reconnects', async () => {
    const s = await setup('restart');
    const holder = await s.open('holder');
    const other = await s.open('other');
    const before: number[] = [];
    const lease = await holder.acquire('@lease', { ttl: 600, intent: 'hold across the restart' });
    expect(lease.status).toBe('acquired');
    const token = lease.locks[0]!.token!;
    expect(token).toBeTruthy();
    before.push(lease.locks[0]!.fence);
    const wide = await holder.acquire('src/**');
    expect(wide.status).toBe('acquired');
    before.push(wide.locks[0]!.fence);
    // A burst of grants by two handles and by the CLI, so that fences run ahead of the clock.
    for (let i = 0; i < 15; i += 1) {
      const taken = await other.acquire([`@burst/${i}`, `docs/${i}.md`]);
      expect(taken.status).toBe('acquired');
      before.push(...taken.locks.map((lock) => lock.fence));
      if (i % 2 === 0) expect((await other.release([`@burst/${i}`, `docs/${i}.md`])).status).toBe('released');
    }
    const byCli = await s.cli('cli-before', ['--json', 'acquire', '@cli/before']);
    expect(byCli.code, byCli.stdout + byCli.stderr).toBe(0);
    before.push(...(JSON.parse(byCli.stdout) as { locks: LockBrief[] }).locks.map((lock) => lock.fence));
    // Two churning processes keep acquiring, noting and releasing across the restart.
    const churners = (
      await startWorkers(['churn-a', 'churn-b'], { store: s.store, tree: s.tree, env: s.env })
    ).map((worker) => {
      workers.push(worker);
      return worker;
    });
    for (const worker of churners)
      await worker.ask({ op: 'churn', freshEvery: worker.agentId === 'churn-a' ? 0 : 5 });
    const grantsOf = (worker: Worker, from = 0, to = worker.events.length) =>
      worker.events
        .slice(from, to)
        .flatMap((event) => (event.type === 'grant' ? (event.locks as LockBrief[]) : []));
    while (churners.some((worker) => grantsOf(worker).length < 5)) await sleep(20);
    const oldIds = new Set((await s.stored()).locks.keys());
    expect(oldIds.size).toBeGreaterThan(0);
    const survivors = async () => [...(await s.stored()).locks.keys()].filter((id) => oldIds.has(id));
    const nonChurn = async () =>
      [...(await s.stored()).locks.values()].filter((lock) => !lock.agent_id.startsWith('churn-'));

    await s.server.restart();
    // Once a churner has answered a command on the new server, its later grants are new ones. The
    // marks go round twice: a churner's grants after its second mark come after every other
    // churner's first mark, so after each of their grants from before it.
    for (const worker of churners) expect((await worker.ask({ op: 'list' })).status).toBe('listed');
    for (const round of ['first', 'second']) {
      for (const worker of churners) await worker.ask({ op: 'mark', name: round });
    }
    const markAt = (worker: Worker, name: string) =>
      worker.events.findIndex((event) => event.type === 'mark' && event.name === name);
    // The new server started empty: nothing of the old store survives (the churners already took
    // new locks on it).
    expect(await survivors()).toEqual([]);
    expect(await nonChurn()).toEqual([]);

    // The lease holder's handle, with its cached snapshot of the old store: its renew by token
    // must answer `expired` (the lease is gone; reviving it would hand out an old fence again).
    const renewed = await holder.renew('@lease', { token, ttl: 600 });
    expect(renewed.status).toBe('expired');
    expect(renewed.locks).toEqual([]);
    // So must a renew without the token (the lock, not the caller, is gone), and one by the CLI.
    expect(['expired', 'not_found']).toContain((await holder.renew('src/**')).status);
    const cliRenew = await s.cli('holder', ['--json', 'renew', '@lease', '--token', token]);
    expect(cliRenew.code, cliRenew.stderr).toBe(1);
    expect(JSON.parse(cliRenew.stdout)).toMatchObject({ status: 'expired', ok: false });
    // Nothing was revived by any of those.
    expect(await survivors()).toEqual([]);
    expect(await nonChurn()).toEqual([]);

    // The same handles keep working: they see the new store (none of their old locks) and take new
    // grants, whose fences exceed every fence granted before the restart.
    expect((await holder.mine()).locks).toEqual([]);
    expect((await other.mine()).locks).toEqual([]);
    const after: number[] = [];
    const again = await holder.acquire('@lease', { ttl: 600 });
    expect(again.status).toBe('acquired');
    expect(again.locks[0]!.token).not.toBe(token);
    after.push(again.locks[0]!.fence);
    const otherAfter = await other.acquire(['src/a.ts', '@burst/0']);
    expect(otherAfter.status).toBe('acquired');
    after.push(...otherAfter.locks.map((lock) => lock.fence));
    const cliAfter = await s.cli('cli-after', ['--json', 'acquire', '@cli/after', 'src/**']);
    // src/** conflicts with other's src/a.ts: refused, but the resource alone is granted after.
    expect(cliAfter.code, cliAfter.stdout + cliAfter.stderr).toBe(1);
    const cliAfter2 = await s.cli('cli-after', ['--json', 'acquire', '@cli/after']);
    expect(cliAfter2.code, cliAfter2.stderr).toBe(0);
    after.push(...(JSON.parse(cliAfter2.stdout) as { locks: LockBrief[] }).locks.map((lock) => lock.fence));
    // The churners made progress after the restart; whatever they were doing when the server died
    // failed as unavailable (or went through), never otherwise.
    while (churners.some((worker) => grantsOf(worker, markAt(worker, 'second')).length < 5)) await sleep(20);
    await Promise.all(churners.map((worker) => worker.kill()));
    const between: number[] = [];
    for (const worker of churners) {
      before.push(...grantsOf(worker, 0, markAt(worker, 'first')).map((lock) => lock.fence));
      between.push(
        ...grantsOf(worker, markAt(worker, 'first'), markAt(worker, 'second')).map((lock) => lock.fence),
      );
      after.push(...grantsOf(worker, markAt(worker, 'second')).map((lock) => lock.fence));
      for (const event of worker.events.filter((e) => e.type === 'error')) {
        expect(event.error.code, event.error.message).toBe('E_BACKEND_UNAVAILABLE');
      }
    }
    const maxBefore = Math.max(...before);
    for (const fence of after) expect(fence).toBeGreaterThan(maxBefore);
    const all = [...before, ...between, ...after];
    expect(new Set(all).size).toBe(all.length);
    // The old token proves nothing on the new lease.
    expect((await other.release('@lease', { token })).status).toBe('refused');
    expect((await holder.check('@lease')).status).toBe('mine');
    // What is left: the four locks taken after the restart, and orphans of the killed churners.
    const listed = (await other.list()).locks
      .filter((lock) => lock.status === 'active')
      .map((lock) => `${lock.agent_id}:${lock.scope}`)
      .sort();
    expect(listed).toEqual(['cli-after:@cli/after', 'holder:@lease', 'other:@burst/0', 'other:src/a.ts']);
    const errors = churners.reduce(
      (n, worker) => n + worker.events.filter((e) => e.type === 'error').length,
      0,
    );
    console.log(
      `restart: ${before.length} fences before (max ${maxBefore}), ${after.length} after (min ${Math.min(...after)}); ${errors} churner decisions failed as unavailable during the restart`,
    );
  }, 120_000);

  it('a paused server during a CLI acquire: exit 2, one ERROR line naming the URL; after resume nothing was written', async () => {
    const s = await setup('pause-cli');
    // The store is in use: its marker is written and another agent holds a lock.
    const keep = await s.cli('keeper', ['acquire', '@keep', '-m', 'stays put']);
    expect(keep.code, keep.stderr).toBe(0);
    const storedBefore = await s.stored();
    expect([...storedBefore.locks.values()].map((lock) => lock.scope)).toEqual(['@keep']);

    s.server.pause();
    let text: CliRun;
    let json: CliRun;
    try {
      [text, json] = await Promise.all([
        s.cli('paused-agent', ['acquire', '@paused', '-m', 'while the server sleeps'], {
          AGENT_LOCK_REDIS_TIMEOUT: '1',
        }),
        s.cli('paused-json', ['--json', 'acquire', 'src/**'], { AGENT_LOCK_REDIS_TIMEOUT: '1' }),
      ]);
    } finally {
      s.server.resume();
    }

    // Text: exit 2, nothing on stdout, exactly one line on stderr, naming the URL, no stack.
    expect(text.signal, 'the CLI hung until the guard killed it').toBeNull();
    expect(text.code).toBe(2);
    expect(text.stdout).toBe('');
    const lines = text.stderr.split('\n').filter((line) => line.trim() !== '');
    expect(lines, text.stderr).toHaveLength(1);
    expect(lines[0]).toMatch(/^ERROR: alock: /);
    expect(lines[0]).toContain(s.server.url);
    expect(text.stderr).not.toMatch(/^\s+at /m);
    // JSON: one object on stdout, exit 2, the backend error named.
    expect(json.signal).toBeNull();
    expect(json.code).toBe(2);
    const body = JSON.parse(json.stdout) as {
      ok: boolean;
      exit_code: number;
      error: { code: string; message: string };
    };
    expect(body).toMatchObject({ ok: false, exit_code: 2, error: { code: 'E_BACKEND_UNAVAILABLE' } });
    expect(body.error.message).toContain(s.server.url);
    expect(json.stderr).not.toMatch(/^\s+at /m);

    // Resumed: the store holds what it held, nothing half-written, and another agent takes both.
    const listed = await s.cli('observer', ['--json', 'list']);
    expect(listed.code, listed.stderr).toBe(0);
    const scopes = (JSON.parse(listed.stdout) as { locks: LockBrief[] }).locks.map((lock) => lock.scope);
    expect(scopes).toEqual(['@keep']);
    const storedAfter = await s.stored();
    expect([...storedAfter.locks.keys()]).toEqual([...storedBefore.locks.keys()]);
    const fresh = await s.cli('second', ['acquire', '@paused', 'src/**']);
    expect(fresh.code, fresh.stderr).toBe(0);
    expect(fresh.stdout).toMatch(/^ACQUIRED /);
    console.log(`paused CLI acquire failed after ${text.ms} ms (text) and ${json.ms} ms (json): ${lines[0]}`);
  }, 120_000);

  it('a paused server during a library acquire: E_BACKEND_UNAVAILABLE; the commit queued on the server does not apply on resume', async () => {
    const s = await setup('pause-lib');
    const keeper = await s.open('keeper');
    expect((await keeper.acquire('@keep')).status).toBe('acquired');
    // A warm handle: its snapshot is current, so its acquire sends the commit straight away, and
    // that commit sits in the paused server's socket buffer until it wakes.
    const warm = await s.open('warm', { AGENT_LOCK_REDIS_TIMEOUT: '1' });
    expect((await warm.list()).locks).toHaveLength(1);
    const versionBefore = (await s.stored()).commits.at(-1)!.version;
    const scriptsBefore = await scriptRuns(s.server.url);

    s.server.pause();
    const started = performance.now();
    let failure: unknown;
    try {
      await warm.acquire(['@paused', 'src/**'], { intent: 'abandoned' });
    } catch (error) {
      failure = error;
    }
    const ms = Math.round(performance.now() - started);
    // The client gave up; the server wakes a little later and runs the queued script.
    await sleep(300);
    s.server.resume();

    expect(failure).toBeInstanceOf(AgentLockError);
    expect((failure as AgentLockError).code).toBe('E_BACKEND_UNAVAILABLE');
    expect((failure as AgentLockError).message).toContain(s.server.url);

    // The abandoned commit did reach the server and ran there once it woke (the only script run
    // since the pause: a fresh connection's command is read after the ones already waiting).
    expect(await scriptRuns(s.server.url)).toBe(scriptsBefore + 1);
    const observer = await s.open('observer');
    const listed = await observer.list();
    expect(listed.locks.map((lock) => lock.scope)).toEqual(['@keep']);
    const stored = await s.stored();
    expect([...stored.locks.values()].map((lock) => lock.scope)).toEqual(['@keep']);
    // No commit at all happened since the pause (the script refused it: out of its time window).
    expect(stored.commits.at(-1)!.version).toBe(versionBefore);

    // Another agent takes the scopes; the handle that gave up works again and sees them held.
    const taken = await observer.acquire(['@paused', 'src/**']);
    expect(taken.status).toBe('acquired');
    const retried = await warm.acquire(['@paused']);
    expect(retried.status).toBe('held');
    expect(retried.conflicts.map((lock) => lock.agent_id)).toEqual(['observer']);
    expect((await warm.acquire('@warm-after')).status).toBe('acquired');
    console.log(`paused library acquire rejected after ${ms} ms (AGENT_LOCK_REDIS_TIMEOUT=1)`);
  }, 120_000);

  it('clients SIGKILLed at random moments: the store answers, no active lock of a dead holder survives the next decision, every scope can be taken', async () => {
    const s = await setup('sigkill');
    const DOOMED_SCOPES = ['doomed/a.ts', '@doomed', 'doomed/sub/**'];
    const CHURNERS = 6;
    const KILLS = 30;
    const CLI_KILLS = 12;
    const CLI_LANES = 3;
    const opts = { store: s.store, tree: s.tree, env: s.env };
    const track = (worker: Worker) => {
      workers.push(worker);
      return worker;
    };

    const [survivor] = (await startWorkers(['survivor'], opts)).map(track);
    const held = await survivor!.ask({ op: 'acquire', scopes: ['survivor/**', '@survivor'] });
    expect(held.status).toBe('acquired');
    expect((await survivor!.ask({ op: 'note', scope: 'survivor/**', text: 'still here' })).status).toBe(
      'noted',
    );
    const survivorIds = new Set(held.locks.map((lock) => lock.id));

    const pool = churnPool(track, opts);
    const { grants, errors } = pool;
    grants.push(...held.locks);
    const killed = new Map<string, number>();
    const startChurner = pool.start;
    const harvest = pool.harvest;

    // CLI processes too, each started under a `node` parent of its own (the holder its lock lives
    // with) and SIGKILLed with it a random while after its start: loading, deciding, committing
    // or done. A kill must leave its two-scope lock whole or absent, never anything in between.
    const cliOutcomes = { whole: 0, none: 0 };
    const cliLane = async (lane: number) => {
      for (let i = lane; i < CLI_KILLS; i += CLI_LANES) {
        const argv = [CLI, 'acquire', `@cli/${i}`, `cli/${i}/**`];
        const parent = spawn(
          process.execPath,
          ['-e', `require('node:child_process').spawnSync(process.execPath, ${JSON.stringify(argv)})`],
          {
            cwd: s.tree,
            env: { PATH: process.env.PATH ?? '', ...s.env, AGENT_ID: `cli-${i}` },
            stdio: 'ignore',
            detached: true,
          },
        );
        let done = false;
        const exited = new Promise((resolve) =>
          parent.on('exit', (code) => {
            done = true;
            resolve(code);
          }),
        );
        // A CLI acquire takes some 300 ms on an idle machine, longer beside the churners.
        await sleep(100 + Math.random() * 1400);
        // The group: the parent and the CLI under it (unless both are done already).
        if (!done) {
          try {
            process.kill(-parent.pid!, 'SIGKILL');
          } catch {
            // Exited in between.
          }
        }
        await exited;
        const mine = [...(await s.stored()).locks.values()].filter((lock) => lock.agent_id === `cli-${i}`);
        expect([0, 2], `cli-${i}: all or nothing`).toContain(mine.length);
        if (mine.length === 2) cliOutcomes.whole += 1;
        else cliOutcomes.none += 1;
      }
    };
    const cliKills = Promise.all(Array.from({ length: CLI_LANES }, (_, lane) => cliLane(lane)));

    const t0 = performance.now();
    const phase: string[] = [];
    const mark = (name: string) => phase.push(`${name} ${Math.round(performance.now() - t0)} ms`);
    const churners: (Worker | null)[] = await Promise.all(Array.from({ length: CHURNERS }, startChurner));
    mark('started');
    const refills: Promise<void>[] = [];
    for (let kill = 0; kill < KILLS; kill += 1) {
      let slots = churners.flatMap((worker, index) => (worker === null ? [] : [index]));
      while (slots.length === 0) {
        await sleep(10);
        slots = churners.flatMap((worker, index) => (worker === null ? [] : [index]));
      }
      const index = slots[Math.floor(Math.random() * slots.length)]!;
      const victim = churners[index]!;
      await sleep(Math.random() * 60);
      await victim.kill();
      killed.set(victim.agentId, victim.pid);
      harvest(victim);
      churners[index] = null;
      refills.push(
        startChurner().then((worker) => {
          churners[index] = worker;
        }),
      );
    }
    mark('killed');
    await Promise.all(refills);
    mark('refilled');
    await cliKills;
    mark('cli done');
    // Holders that die holding, all at once with the last churners, so that no decision runs
    // between their deaths and the next one: two plain locks, and one with a note (an orphan).
    const doomed = (await startWorkers(['doomed-plain', 'doomed-noted'], opts)).map(track);
    expect((await doomed[0]!.ask({ op: 'acquire', scopes: ['doomed/a.ts', '@doomed'] })).status).toBe(
      'acquired',
    );
    expect((await doomed[1]!.ask({ op: 'acquire', scopes: ['doomed/sub/**'] })).status).toBe('acquired');
    expect((await doomed[1]!.ask({ op: 'note', scope: 'doomed/sub/**', text: 'half done' })).status).toBe(
      'noted',
    );
    await sleep(50);
    const last = [...churners.map((worker) => worker!), ...doomed];
    await Promise.all(last.map((worker) => worker.kill()));
    for (const worker of last) {
      killed.set(worker.agentId, worker.pid);
      harvest(worker);
    }
    const churnGrants = grants.length - held.locks.length;
    expect(churnGrants, 'the churners must have made progress').toBeGreaterThan(20);
    for (const grant of grants) {
      if (!survivorIds.has(grant.id)) expect([...CHURN_SCOPES, ...DOOMED_SCOPES]).toContain(grant.scope);
    }
    // Contention is an outcome, never an error: no decision of the churners threw.
    expect(errors).toEqual([]);
    const maxBefore = Math.max(...grants.map((lock) => lock.fence));

    // Before any new decision the store may still hold active locks of the dead (nothing reaps
    // on its own); after the next one, none.
    const beforeDecision = await s.stored();
    const deadActive = [...beforeDecision.locks.values()].filter(
      (lock) => killed.has(lock.agent_id) && lock.status === 'active',
    ).length;
    expect(deadActive, 'the doomed holders died holding three locks').toBeGreaterThanOrEqual(3);

    mark('all dead');
    const [fresh] = (await startWorkers(['fresh'], opts)).map(track);
    expect((await fresh!.ask({ op: 'check', scopes: ['@unrelated'] })).status).toBe('free');

    const { locks } = await s.stored();
    let orphans = 0;
    for (const lock of locks.values()) {
      expect(lock.agent_id, `record ${lock.id}`).not.toBe('<unknown>');
      if (survivorIds.has(lock.id)) {
        expect(lock).toMatchObject({ agent_id: 'survivor', status: 'active' });
        continue;
      }
      // Only orphans (dead holders that left notes) remain of the dead: churners, CLI runs (whose
      // holder was killed with them) and the doomed.
      expect(
        killed.has(lock.agent_id) || lock.agent_id.startsWith('cli-'),
        `lock ${lock.scope} of ${lock.agent_id}`,
      ).toBe(true);
      expect(lock.status, `dead holder's ${lock.scope} (${lock.agent_id})`).toBe('orphaned');
      expect(lock.notes.length).toBeGreaterThan(0);
      orphans += 1;
    }

    expect(
      [...locks.values()].some((lock) => lock.agent_id === 'doomed-noted' && lock.status === 'orphaned'),
      'the noted lock of a dead holder is kept as an orphan',
    ).toBe(true);
    expect([...locks.values()].some((lock) => lock.agent_id === 'doomed-plain')).toBe(false);

    // Another agent takes every scope, one at a time (an orphan on the exact scope answers
    // interrupted, and resume takes it, notes and all).
    mark('checked');
    let resumed = 0;
    for (const scope of [...CHURN_SCOPES, ...DOOMED_SCOPES, '@cli/0', 'cli/0/**']) {
      let taken = await fresh!.ask({ op: 'acquire', scopes: [scope] });
      if (taken.status === 'interrupted') {
        taken = await fresh!.ask({ op: 'resume', scope });
        expect(taken.status, scope).toBe('resumed');
        resumed += 1;
      } else {
        expect(taken.status, scope).toBe('acquired');
      }
      for (const lock of taken.locks) expect(lock.fence).toBeGreaterThan(maxBefore);
      grants.push(...taken.locks);
      expect((await fresh!.ask({ op: 'release', scopes: [scope] })).status).toBe('released');
    }
    // The survivor still holds what it held.
    for (const scopes of [['@survivor'], ['survivor/deep/x.ts'], ['survivor/**']]) {
      const blocked = await fresh!.ask({ op: 'acquire', scopes });
      expect(blocked.status, scopes.join(' ')).toBe('held');
      expect(blocked.conflicts.map((lock) => lock.agent_id)).toEqual(['survivor']);
    }
    expect((await survivor!.ask({ op: 'check', scopes: ['survivor/**', '@survivor'] })).status).toBe('mine');
    // No fence was granted twice.
    const fences = grants.map((lock) => lock.fence);
    expect(new Set(fences).size).toBe(fences.length);
    console.log(
      `sigkill: ${KILLS} worker kills + ${CLI_KILLS} CLI kills, ${churnGrants} churn grants, ${deadActive} active locks of the dead before the next decision, ${orphans} orphans after, ${resumed} resumed; CLI runs killed: ${cliOutcomes.whole} after committing, ${cliOutcomes.none} before; ${phase.join(', ')}`,
    );
  }, 180_000);
});
