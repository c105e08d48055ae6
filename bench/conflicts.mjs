// npm run bench, part (j): `alock conflicts` from a hook's point of view (issue 22).
//   In a scratch repository with a main worktree and three linked ones (one pair really conflicts),
//   each a fresh process, alternating: `alock conflicts` with its cache in place (no head moved:
//   what a hook pays on most tool calls), the same without it (every pair merged with
//   git merge-tree), and `alock check x` (the CLI's cold start) as the floor of any alock call.
//   target: cached conflicts / alock check <= 2 (a hook may call it as often as check)
//   info:   uncached / cached (what the cache saves with three pairs)
// Flags: --json prints one JSON object. BENCH_QUICK=1 is a fast smoke run. Figures are informative.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const asJson = process.argv.includes('--json');
const runs = process.env.BENCH_QUICK === '1' ? 4 : 20;
const TARGET_MAX = 2;
const scratch = mkdtempSync(path.join(os.tmpdir(), 'alock-bench-conflicts-'));
const env = {
  PATH: process.env.PATH ?? '',
  HOME: scratch,
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_AUTHOR_NAME: 'bench',
  GIT_AUTHOR_EMAIL: 'bench@example.invalid',
  GIT_COMMITTER_NAME: 'bench',
  GIT_COMMITTER_EMAIL: 'bench@example.invalid',
  AGENT_ID: 'bench',
  AGENT_LOCK_REDIS_PROBE: 'off',
};
const git = (cwd, ...args) => execFileSync('git', args, { cwd, env, encoding: 'utf8' });
const log = (line = '') => {
  if (!asJson) process.stdout.write(`${line}\n`);
};
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
};
const round = (n) => Math.round(n * 100) / 100;

try {
  const main = path.join(scratch, 'main');
  mkdirSync(path.join(main, 'src'), { recursive: true });
  for (let i = 0; i < 50; i++)
    writeFileSync(path.join(main, 'src', `f${i}.ts`), `export const v${i} = ${i};\n`);
  git(main, 'init', '-q', '-b', 'main');
  git(main, 'add', '.');
  git(main, 'commit', '-q', '-m', 'initial');
  const change = (branch, file, text) => {
    const dir = path.join(scratch, branch);
    git(main, 'worktree', 'add', '-q', '-b', branch, dir, 'main');
    writeFileSync(path.join(dir, file), text);
    git(dir, 'commit', '-q', '-am', `change ${file}`);
    return dir;
  };
  const here = change('feat-a', 'src/f1.ts', 'export const v1 = "a";\n');
  change('feat-b', 'src/f1.ts', 'export const v1 = "b";\n');
  change('feat-c', 'src/f2.ts', 'export const v2 = "c";\n');
  const cache = path.join(main, '.git', 'agent-locks', 'conflicts-cache.json');
  const alock = path.join(repoRoot, 'bin', 'alock.js');
  const once = (args, expected) => {
    const start = performance.now();
    const result = spawnSync(process.execPath, [alock, ...args], {
      cwd: here,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const ms = performance.now() - start;
    if (result.status !== expected)
      throw new Error(`alock ${args.join(' ')} exited ${result.status}: ${result.stderr.toString().trim()}`);
    return ms;
  };
  const cases = {
    check: () => once(['check', 'x'], 0),
    cached: () => once(['conflicts'], 1),
    uncached: () => {
      rmSync(cache, { force: true });
      return once(['conflicts'], 1);
    },
  };
  for (const run of Object.values(cases)) run();
  const samples = { check: [], cached: [], uncached: [] };
  const names = Object.keys(cases);
  for (let i = 0; i < runs; i++) {
    // Rotate who goes first, so that drift hits all alike; cached always runs after a run that wrote the cache.
    const order = i % 2 === 0 ? ['check', 'uncached', 'cached'] : ['uncached', 'cached', 'check'];
    for (const name of order) samples[name].push(cases[name]());
  }
  const result = {
    runs,
    medianMs: Object.fromEntries(names.map((n) => [n, round(median(samples[n]))])),
  };
  result.ratioCachedToCheck = round(result.medianMs.cached / result.medianMs.check);
  result.ratioUncachedToCached = round(result.medianMs.uncached / result.medianMs.cached);
  result.target = `cached / check <= ${TARGET_MAX}x`;
  result.pass = result.ratioCachedToCheck <= TARGET_MAX;
  log(
    `(j) alock conflicts, three other branches (one conflicting), ${runs} runs each, alternating (wall ms)`,
  );
  log(`  alock check x (cold start floor)   median ${result.medianMs.check} ms`);
  log(`  alock conflicts, cache in place   median ${result.medianMs.cached} ms`);
  log(`  alock conflicts, no cache         median ${result.medianMs.uncached} ms`);
  log(
    `  ratio cached / check: ${result.ratioCachedToCheck}x   target ${result.target}   ${result.pass ? 'PASS' : 'FAIL'}`,
  );
  log(`  ratio uncached / cached: ${result.ratioUncachedToCached}x   (info)`);
  if (asJson) process.stdout.write(`${JSON.stringify({ conflicts: result }, null, 2)}\n`);
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
