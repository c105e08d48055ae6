// Spawned commands against `node -e 0`, alternating: sections (a) and (h).
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { BenchContext } from './case.js';
import { repo } from './settings.js';
import { median, round } from './stats.js';

export interface HyperfineRow {
  command: string;
  medianMs: number;
  meanMs: number;
}

export interface SpawnResult {
  runs: number;
  nodeMedianMs: number;
  alockMedianMs: number;
  nodeMinMs: number;
  alockMinMs: number;
  ratio: number;
  target: string;
  pass: boolean;
  hyperfine: { node: HyperfineRow; alock: HyperfineRow; ratio: number } | null;
}

function hyperfineAvailable(): boolean {
  const probe = spawnSync('hyperfine', ['--version'], { encoding: 'utf8' });
  return probe.status === 0;
}

function runHyperfine(
  ctx: BenchContext,
  commands: string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
): HyperfineRow[] | null {
  const out = path.join(ctx.scratch, 'hyperfine.json');
  const args = [
    '--warmup',
    '3',
    '--runs',
    String(ctx.settings.spawnRuns),
    '-N',
    '--export-json',
    out,
    ...commands,
  ];
  const result = spawnSync('hyperfine', args, { cwd, env, encoding: 'utf8' });
  if (result.status !== 0) return null;
  const data = JSON.parse(readFileSync(out, 'utf8')) as {
    results: { command: string; median: number; mean: number }[];
  };
  return data.results.map((r) => ({
    command: r.command,
    medianMs: round(r.median * 1000),
    meanMs: round(r.mean * 1000),
  }));
}

/**
 * `alock ARGS` (with `input` on stdin) against `node -e 0` given the same stdin, alternating.
 * `setup(tree, env)` runs first (a lock held by someone else, so the store is not empty).
 */
export function spawnAgainstNode(
  ctx: BenchContext,
  name: string,
  args: string[],
  input: ((tree: string) => string) | null,
  max: number,
  setup?: (tree: string, env: NodeJS.ProcessEnv) => void,
): SpawnResult {
  const { tree, store } = ctx.makeTree(name);
  const env = ctx.cleanEnv({ AGENT_LOCK_DIR: store });
  setup?.(tree, env);
  const node = process.execPath;
  const alockArgs = [path.join(repo, 'bin', 'alock.js'), ...args];
  const nodeArgs = ['-e', '0'];
  const stdin = input === null ? null : input(tree);
  const once = (argv: string[]) => {
    const start = performance.now();
    const result = spawnSync(node, argv, {
      cwd: tree,
      env,
      ...(stdin === null
        ? { stdio: ['ignore', 'pipe', 'pipe'] }
        : { input: stdin, stdio: ['pipe', 'pipe', 'pipe'] }),
    });
    const ms = performance.now() - start;
    if (result.status !== 0) {
      throw new Error(`${argv.join(' ')} exited ${result.status}: ${result.stderr.toString().trim()}`);
    }
    // A hook that printed an answer has decided something: the bench measures the silent path.
    if (stdin !== null && result.stdout.toString().trim() !== '' && argv !== nodeArgs) {
      throw new Error(`${argv.join(' ')} answered ${result.stdout.toString().trim()}`);
    }
    return ms;
  };
  for (let i = 0; i < ctx.settings.spawnWarmup; i++) {
    once(nodeArgs);
    once(alockArgs);
  }
  const nodeMs: number[] = [];
  const alockMs: number[] = [];
  for (let i = 0; i < ctx.settings.spawnRuns; i++) {
    // Alternate, and swap who goes first each time, so drift hits both alike.
    if (i % 2 === 0) {
      nodeMs.push(once(nodeArgs));
      alockMs.push(once(alockArgs));
    } else {
      alockMs.push(once(alockArgs));
      nodeMs.push(once(nodeArgs));
    }
  }
  const nodeMedianMs = round(median(nodeMs));
  const alockMedianMs = round(median(alockMs));
  const ratio = round(alockMedianMs / nodeMedianMs);
  const result: SpawnResult = {
    runs: ctx.settings.spawnRuns,
    nodeMedianMs,
    alockMedianMs,
    nodeMinMs: round(Math.min(...nodeMs)),
    alockMinMs: round(Math.min(...alockMs)),
    ratio,
    target: `<= ${max}x`,
    pass: ratio <= max,
    hyperfine: null,
  };
  if (stdin === null && hyperfineAvailable()) {
    const q = (argv: string[]) => [node, ...argv].map((a) => (/[\s']/.test(a) ? `'${a}'` : a)).join(' ');
    const hf = runHyperfine(ctx, [q(nodeArgs), q(alockArgs)], tree, env);
    if (hf !== null)
      result.hyperfine = { node: hf[0]!, alock: hf[1]!, ratio: round(hf[1]!.medianMs / hf[0]!.medianMs) };
  }
  return result;
}
