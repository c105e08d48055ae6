// npm run bench: side-by-side measurements with their targets, one section per file in
// bench/cases/ (see bench/README.md). Figures are informative: nothing here fails the build, and
// no test asserts wall-clock time.
// Flags: --json prints one JSON object instead of tables; --only a,h runs only those sections;
// --write rewrites the "Latest figures" table of bench/README.md from this run (bench/latest-table.ts).
// BENCH_QUICK=1 is a fast smoke run. BENCH_REDIS_SERVER=/path/to/redis-server picks the server
// binary for the Redis sections (default: redis-server on PATH; without one they say NOT RUN).
// BENCH_HOLD_US=N sets how long (f)'s workers hold the lock (default 200 us of busy work).
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BenchContext, Block } from './case.js';
import { CASES } from './cases/index.js';
import { type RedisServer, redisServerVersion, startRedisServer } from './redis-server.js';
import { type LatestRun, rowsOf, writeLatest } from './latest-table.js';
import { Report } from './report.js';
import { quick, repo, SETTINGS, TARGETS } from './settings.js';
import { median } from './stats.js';

function parseArgs(argv: string[]): { asJson: boolean; only: Set<string> | null; write: boolean } {
  let only: Set<string> | null = null;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const value = arg === '--only' ? argv[++i] : arg.startsWith('--only=') ? arg.slice(7) : undefined;
    if (value !== undefined) {
      only = new Set(value.split(',').map((s) => s.trim().toLowerCase()));
      const unknown = [...only].filter((id) => !CASES.some((c) => c.id === id));
      if (unknown.length > 0)
        throw new Error(`bench: no section ${unknown.join(', ')} (--only takes letters)`);
    }
  }
  return { asJson: argv.includes('--json'), only, write: argv.includes('--write') };
}

const { asJson, only, write } = parseArgs(process.argv.slice(2));
const report = new Report(asJson);
const redisBinary = process.env.BENCH_REDIS_SERVER || 'redis-server';
const scratch = mkdtempSync(path.join(os.tmpdir(), 'alock-bench-'));

/** The bench's redis-server: started by the first section that asks, stopped at the end. */
const redis = {
  serverVersion: null as string | null,
  port: null as number | null,
  started: false,
  error: null as string | null,
};
let redisServer: RedisServer | null = null;
let redisAsked: Promise<{ server: RedisServer | null; reason: string }> | null = null;
let announced = false;

async function startRedis(): Promise<{ server: RedisServer | null; reason: string }> {
  redis.serverVersion = redisServerVersion(redisBinary);
  if (redis.serverVersion === null)
    return { server: null, reason: `${redisBinary} is not installed (not found on PATH)` };
  try {
    redisServer = await startRedisServer({ dir: scratch, binary: redisBinary });
    redis.port = redisServer.port;
    redis.started = true;
    return { server: redisServer, reason: '' };
  } catch (error) {
    redis.error = (error as Error).message;
    return { server: null, reason: `redis-server did not start: ${redis.error}` };
  }
}

const ctx: BenchContext = {
  settings: SETTINGS,
  quick,
  scratch,
  makeTree(name) {
    const tree = path.join(scratch, name, 'tree');
    const store = path.join(scratch, name, 'store');
    mkdirSync(path.join(tree, '.git'), { recursive: true });
    mkdirSync(store, { recursive: true });
    return { tree, store };
  },
  cleanEnv(extra = {}) {
    const env: NodeJS.ProcessEnv = {};
    for (const [key, value] of Object.entries(process.env)) {
      if (!key.startsWith('AGENT_')) env[key] = value;
    }
    return { ...env, ...extra };
  },
  benchPrefix: `bench-${process.pid}-${randomBytes(3).toString('hex')}`,
  redisBinary,
  async redis() {
    redisAsked ??= startRedis();
    const { server, reason } = await redisAsked;
    let announce: Block[] = [];
    if (server !== null && !announced) {
      announced = true;
      announce = [
        {
          kind: 'lines',
          lines: [
            `  redis: ${redis.serverVersion!.split(' sha=')[0]} on 127.0.0.1:${server.port} (pid ${server.pid})`,
            '',
          ],
        },
      ];
    }
    return { server, reason, announce };
  },
  outDir: path.dirname(fileURLToPath(import.meta.url)),
};

const machine = {
  node: process.version,
  platform: `${os.platform()} ${os.release()} ${os.arch()}`,
  cpus: os.cpus().length,
  cpuModel: os.cpus()[0]?.model ?? 'unknown',
  tmpdir: os.tmpdir(),
  quick,
};

/** The table's header facts: when, on what, and `node -e 0` ((a)'s figure, else measured here). */
function latestRun(sections: LatestRun['sections'], figures: Record<string, unknown>): LatestRun {
  const cold = figures.coldStart as { nodeMedianMs?: number } | undefined;
  let nodeMs = cold?.nodeMedianMs;
  if (nodeMs === undefined) {
    const times: number[] = [];
    for (let i = 0; i < (quick ? 5 : 21); i++) {
      const start = performance.now();
      spawnSync(process.execPath, ['-e', '0']);
      times.push(performance.now() - start);
    }
    nodeMs = median(times);
  }
  return {
    date: `${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC`,
    machine: `node ${machine.node}, ${machine.platform}, ${machine.cpus} cpus (${machine.cpuModel})`,
    nodeMs,
    quick,
    sections,
  };
}

try {
  report.log(`agent-lock bench${quick ? ' (BENCH_QUICK: smoke run, figures are rough)' : ''}`);
  report.log(
    `  node ${machine.node}, ${machine.platform}, ${machine.cpus} cpus (${machine.cpuModel}), scratch in ${machine.tmpdir}`,
  );
  report.log();
  const figures: Record<string, unknown> = {};
  const summary: Record<string, string> = {};
  const words: string[] = [];
  const sections: LatestRun['sections'] = [];
  for (const c of CASES) {
    if (only !== null && !only.has(c.id)) continue;
    const result = await c.run(ctx);
    report.blocks(result.blocks);
    figures[c.key] = result.data;
    Object.assign(summary, result.summary);
    words.push(`(${c.id}) ${result.summaryText}`);
    sections.push({ id: c.id, rows: rowsOf(c.id, c.title, result) });
  }
  report.log(`summary: ${words.join('  ')}`);
  const latest = write ? latestRun(sections, figures) : null;
  if (latest !== null) {
    const readme = path.join(repo, 'bench', 'README.md');
    writeFileSync(readme, writeLatest(readFileSync(readme, 'utf8'), latest));
    report.log(
      `wrote the latest figures of sections ${sections.map((x) => x.id).join(', ')} into bench/README.md`,
    );
  }
  report.json({
    machine,
    settings: SETTINGS,
    targets: TARGETS,
    ...figures,
    redis,
    summary,
    ...(latest ? { latest } : {}),
  });
} finally {
  await (redisServer as RedisServer | null)?.stop();
  rmSync(scratch, { recursive: true, force: true });
}
