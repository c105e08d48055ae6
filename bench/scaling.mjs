// Bench section (k) of issue 19, stores that scale with the number of agents. Run alone with
// `node bench/scaling.mjs` (BENCH_QUICK=1 for a short run, --json for one JSON object), or from
// bench/run.mjs, which passes its redis-server. Measured, all in one run:
//   1. N = 1, 2, 4, 8 forked processes (bench/scaling-worker.mjs), each looping acquire+release of
//      a lock no other process wants: its own @resource on agent-lock Redis, on agent-lock's file
//      store (one temp store) and redis-semaphore's Mutex (same server); then its own file path
//      (src/w<i>.ts) in one tree, agent-lock Redis and file. Aggregate ops/s (median of the rounds'
//      sums of each process's rate) and p99 of one acquire+release (all pairs of all rounds).
//      Rounds run every (N, contender) point, the contenders in a different order each time, so
//      that machine noise falls on all of them. The processes stay up for the whole section (each
//      warms up before every point), so the figures hold no process start-up.
//        Redis own @resource at every N / redis-semaphore at that N     target >= 0.8x
//        Redis own file path at N=8 / Redis own @resource at N=8         target >= 0.5x
//        file store own @resource at N=8 / its own at N=1                target >= 0.5x
//        file store own @resource at N=8 / redis-semaphore at N=8        target >= 1.0x
//   2. one client: agent-lock @resource acquire+release (ttl 30 s) against a contract bound, the
//      least a lock with agent-lock's contract costs: one EVALSHA that writes a holder record (JSON
//      of the size of agent-lock's record, a random id and a token hash, made per call) under a
//      lease and advances a fence counter, then one compare-and-delete EVALSHA; beside it the bare
//      bound of run.mjs (d) (SET NX PX + compare-and-delete)         target >= 0.9x the contract
//   3. messages per commit: 8 processes each hold 4 leases (locks.hold, so each listens for
//      changes) and churn acquire+release of other @resources of their own; pub/sub messages the
//      processes receive / commits the store made                     target <= 2
//      redis-server 7.0 has no INFO field that counts deliveries (commandstats counts PUBLISH
//      calls, shown beside, and PUBSUB NUMSUB the subscribers), so each worker counts the messages
//      its connections receive; commits are the store's history entries added (XINFO STREAM), one
//      per commit, checked against the workers' own count (one per acquire, one per release).
//   4. (in run.mjs (f), computed by handoffFloorRatios below) agent-lock Redis whole-round p99 /
//      the floor ring's (target <= 1.25x), and worker CPU per hand-off / the floor's (<= 1.5x);
//      "whole-round" is (f)'s `whole` window: every hand-off of its rounds after the warm-up
// BENCH_QUICK=1: 2 rounds of 0.5 s per point (1 s in all); default 2 rounds of 1.5 s (3 s per point).
// Figures are informative: nothing here fails the build.
import { fork } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { openLocks } from '../dist/index.js';
import { redisServerVersion, startRedisServer } from './redis-server.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const workerScript = path.join(here, 'scaling-worker.mjs');

export const SCALING_TARGETS = {
  redisVsSemaphoreMin: 0.8,
  redisPathVsResourceAt8Min: 0.5,
  fileAt8VsAt1Min: 0.5,
  fileVsSemaphoreAt8Min: 1.0,
  oneClientVsContractMin: 0.9,
  messagesPerCommitMax: 2,
  handoffWholeP99VsFloorMax: 1.25,
  handoffCpuVsFloorMax: 1.5,
};

const WORKER_COUNTS = [1, 2, 4, 8];
const LEASE_MS = 30_000;
const LEASES_HELD = 4;
/** How long the section waits for any worker's answer before it gives up. */
const REPLY_MS = 60_000;

function settingsFor(quick) {
  return quick
    ? { rounds: 2, pointSeconds: 0.5, warmupMs: 150, oneClientSeconds: 0.5, churnSeconds: 1 }
    : { rounds: 2, pointSeconds: 1.5, warmupMs: 400, oneClientSeconds: 1, churnSeconds: 3 };
}

const CONTENDERS = [
  { key: 'redisResource', name: 'agent-lock Redis, own @resource', redis: true },
  { key: 'fileResource', name: 'agent-lock file store, own @resource', redis: false },
  { key: 'semaphore', name: 'redis-semaphore Mutex, own key', redis: true },
  { key: 'redisPath', name: 'agent-lock Redis, own file path', redis: true },
  { key: 'filePath', name: 'agent-lock file store, own file path', redis: false },
];

// ---------------------------------------------------------------- helpers

function percentile(values, p) {
  const sorted = Float64Array.from(values).sort();
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank];
}
const round = (value, digits = 2) => (Number.isFinite(value) ? Number(value.toFixed(digits)) : null);
/** The middle value, or the mean of the middle two (two rounds give their mean, not the lower). */
function median(values) {
  const sorted = Float64Array.from(values).sort();
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A verdict row: figure against target; pass null when it could not be measured. */
function check(label, figure, unit, target, pass) {
  return { label, figure, unit, target, pass: figure === null ? null : pass };
}
const atLeast = (label, figure, min) =>
  check(label, figure, 'x', `>= ${min}x`, figure !== null && figure >= min);
const atMost = (label, figure, max, unit = 'x') =>
  check(label, figure, unit, `<= ${max}${unit}`, figure !== null && figure <= max);
/** A figure shown beside the verdicts, without a target. */
const info = (label, figure) => ({
  label: `(info) ${label}`,
  figure,
  unit: 'x',
  target: 'no target',
  pass: null,
});

/** The environment without AGENT_* settings, so that the figures do not depend on the caller's. */
function cleanEnv() {
  const env = {};
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('AGENT_')) env[key] = value;
  return env;
}

// ---------------------------------------------------------------- the worker pool

/**
 * Forks `count` workers and answers { workers, request, close }: request(workers, message, reply)
 * sends `message` to each and resolves with their `reply` messages. Any worker's error or early
 * exit rejects what is pending.
 */
async function startPool(count, config) {
  const workers = [];
  const pending = new Set();
  let failure = null;
  const failAll = (error) => {
    failure ??= error;
    for (const p of pending) p.reject(failure);
    pending.clear();
  };
  for (let i = 0; i < count; i++) {
    const child = fork(workerScript, [], {
      env: { ...cleanEnv(), BENCH_SCALING_CONFIG: JSON.stringify({ ...config, index: i }) },
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk) => {
      if (stderr.length < 4000) stderr += chunk;
    });
    const w = { index: i, child, waiting: new Map(), closed: false };
    child.on('message', (message) => {
      if (message.type === 'error') {
        failAll(new Error(`worker ${i}: ${message.message.split('\n').slice(0, 3).join(' | ')}`));
        return;
      }
      const waiter = w.waiting.get(message.type);
      if (waiter) {
        w.waiting.delete(message.type);
        pending.delete(waiter);
        waiter.resolve(message);
      }
    });
    child.on('exit', (code, signal) => {
      if (!w.closed)
        failAll(new Error(`worker ${i} exited (${code ?? signal}): ${stderr.trim().slice(-500)}`));
    });
    workers.push(w);
  }
  const expectReply = (w, type) =>
    new Promise((resolve, reject) => {
      if (failure) return reject(failure);
      const waiter = { resolve, reject };
      w.waiting.set(type, waiter);
      pending.add(waiter);
    });
  const request = async (some, message, reply) => {
    const replies = some.map((w) => expectReply(w, reply));
    for (const w of some) {
      // A worker that was told to close exits on its own once it has answered.
      if (message.type === 'close') w.closed = true;
      w.child.send(message);
    }
    return bounded(Promise.all(replies), reply);
  };
  /** No step takes this long: a worker that does not answer is stuck, and so is the section. */
  const bounded = async (promise, reply) => {
    const timer = setTimeout(() => failAll(new Error(`no '${reply}' within ${REPLY_MS / 1000} s`)), REPLY_MS);
    try {
      return await promise;
    } finally {
      clearTimeout(timer);
    }
  };
  const close = async () => {
    process.off('exit', close);
    for (const w of workers) {
      w.closed = true;
      if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
    }
  };
  process.once('exit', close);
  try {
    await bounded(Promise.all(workers.map((w) => expectReply(w, 'started'))), 'started');
  } catch (error) {
    await close();
    throw error;
  }
  return { workers, request, close };
}

// ---------------------------------------------------------------- 1. throughput with N processes

/** One point: N workers warm up, then all loop for `seconds` at once. */
async function runPoint(pool, contender, n, settings) {
  const some = pool.workers.slice(0, n);
  await pool.request(some, { type: 'warm', contender, ms: settings.warmupMs }, 'warm');
  const results = await pool.request(some, { type: 'go', seconds: settings.pointSeconds }, 'result');
  return {
    rate: results.reduce((sum, r) => sum + (r.ops / r.ms) * 1000, 0),
    ops: results.reduce((sum, r) => sum + r.ops, 0),
    samples: results.flatMap((r) => r.samples),
  };
}

async function throughput(pool, contenders, settings) {
  const points = new Map();
  for (const c of contenders)
    for (const n of WORKER_COUNTS) points.set(`${c.key}/${n}`, { rates: [], ops: 0, samples: [] });
  for (let r = 0; r < settings.rounds; r++) {
    for (const [ni, n] of WORKER_COUNTS.entries()) {
      for (let j = 0; j < contenders.length; j++) {
        const c = contenders[(r + ni + j) % contenders.length];
        const got = await runPoint(pool, c.key, n, settings);
        const point = points.get(`${c.key}/${n}`);
        point.rates.push(got.rate);
        point.ops += got.ops;
        for (const s of got.samples) point.samples.push(s);
      }
    }
  }
  const rows = [];
  for (const c of contenders) {
    for (const n of WORKER_COUNTS) {
      const point = points.get(`${c.key}/${n}`);
      rows.push({
        key: c.key,
        name: c.name,
        workers: n,
        ops: point.ops,
        opsPerSec: Math.round(median(point.rates)),
        minOpsPerSec: Math.round(Math.min(...point.rates)),
        maxOpsPerSec: Math.round(Math.max(...point.rates)),
        p50Ms: round(percentile(point.samples, 50), 3),
        p99Ms: round(percentile(point.samples, 99), 3),
      });
    }
  }
  return rows;
}

function throughputVerdicts(rows, redis) {
  const rate = (key, n) => rows.find((r) => r.key === key && r.workers === n)?.opsPerSec ?? null;
  const ratio = (a, b) => (a === null || b === null || b === 0 ? null : round(a / b));
  const t = SCALING_TARGETS;
  const verdicts = [];
  for (const n of WORKER_COUNTS) {
    verdicts.push(
      atLeast(
        `Redis own @resource / redis-semaphore, N=${n}`,
        redis ? ratio(rate('redisResource', n), rate('semaphore', n)) : null,
        t.redisVsSemaphoreMin,
      ),
    );
  }
  verdicts.push(
    atLeast(
      'Redis own file path / Redis own @resource, N=8',
      redis ? ratio(rate('redisPath', 8), rate('redisResource', 8)) : null,
      t.redisPathVsResourceAt8Min,
    ),
    atLeast(
      'file store own @resource N=8 / N=1',
      ratio(rate('fileResource', 8), rate('fileResource', 1)),
      t.fileAt8VsAt1Min,
    ),
    atLeast(
      'file store own @resource / redis-semaphore, N=8',
      redis ? ratio(rate('fileResource', 8), rate('semaphore', 8)) : null,
      t.fileVsSemaphoreAt8Min,
    ),
    info(
      'file store own file path / own @resource, N=8',
      ratio(rate('filePath', 8), rate('fileResource', 8)),
    ),
  );
  return verdicts;
}

// ---------------------------------------------------------------- 2. one client against the contract bound

/** Takes the lock if free: advances the fence and writes the holder record under a lease. */
const CONTRACT_ACQUIRE = `if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local fence = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return fence`;
const COMPARE_AND_DELETE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

/** The JSON of the record agent-lock wrote for `lockId`, wherever the store keeps it (any layout). */
async function recordJsonOf(client, prefix, lockId) {
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', `*${prefix}*`, 'COUNT', 100);
    cursor = next;
    for (const key of keys) {
      const type = await client.type(key);
      const values =
        type === 'hash'
          ? Object.values(await client.hgetall(key))
          : type === 'string'
            ? [await client.get(key)]
            : [];
      for (const value of values) {
        if (!value?.includes(lockId)) continue;
        try {
          if (JSON.parse(value).id === lockId) return value;
        } catch {
          // not a record
        }
      }
    }
  } while (cursor !== '0');
  return null;
}

async function oneClient(redisUrl, scratch, settings) {
  const tree = path.join(scratch, 'one-client', 'tree');
  const store = path.join(scratch, 'one-client', 'store');
  mkdirSync(path.join(tree, '.git'), { recursive: true });
  mkdirSync(store, { recursive: true });
  const prefix = `bench-scaling-${process.pid}-one`;
  const locks = await openLocks({
    backend: 'redis',
    redisUrl,
    dir: tree,
    storeDir: store,
    identity: { agentId: 'scaling-one' },
    env: { ...cleanEnv(), AGENT_LOCK_REDIS_PREFIX: prefix },
  });
  const clients = [];
  const client = async () => {
    const c = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await c.connect();
    clients.push(c);
    return c;
  };
  try {
    const ttl = LEASE_MS / 1000;
    const probe = await locks.acquire('@res', { ttl });
    if (probe.status !== 'acquired') throw new Error(`acquire @res: ${probe.status}`);
    const inspector = await client();
    const json = await recordJsonOf(inspector, prefix, probe.locks[0].id);
    await locks.release('@res');
    // The size of agent-lock's record; 600 bytes if it could not be found (said in the result).
    const recordBytes = json === null ? 600 : Buffer.byteLength(json);

    const ours = async () => {
      const got = await locks.acquire('@res', { ttl });
      if (got.status !== 'acquired') throw new Error(`acquire @res: ${got.status}`);
      const gone = await locks.release('@res');
      if (gone.status !== 'released') throw new Error(`release @res: ${gone.status}`);
    };

    const contractClient = await client();
    const acquireSha = await contractClient.script('LOAD', CONTRACT_ACQUIRE);
    const cadSha = await contractClient.script('LOAD', COMPARE_AND_DELETE);
    const holder = { agent_id: 'scaling-one', host: os.hostname(), pid: process.pid };
    // Made per call, as agent-lock makes its record: a random id, a random token and its hash;
    // padded to the size of agent-lock's (every field but the padding has a fixed length).
    const recordOf = (pad) => {
      const token = randomBytes(16).toString('hex');
      const now = Date.now();
      return JSON.stringify({
        id: `lk_${randomBytes(8).toString('hex')}`,
        scope: '@res',
        ...holder,
        created_at: now,
        expires_at: now + LEASE_MS,
        token_hash: createHash('sha256').update(token).digest('hex'),
        pad,
      });
    };
    const pad = 'x'.repeat(Math.max(0, recordBytes - Buffer.byteLength(recordOf(''))));
    const contract = async () => {
      const value = recordOf(pad);
      const fence = await contractClient.evalsha(
        acquireSha,
        2,
        'bench:contract:res',
        'bench:contract:fence',
        value,
        LEASE_MS,
      );
      if (!(fence > 0)) throw new Error(`contract: acquire answered ${fence}`);
      const deleted = await contractClient.evalsha(cadSha, 1, 'bench:contract:res', value);
      if (deleted !== 1) throw new Error(`contract: compare-and-delete answered ${deleted}`);
    };

    const boundClient = await client();
    const boundCad = await boundClient.script('LOAD', COMPARE_AND_DELETE);
    const bound = async () => {
      const token = randomBytes(16).toString('hex');
      const set = await boundClient.set('bench:bound:res', token, 'PX', LEASE_MS, 'NX');
      if (set !== 'OK') throw new Error(`bound: SET NX answered ${set}`);
      const deleted = await boundClient.evalsha(boundCad, 1, 'bench:bound:res', token);
      if (deleted !== 1) throw new Error(`bound: compare-and-delete answered ${deleted}`);
    };

    const contenders = [
      { key: 'agentLock', name: `agent-lock acquire+release @res (ttl ${ttl} s)`, step: ours },
      {
        key: 'contract',
        name: `contract bound: record (${recordBytes} B) + fence EVALSHA, CAD EVALSHA`,
        step: contract,
      },
      { key: 'bound', name: 'bare bound: SET NX PX + EVALSHA compare-and-delete', step: bound },
    ];
    const rounds = Math.max(3, settings.rounds * 2);
    for (const c of contenders) {
      const until = performance.now() + settings.warmupMs;
      while (performance.now() < until) await c.step();
      c.rates = [];
      c.samples = [];
      c.ops = 0;
    }
    for (let r = 0; r < rounds; r++) {
      for (let j = 0; j < contenders.length; j++) {
        const c = contenders[(r + j) % contenders.length];
        const start = performance.now();
        const deadline = start + (settings.oneClientSeconds * 1000) / rounds;
        let t = start;
        let ops = 0;
        while (t < deadline) {
          await c.step();
          const now = performance.now();
          c.samples.push(now - t);
          t = now;
          ops += 1;
        }
        c.rates.push((ops / (t - start)) * 1000);
        c.ops += ops;
      }
    }
    const rows = contenders.map((c) => ({
      key: c.key,
      name: c.name,
      ops: c.ops,
      opsPerSec: Math.round(median(c.rates)),
      p50Ms: round(percentile(c.samples, 50), 3),
      p99Ms: round(percentile(c.samples, 99), 3),
    }));
    const rate = (key) => rows.find((r) => r.key === key).opsPerSec;
    return {
      ran: true,
      rounds,
      recordBytes,
      recordFound: json !== null,
      rows,
      verdicts: [
        atLeast(
          'agent-lock / contract bound',
          round(rate('agentLock') / rate('contract')),
          SCALING_TARGETS.oneClientVsContractMin,
        ),
        info('agent-lock / bare bound', round(rate('agentLock') / rate('bound'))),
      ],
    };
  } finally {
    await locks.close();
    for (const c of clients) c.disconnect();
  }
}

// ---------------------------------------------------------------- 3. messages per commit

/** calls= of each command in INFO commandstats. */
async function commandCalls(client) {
  const calls = {};
  for (const m of String(await client.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm))
    calls[m[1]] = Number(m[2]);
  return calls;
}

/** Entries ever added to the streams under `prefix` (XINFO STREAM entries-added, Redis 7+). */
async function streamEntriesAdded(client, prefix) {
  let total = 0;
  let found = false;
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', `*${prefix}*`, 'TYPE', 'stream', 'COUNT', 100);
    cursor = next;
    for (const key of keys) {
      const info = await client.xinfo('STREAM', key);
      const at = info.indexOf('entries-added');
      if (at >= 0) {
        total += Number(info[at + 1]);
        found = true;
      }
    }
  } while (cursor !== '0');
  return found ? total : null;
}

async function messagesPerCommit(pool, redisUrl, prefix, settings) {
  const client = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await client.connect();
  try {
    await pool.request(pool.workers, { type: 'hold', leases: LEASES_HELD }, 'held');
    // The messages of the holds' own commits, then a zero point taken while nobody commits: every
    // worker starts counting at once, before the first churn commit.
    await sleep(300);
    await pool.request(pool.workers, { type: 'count' }, 'counted');
    // Subscriptions as the server sees them while the leases are held.
    const channels = (await client.pubsub('CHANNELS', `*${prefix}*`)).sort();
    const numsub = channels.length === 0 ? [] : await client.pubsub('NUMSUB', ...channels);
    let subscriptions = 0;
    for (let i = 1; i < numsub.length; i += 2) subscriptions += Number(numsub[i]);
    const callsBefore = await commandCalls(client);
    const addedBefore = await streamEntriesAdded(client, prefix);
    const churned = await pool.request(
      pool.workers,
      { type: 'churn', seconds: settings.churnSeconds },
      'churned',
    );
    // Messages of the last commits may still be on their way.
    await sleep(300);
    const counted = await pool.request(pool.workers, { type: 'count' }, 'counted');
    const callsAfter = await commandCalls(client);
    const addedAfter = await streamEntriesAdded(client, prefix);
    await pool.request(pool.workers, { type: 'close' }, 'closed');
    const delta = (name) => (callsAfter[name] ?? 0) - (callsBefore[name] ?? 0);
    const pairs = churned.reduce((n, c) => n + c.pairs, 0);
    // Commits: the store's own count (one history entry per commit that records events, and every
    // acquire and release records one), else two per acquire+release the workers made.
    const serverCommits = addedBefore === null || addedAfter === null ? null : addedAfter - addedBefore;
    const commits = serverCommits ?? 2 * pairs;
    const messages = counted.reduce((n, c) => n + c.messages, 0);
    const perCommit = commits === 0 ? null : round(messages / commits);
    return {
      ran: true,
      processes: pool.workers.length,
      leasesPerProcess: LEASES_HELD,
      seconds: settings.churnSeconds,
      pairs,
      commits,
      commitsCountedBy:
        serverCommits === null ? 'workers (2 per acquire+release)' : 'server (history entries added)',
      workerCommits: 2 * pairs,
      messages,
      messagesPerCommit: perCommit,
      publishCalls: delta('publish'),
      publishPerCommit: commits === 0 ? null : round(delta('publish') / commits),
      evalshaPerCommit: commits === 0 ? null : round(delta('evalsha') / commits),
      channels: channels.length,
      subscriptions,
      verdicts: [
        atMost('pub/sub messages delivered per commit', perCommit, SCALING_TARGETS.messagesPerCommitMax, ''),
      ],
    };
  } finally {
    client.disconnect();
  }
}

// ---------------------------------------------------------------- 4. (f)'s hand-offs against the floor

/**
 * Two verdicts for run.mjs (f), from its result `f`. "Whole-round p99" is read as (f)'s `whole`
 * window: the p99 of every hand-off of the rounds after the warm-up (the unmeasured middle
 * included), which is the tail a long-running contender sees; both contenders' figures come from
 * the same interleaved rounds. CPU is (f)'s workers' CPU (user + system, from 'go' to their last
 * release) per hand-off.
 */
export function handoffFloorRatios(f) {
  const row = (key) => f.contenders?.find((r) => r.key === key && r.error === null);
  const ours = row('agentLockRedis');
  const floor = row('floor');
  const ratio = (a, b) => (a == null || b == null || b <= 0 ? null : round(a / b));
  return [
    atMost(
      'agent-lock Redis whole-round p99 / floor ring whole-round p99',
      ratio(ours?.whole?.p99Ms, floor?.whole?.p99Ms),
      SCALING_TARGETS.handoffWholeP99VsFloorMax,
    ),
    atMost(
      'agent-lock Redis worker CPU per hand-off / floor ring',
      ratio(ours?.workerCpuMsPerHandoff, floor?.workerCpuMsPerHandoff),
      SCALING_TARGETS.handoffCpuVsFloorMax,
    ),
  ];
}

/** run.mjs-style lines of handoffFloorRatios. */
export const verdictLine = (v) =>
  `  ${v.label}: ${v.figure === null ? '-' : `${v.figure.toFixed(2)}${v.unit}`}   target ${v.target}   ${
    v.figure === null ? 'NOT RUN' : v.pass === null ? '(info)' : v.pass ? 'PASS' : 'MISS'
  }`;

// ---------------------------------------------------------------- the section

/**
 * Runs the section: `redisUrl` null runs the file-store points only (the rest NOT RUN).
 * Answers plain data: rows with figures, verdicts ({label, figure, target, pass}), and `pass`
 * (every verdict with a target met; null when one could not run).
 */
export async function scalingSection({ quick = false, redisUrl = null, scratch = null } = {}) {
  const settings = settingsFor(quick);
  const root = mkdtempSync(path.join(scratch ?? os.tmpdir(), 'alock-scaling-'));
  const base = `bench-scaling-${process.pid}-${randomBytes(3).toString('hex')}`;
  const tree = path.join(root, 'tree');
  mkdirSync(path.join(tree, '.git'), { recursive: true });
  mkdirSync(path.join(tree, 'src'), { recursive: true });
  const stores = {};
  const prefixes = {};
  for (const key of ['redisResource', 'fileResource', 'redisPath', 'filePath', 'messages']) {
    stores[key] = path.join(root, `store-${key}`);
    mkdirSync(stores[key], { recursive: true });
    prefixes[key] = `${base}-${key}`;
  }
  const contenders = CONTENDERS.filter((c) => redisUrl !== null || !c.redis);
  let pool = null;
  try {
    pool = await startPool(Math.max(...WORKER_COUNTS), {
      redisUrl,
      tree,
      stores,
      prefixes,
      leaseMs: LEASE_MS,
      env: cleanEnv(),
    });
    const rows = await throughput(pool, contenders, settings);
    const notRun = (reason) => ({ ran: false, reason, verdicts: [] });
    const one = redisUrl === null ? notRun('no redis-server') : await oneClient(redisUrl, root, settings);
    const messages =
      redisUrl === null
        ? notRun('no redis-server')
        : await messagesPerCommit(pool, redisUrl, prefixes.messages, settings);
    const verdicts = [...throughputVerdicts(rows, redisUrl !== null), ...one.verdicts, ...messages.verdicts];
    const judged = verdicts.filter((v) => v.target !== 'no target');
    return {
      ran: true,
      quick,
      settings,
      workerCounts: WORKER_COUNTS,
      targets: SCALING_TARGETS,
      throughput: rows,
      oneClient: one,
      messages,
      verdicts,
      pass: judged.some((v) => v.pass === null) ? null : judged.every((v) => v.pass),
    };
  } catch (error) {
    // A broken section is reported (never a PASS) and the rest of the bench goes on.
    return { ran: false, error: String(error?.message ?? error), quick, settings, verdicts: [], pass: false };
  } finally {
    await pool?.close();
    rmSync(root, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------- printing

function table(log, title, header, rows) {
  const all = [header, ...rows].map((row) => row.map((cell) => String(cell ?? '-')));
  const widths = header.map((_, i) => Math.max(...all.map((row) => row[i].length)));
  const line = (row) =>
    row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join('  ');
  log(title);
  log(`  ${line(all[0])}`);
  log(`  ${widths.map((w) => '-'.repeat(w)).join('  ')}`);
  for (const row of all.slice(1)) log(`  ${line(row)}`);
}

/** Prints the section's tables and verdicts in the style of run.mjs. */
export function printScaling(result, log = (line = '') => process.stdout.write(`${line}\n`)) {
  if (result.error) {
    log('(k) N processes, each acquire+release of its own lock');
    log(`  !!! ERROR: ${result.error}`);
    log();
    return;
  }
  const s = result.settings;
  table(
    log,
    `(k) N processes, each acquire+release of its own lock, ${s.rounds} interleaved round(s) of ${s.pointSeconds} s per point (aggregate ops/s: median of the rounds; p99 of one acquire+release)`,
    ['contender', 'N', 'ops', 'ops/s', 'min ops/s', 'max ops/s', 'p50 ms', 'p99 ms'],
    result.throughput.map((r) => [
      r.name,
      r.workers,
      r.ops,
      r.opsPerSec,
      r.minOpsPerSec,
      r.maxOpsPerSec,
      r.p50Ms?.toFixed(3),
      r.p99Ms?.toFixed(3),
    ]),
  );
  const one = result.oneClient;
  if (one.ran) {
    table(
      log,
      `  one client, median of ${one.rounds} interleaved rounds (agent-lock's record: ${one.recordBytes} bytes${one.recordFound ? '' : ', NOT FOUND: assumed'})`,
      ['contender', 'ops', 'ops/s', 'p50 ms', 'p99 ms'],
      one.rows.map((r) => [r.name, r.ops, r.opsPerSec, r.p50Ms?.toFixed(3), r.p99Ms?.toFixed(3)]),
    );
  } else log(`  one client: NOT RUN (${one.reason})`);
  const m = result.messages;
  if (m.ran) {
    log(
      `  messages: ${m.processes} processes x ${m.leasesPerProcess} leases, churning ${m.seconds} s: ${m.commits} commits (counted by ${m.commitsCountedBy}; workers: ${m.workerCommits}), ${m.messages} pub/sub messages received`,
    );
    log(
      `    ${m.publishCalls} PUBLISH calls (${m.publishPerCommit}/commit), ${m.evalshaPerCommit} EVALSHA/commit, ${m.channels} channels with ${m.subscriptions} subscriptions while held`,
    );
  } else log(`  messages per commit: NOT RUN (${m.reason})`);
  for (const v of result.verdicts) log(verdictLine(v));
  log();
}

// ---------------------------------------------------------------- alone: node bench/scaling.mjs

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const quick = process.env.BENCH_QUICK === '1';
  const asJson = process.argv.includes('--json');
  const binary = process.env.BENCH_REDIS_SERVER || 'redis-server';
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'alock-bench-'));
  let server = null;
  try {
    const version = redisServerVersion(binary);
    if (version !== null) server = await startRedisServer({ dir: scratch, binary });
    if (!asJson) {
      process.stdout.write(
        `agent-lock bench (k)${quick ? ' (BENCH_QUICK: short run, figures are rough)' : ''}: node ${process.version}, ${os.cpus().length} cpus, ${version === null ? 'no redis-server' : version.split(' sha=')[0]}\n\n`,
      );
    }
    const result = await scalingSection({ quick, redisUrl: server?.url ?? null, scratch });
    if (asJson) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    else printScaling(result);
  } finally {
    await server?.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
}
