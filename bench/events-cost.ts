// What recording every change as an event costs a decision: bench section (b)'s loop (acquire +
// release of one @resource) on the file store, and (d)'s on Redis, run by this build and by another
// build of agent-lock (the base, e.g. the commit before events) in one process, rounds alternating
// so that machine noise spreads over both. Also the events this build writes per second in that loop.
//
//   git worktree add /tmp/base <commit> && (cd /tmp/base && ln -s "$PWD/node_modules" . && node scripts/build.mjs)
//   npm run build && node bench/bundle.mjs && node node_modules/.cache/agent-lock-bench/events-cost.js /tmp/base
//
// Prints one table per store: ops/s (median of the rounds) for base and this build, and their
// ratio (this / base; 1.00 is no cost). BENCH_QUICK=1 is a fast smoke run. Figures are informative.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import * as head from '../src/index.js';
import { type RedisServer, startRedisServer } from './redis-server.js';

type Library = typeof head;
type Locks = Awaited<ReturnType<Library['openLocks']>>;

const baseDir = process.argv[2];
if (!baseDir) {
  process.stderr.write('usage: events-cost.js BASE_CHECKOUT (a built agent-lock checkout)\n');
  process.exit(2);
}
const quick = process.env.BENCH_QUICK === '1';
const ROUNDS = quick ? 3 : 9;
const ROUND_MS = quick ? 150 : 600;
const WARMUP = quick ? 100 : 1000;

const builds: Record<'base' | 'head', Library> = {
  base: (await import(pathToFileURL(path.join(path.resolve(baseDir), 'dist', 'index.js')).href)) as Library,
  head,
};
const scratch = mkdtempSync(path.join(os.tmpdir(), 'alock-events-cost-'));

function env(extra: Record<string, string>): Record<string, string | undefined> {
  const clean: Record<string, string | undefined> = {};
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('AGENT_')) clean[key] = value;
  return { ...clean, AGENT_LOCK_REDIS_PROBE: 'off', ...extra };
}

async function open(build: Library, name: string, backend: 'file' | 'redis', redisUrl?: string) {
  const tree = path.join(scratch, name, 'tree');
  const store = path.join(scratch, name, 'store');
  mkdirSync(path.join(tree, '.git'), { recursive: true });
  mkdirSync(store, { recursive: true });
  return build.openLocks({
    dir: tree,
    storeDir: store,
    identity: { agentId: 'bench' },
    ...(backend === 'redis' ? { backend: 'redis' as const, redisUrl: redisUrl! } : {}),
    env: env(backend === 'redis' ? { AGENT_LOCK_REDIS_PREFIX: `events-cost-${name}-${process.pid}` } : {}),
  });
}

async function step(locks: Locks) {
  const taken = await locks.acquire('@res');
  if (taken.status !== 'acquired') throw new Error(`acquire: ${taken.status}`);
  const released = await locks.release('@res');
  if (released.status !== 'released') throw new Error(`release: ${released.status}`);
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function compare(backend: 'file' | 'redis', redisUrl?: string) {
  const contenders: { name: string; locks: Locks; rates: number[]; ops: number; ms: number }[] = [];
  for (const name of ['base', 'head'] as const) {
    const locks = await open(builds[name], `${backend}-${name}`, backend, redisUrl);
    for (let i = 0; i < WARMUP; i++) await step(locks);
    contenders.push({ name, locks, rates: [], ops: 0, ms: 0 });
  }
  const headLocks = contenders[1]!.locks;
  // Each acquire and release of this build writes one event: checked by counting a short run's
  // events back from the store (the whole run may write more than a store keeps).
  const before = (await headLocks.events(1))[0]?.id;
  for (let i = 0; i < 200; i++) await step(headLocks);
  const counted = (
    await headLocks.events({ limit: 1000, ...(before === undefined ? {} : { after: before }) })
  ).length;
  if (counted !== 400) throw new Error(`expected 400 events for 200 acquire+release, found ${counted}`);
  for (let r = 0; r < ROUNDS; r++) {
    for (let j = 0; j < contenders.length; j++) {
      const c = contenders[(r + j) % contenders.length]!;
      const start = performance.now();
      let ops = 0;
      while (performance.now() - start < ROUND_MS) {
        await step(c.locks);
        ops += 1;
      }
      const ms = performance.now() - start;
      c.rates.push((ops / ms) * 1000);
      c.ops += ops;
      c.ms += ms;
    }
  }
  const rows = contenders.map((c) => ({ name: c.name, opsPerSec: Math.round(median(c.rates)) }));
  for (const c of contenders) await c.locks.close();
  return {
    backend,
    rows,
    ratio: rows[1]!.opsPerSec / rows[0]!.opsPerSec,
    eventsPerSec: Math.round(2 * rows[1]!.opsPerSec),
  };
}

const results = [await compare('file')];
let server: RedisServer | null = null;
try {
  server = await startRedisServer({ dir: scratch });
  results.push(await compare('redis', server.url));
} catch (error) {
  process.stderr.write(`events-cost: Redis NOT RUN: ${(error as Error).message}\n`);
} finally {
  await server?.stop();
  rmSync(scratch, { recursive: true, force: true });
}
for (const r of results) {
  process.stdout.write(
    `${r.backend}: acquire+release @res, median of ${ROUNDS} alternating rounds of ${ROUND_MS} ms\n` +
      r.rows.map((row) => `  ${row.name.padEnd(5)} ${String(row.opsPerSec).padStart(7)} ops/s\n`).join('') +
      `  ratio head/base ${r.ratio.toFixed(2)}; head wrote ${r.eventsPerSec} events/s (2 per acquire+release, counted)\n`,
  );
}
