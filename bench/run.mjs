// npm run bench: three side-by-side measurements with their targets (issue 2).
//   (a) `alock check x` cold start against `node -e 0`            target: ratio <= 1.5
//   (b) acquire+release of one @resource against proper-lockfile   target: ratio >= 2
//   (c) path-scope acquire+release p50 with 10/100/1000 locks held target: p50(1000)/p50(10) <= 3
// Flags: --json prints one JSON object instead of tables. BENCH_QUICK=1 is a fast smoke run.
// Figures are informative: nothing here fails the build, and no test asserts wall-clock time.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import lockfile from 'proper-lockfile';
import { openLocks } from '../dist/index.js';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const asJson = process.argv.includes('--json');
const quick = process.env.BENCH_QUICK === '1';

const SETTINGS = quick
  ? {
      spawnRuns: 5,
      spawnWarmup: 1,
      opsMax: 300,
      opsSeconds: 0.5,
      opsWarmup: 50,
      rounds: 2,
      latIters: 60,
      latWarmup: 10,
    }
  : {
      spawnRuns: 30,
      spawnWarmup: 3,
      opsMax: 3000,
      opsSeconds: 3,
      opsWarmup: 300,
      rounds: 3,
      latIters: 500,
      latWarmup: 50,
    };
const HELD_COUNTS = [10, 100, 1000];
const TARGETS = { coldStartMax: 1.5, rateMin: 2, latencyMax: 3 };

const scratch = mkdtempSync(path.join(os.tmpdir(), 'alock-bench-'));
const log = (line = '') => {
  if (!asJson) process.stdout.write(`${line}\n`);
};

// ---------------------------------------------------------------- helpers

function percentile(values, p) {
  const sorted = [...values].sort((x, y) => x - y);
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank];
}
const median = (values) => percentile(values, 50);
const round = (value, digits = 2) => Number(value.toFixed(digits));
const verdict = (ok) => (ok ? 'PASS' : 'MISS');

function table(title, header, rows, verdicts) {
  const all = [header, ...rows].map((row) => row.map(String));
  const widths = header.map((_, i) => Math.max(...all.map((row) => row[i].length)));
  const line = (row) =>
    row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join('  ');
  log(title);
  log(`  ${line(all[0])}`);
  log(`  ${widths.map((w) => '-'.repeat(w)).join('  ')}`);
  for (const row of all.slice(1)) log(`  ${line(row)}`);
  for (const [label, ratio, target, pass] of verdicts) {
    log(`  ${label}: ${ratio.toFixed(2)}x   target ${target}   ${pass === null ? '(info)' : verdict(pass)}`);
  }
  log();
}

/** A scratch tree (its own `.git`, so it is the tree root) and an empty store folder. */
function makeTree(name) {
  const tree = path.join(scratch, name, 'tree');
  const store = path.join(scratch, name, 'store');
  mkdirSync(path.join(tree, '.git'), { recursive: true });
  mkdirSync(store, { recursive: true });
  return { tree, store };
}

/** The parent's environment without any AGENT_* setting, so the figures do not depend on the caller. */
function cleanEnv(extra) {
  const env = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith('AGENT_')) env[key] = value;
  }
  return { ...env, ...extra };
}

function expect(outcome, status, what) {
  if (outcome.status !== status)
    throw new Error(`${what}: expected ${status}, got ${JSON.stringify(outcome)}`);
}

// ---------------------------------------------------------------- (a) cold start

function hyperfineAvailable() {
  const probe = spawnSync('hyperfine', ['--version'], { encoding: 'utf8' });
  return probe.status === 0;
}

function runHyperfine(commands, cwd, env) {
  const out = path.join(scratch, 'hyperfine.json');
  const args = [
    '--warmup',
    '3',
    '--runs',
    String(SETTINGS.spawnRuns),
    '-N',
    '--export-json',
    out,
    ...commands,
  ];
  const result = spawnSync('hyperfine', args, { cwd, env, encoding: 'utf8' });
  if (result.status !== 0) return null;
  const data = JSON.parse(readFileSync(out, 'utf8'));
  return data.results.map((r) => ({
    command: r.command,
    medianMs: round(r.median * 1000),
    meanMs: round(r.mean * 1000),
  }));
}

function coldStart() {
  const { tree, store } = makeTree('cold');
  const env = cleanEnv({ AGENT_LOCK_DIR: store });
  const node = process.execPath;
  const alockArgs = [path.join(repo, 'bin', 'alock.js'), 'check', 'x'];
  const nodeArgs = ['-e', '0'];
  const once = (args) => {
    const start = performance.now();
    const result = spawnSync(node, args, { cwd: tree, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const ms = performance.now() - start;
    if (result.status !== 0) {
      throw new Error(`${args.join(' ')} exited ${result.status}: ${result.stderr.toString().trim()}`);
    }
    return ms;
  };
  for (let i = 0; i < SETTINGS.spawnWarmup; i++) {
    once(nodeArgs);
    once(alockArgs);
  }
  const nodeMs = [];
  const alockMs = [];
  for (let i = 0; i < SETTINGS.spawnRuns; i++) {
    // Alternate, and swap who goes first each time, so drift hits both alike.
    if (i % 2 === 0) {
      nodeMs.push(once(nodeArgs));
      alockMs.push(once(alockArgs));
    } else {
      alockMs.push(once(alockArgs));
      nodeMs.push(once(nodeArgs));
    }
  }
  const result = {
    runs: SETTINGS.spawnRuns,
    nodeMedianMs: round(median(nodeMs)),
    alockMedianMs: round(median(alockMs)),
    nodeMinMs: round(Math.min(...nodeMs)),
    alockMinMs: round(Math.min(...alockMs)),
  };
  result.ratio = round(result.alockMedianMs / result.nodeMedianMs);
  result.target = `<= ${TARGETS.coldStartMax}x`;
  result.pass = result.ratio <= TARGETS.coldStartMax;
  result.hyperfine = null;
  if (hyperfineAvailable()) {
    const q = (args) => [node, ...args].map((a) => (/[\s']/.test(a) ? `'${a}'` : a)).join(' ');
    const hf = runHyperfine([q(nodeArgs), q(alockArgs)], tree, env);
    if (hf !== null)
      result.hyperfine = { node: hf[0], alock: hf[1], ratio: round(hf[1].medianMs / hf[0].medianMs) };
  }
  return result;
}

// ---------------------------------------------------------------- (b) @resource rate

async function timeLoop(step, maxOps, seconds) {
  const deadline = performance.now() + seconds * 1000;
  const start = performance.now();
  let ops = 0;
  while (ops < maxOps && (ops % 32 !== 0 || performance.now() < deadline)) {
    await step();
    ops += 1;
  }
  return { ops, ms: performance.now() - start };
}

async function resourceRate() {
  const { tree, store } = makeTree('rate');
  const locks = await openLocks({ dir: tree, storeDir: store, identity: { agentId: 'bench' } });
  const target = path.join(scratch, 'rate', 'resource.txt');
  writeFileSync(target, '');
  const ours = async () => {
    expect(await locks.acquire('@res'), 'acquired', 'acquire @res');
    expect(await locks.release('@res'), 'released', 'release @res');
  };
  // proper-lockfile is measured in its fastest setting (no realpath call) and in its default one.
  const plFast = async () => {
    const release = await lockfile.lock(target, { realpath: false, retries: 0 });
    await release();
  };
  const plDefault = async () => {
    const release = await lockfile.lock(target, { retries: 0 });
    await release();
  };
  const contenders = [
    { name: 'agent-lock acquire+release @res', step: ours },
    { name: 'proper-lockfile lock+unlock (realpath:false)', step: plFast },
    { name: 'proper-lockfile lock+unlock (default)', step: plDefault },
  ];
  for (const c of contenders) {
    for (let i = 0; i < SETTINGS.opsWarmup; i++) await c.step();
    c.ops = 0;
    c.ms = 0;
  }
  // Rounds alternate the contenders so that machine noise spreads over all of them.
  const perRound = Math.ceil(SETTINGS.opsMax / SETTINGS.rounds);
  for (let r = 0; r < SETTINGS.rounds; r++) {
    for (const c of contenders) {
      const { ops, ms } = await timeLoop(c.step, perRound, SETTINGS.opsSeconds / SETTINGS.rounds);
      c.ops += ops;
      c.ms += ms;
    }
  }
  await locks.close();
  const rows = contenders.map((c) => ({
    name: c.name,
    ops: c.ops,
    opsPerSec: Math.round((c.ops / c.ms) * 1000),
    usPerOp: round((c.ms / c.ops) * 1000, 1),
  }));
  const [ourRow, fastRow, defaultRow] = rows;
  const ratio = round(ourRow.opsPerSec / fastRow.opsPerSec);
  return {
    contenders: rows,
    ratio,
    ratioVsDefault: round(ourRow.opsPerSec / defaultRow.opsPerSec),
    target: `>= ${TARGETS.rateMin}x`,
    pass: ratio >= TARGETS.rateMin,
  };
}

// ---------------------------------------------------------------- (c) latency under load

const HOLDER_AGENTS = 4;

async function latencyWithHeld(k) {
  const { tree, store } = makeTree(`held-${k}`);
  const holders = [];
  for (let i = 0; i < HOLDER_AGENTS; i++) {
    holders.push(await openLocks({ dir: tree, storeDir: store, identity: { agentId: `holder-${i}` } }));
  }
  for (let i = 0; i < k; i++) {
    expect(await holders[i % HOLDER_AGENTS].acquire(`held/file${i}.txt`), 'acquired', `pre-acquire ${i}`);
  }
  const locks = await openLocks({ dir: tree, storeDir: store, identity: { agentId: 'bench' } });
  const step = async () => {
    const start = performance.now();
    expect(await locks.acquire('work/target.txt'), 'acquired', 'acquire work/target.txt');
    expect(await locks.release('work/target.txt'), 'released', 'release work/target.txt');
    return performance.now() - start;
  };
  for (let i = 0; i < SETTINGS.latWarmup; i++) await step();
  const samples = [];
  for (let i = 0; i < SETTINGS.latIters; i++) samples.push(await step());
  const held = (await locks.list()).locks.length;
  await locks.close();
  for (const h of holders) await h.close();
  return {
    held: k,
    listed: held,
    iterations: samples.length,
    p50Ms: round(percentile(samples, 50), 3),
    p99Ms: round(percentile(samples, 99), 3),
    meanMs: round(samples.reduce((a, b) => a + b, 0) / samples.length, 3),
  };
}

async function latency() {
  const rows = [];
  for (const k of HELD_COUNTS) rows.push(await latencyWithHeld(k));
  const at = (k) => rows.find((r) => r.held === k);
  const ratio1000 = round(at(1000).p50Ms / at(10).p50Ms);
  const ratio100 = round(at(100).p50Ms / at(10).p50Ms);
  return {
    rows,
    ratio100to10: ratio100,
    ratio1000to10: ratio1000,
    target: `p50(1000)/p50(10) <= ${TARGETS.latencyMax}x`,
    pass: ratio1000 <= TARGETS.latencyMax,
  };
}

// ---------------------------------------------------------------- main

const machine = {
  node: process.version,
  platform: `${os.platform()} ${os.release()} ${os.arch()}`,
  cpus: os.cpus().length,
  cpuModel: os.cpus()[0]?.model ?? 'unknown',
  tmpdir: os.tmpdir(),
  quick,
};

try {
  log(`agent-lock bench${quick ? ' (BENCH_QUICK: smoke run, figures are rough)' : ''}`);
  log(
    `  node ${machine.node}, ${machine.platform}, ${machine.cpus} cpus (${machine.cpuModel}), scratch in ${machine.tmpdir}`,
  );
  log();

  const a = coldStart();
  table(
    `(a) cold start, ${a.runs} runs each, alternating (wall ms of spawn to exit)`,
    ['command', 'median ms', 'min ms'],
    [
      ['node -e 0', a.nodeMedianMs.toFixed(2), a.nodeMinMs.toFixed(2)],
      ['alock check x', a.alockMedianMs.toFixed(2), a.alockMinMs.toFixed(2)],
    ],
    [['ratio alock / node (median)', a.ratio, a.target, a.pass]],
  );
  if (a.hyperfine !== null) {
    log(
      `  hyperfine: node ${a.hyperfine.node.medianMs} ms, alock ${a.hyperfine.alock.medianMs} ms, ratio ${a.hyperfine.ratio}x`,
    );
    log();
  }

  const b = await resourceRate();
  table(
    '(b) sequential acquire+release of one lock, same file system',
    ['contender', 'ops', 'ops/s', 'us/op'],
    [...b.contenders.map((c) => [c.name, c.ops, c.opsPerSec, c.usPerOp.toFixed(1)])],
    [
      ['ratio agent-lock / proper-lockfile realpath:false', b.ratio, b.target, b.pass],
      ['ratio agent-lock / proper-lockfile default', b.ratioVsDefault, `>= ${TARGETS.rateMin}x`, null],
    ],
  );

  const c = await latency();
  table(
    `(c) acquire+release of work/target.txt with K path scopes held by ${HOLDER_AGENTS} other agents`,
    ['locks held', 'iterations', 'p50 ms', 'p99 ms', 'mean ms'],
    [
      ...c.rows.map((r) => [
        r.held,
        r.iterations,
        r.p50Ms.toFixed(3),
        r.p99Ms.toFixed(3),
        r.meanMs.toFixed(3),
      ]),
    ],
    [
      ['ratio p50 100/10', c.ratio100to10, `<= ${TARGETS.latencyMax}x`, null],
      ['ratio p50 1000/10', c.ratio1000to10, c.target, c.pass],
    ],
  );

  const summary = {
    coldStart: verdict(a.pass),
    resourceRate: verdict(b.pass),
    latencyUnderLoad: verdict(c.pass),
  };
  log(`summary: (a) ${summary.coldStart}  (b) ${summary.resourceRate}  (c) ${summary.latencyUnderLoad}`);
  if (asJson) {
    process.stdout.write(
      `${JSON.stringify({ machine, settings: SETTINGS, coldStart: a, resourceRate: b, latencyUnderLoad: c, summary }, null, 2)}\n`,
    );
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
