// (g) glob locks (issue 21): decision time with 1,000 glob locks held, the exact glob-vs-glob rule
// against the fixed-part rule it replaced, in one run, on the memory store (no I/O: the rule's cost
// is all there is to see). The old rule is a bench-only build: the library bundled by esbuild with
// bench/fixed-part-rule.mjs in place of src/core/glob-overlap.ts. Also the time of the worst glob
// pair: one that runs the product search to its bound.
// Run alone: npm run build && node bench/globs.mjs [--quick]
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// Beside node_modules, so that the bundles find their dependencies, and out of the linted folders.
const out = path.join(repo, 'node_modules', '.cache', 'agent-lock-bench');
export const GLOB_TARGET = 1.5;
const HELD = 1000;

/** Bundles `entry` (a path under src/) as ESM into node_modules/.cache, optionally with the old rule. */
async function bundle(entry, name, oldRule) {
  const outfile = path.join(out, `${name}.js`);
  mkdirSync(out, { recursive: true });
  await build({
    entryPoints: [path.join(repo, entry)],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    define: { __VERSION__: '"bench"' },
    logLevel: 'warning',
    plugins: oldRule
      ? [
          {
            name: 'fixed-part-rule',
            setup(b) {
              b.onResolve({ filter: /\/glob-overlap\.js$/ }, () => ({
                path: path.join(repo, 'bench', 'fixed-part-rule.mjs'),
              }));
            },
          },
        ]
      : [],
  });
  return import(outfile);
}

const percentile = (values, p) => {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
};

/**
 * p50 of `check(request(i))` by agent B while agent A holds `held(k)` for k < HELD. Each check
 * asks a scope never asked before, so no per-pattern cache is warm for the request's side.
 */
async function decisions(lib, held, request, iterations) {
  const store = new lib.MemoryStore();
  const dir = path.join(out, 'tree');
  mkdirSync(path.join(dir, '.git'), { recursive: true });
  const a = await lib.openLocks({ dir, backend: store.connect(), identity: { agentId: 'A' } });
  const b = await lib.openLocks({ dir, backend: store.connect(), identity: { agentId: 'B' } });
  try {
    for (let k = 0; k < HELD; k += 100) {
      const got = await a.acquire(Array.from({ length: 100 }, (_, j) => held(k + j)));
      if (got.status !== 'acquired') throw new Error(`bench: pre-acquire answered ${got.status}`);
    }
    const samples = [];
    let status = '';
    for (let i = 0; i < iterations + 20; i++) {
      const start = performance.now();
      status = (await b.check(request(i))).status;
      if (i >= 20) samples.push(performance.now() - start);
    }
    return { p50: percentile(samples, 50), status };
  } finally {
    await a.close();
    await b.close();
  }
}

const WORKLOADS = [
  {
    name: 'one folder per glob (fixed parts part ways)',
    held: (k) => `packages/p${k}/src/**/*.ts`,
    request: (i) => `packages/p${(i * 7) % HELD}/test/**/*.r${i}.ts`,
  },
  {
    name: 'one folder, globs by file kind (endings differ)',
    held: (k) => `src/**/*.k${k}.ts`,
    request: (i) => `src/**/*.r${i}.md`,
  },
  {
    name: 'one folder, every pair searched (worst case)',
    held: (k) => `src/**/*.k${k}.ts`,
    request: (i) => `src/m${i}/*.ts`,
  },
];

export async function globSection({ quick = false } = {}) {
  const iterations = quick ? 30 : 200;
  const shipped = await import(path.join(repo, 'dist', 'index.js'));
  const old = await bundle('src/index.ts', 'fixed-part-rule', true);
  const rows = [];
  for (const w of WORKLOADS) {
    // Interleaved, twice each, best p50 kept: the machine is shared, and the order must not favour one.
    const runs = { exact: [], fixed: [] };
    for (let round = 0; round < 2; round++) {
      runs.exact.push(await decisions(shipped, w.held, w.request, iterations));
      runs.fixed.push(await decisions(old, w.held, w.request, iterations));
    }
    const best = (list) => list.reduce((x, y) => (y.p50 < x.p50 ? y : x));
    const exact = best(runs.exact);
    const fixed = best(runs.fixed);
    rows.push({
      workload: w.name,
      exactP50Ms: Number(exact.p50.toFixed(3)),
      exactAnswer: exact.status,
      fixedP50Ms: Number(fixed.p50.toFixed(3)),
      fixedAnswer: fixed.status,
      ratio: Number((exact.p50 / fixed.p50).toFixed(2)),
    });
  }
  // The worst pair: a search that runs to the bound (10,000 product states), then answers "overlap".
  const scope = await bundle('src/core/scope.ts', 'scope', false);
  const overlap = await bundle('src/core/glob-overlap.ts', 'glob-overlap', false);
  const worst = [];
  for (let i = 0; i < (quick ? 5 : 30); i++) {
    const a = scope.scopeFromPattern(`x${i}/*a*b*a*b*a*b*a*b*a*b*a*b/**/*a*b*a*b*a*b`, 'path');
    const b = scope.scopeFromPattern(`x${i}/*b*a*b*a*b*a*b*a*b*a*b/**/*b*a*b*a*b*a*b`, 'path');
    const start = performance.now();
    const found = overlap.globsOverlap(a, b);
    worst.push({ ms: performance.now() - start, states: found.states, bounded: found.bounded });
  }
  const worstMs = percentile(
    worst.map((w) => w.ms),
    50,
  );
  return {
    held: HELD,
    iterations,
    rows,
    worstPair: {
      p50Ms: Number(worstMs.toFixed(3)),
      maxMs: Number(Math.max(...worst.map((w) => w.ms)).toFixed(3)),
      states: worst[0].states,
      bounded: worst[0].bounded,
    },
    target: `exact / fixed-part p50 <= ${GLOB_TARGET}x`,
    pass: rows.every((r) => r.ratio <= GLOB_TARGET),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(JSON.stringify(await globSection({ quick: process.argv.includes('--quick') }), null, 2));
}
