// Bundles the bench (bench/run.ts, the forked hand-off and scaling workers, events-cost) with esbuild into
// node_modules/.cache/agent-lock-bench/: beside node_modules, so that the bundles find their
// dependencies, and out of the folders biome lints. The bench imports the library as
// src/index.ts (typed, no build needed to typecheck) but measures the built one: every import of
// src/index.ts is pointed at dist/index.js. Also bundles the library with the fixed-part glob rule
// (bench/fixed-part-rule.ts in place of src/core/glob-overlap.ts) for section (g).
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const outDir = path.join(repo, 'node_modules', '.cache', 'agent-lock-bench');
const libraryEntry = path.join(repo, 'src', 'index.ts');

const common = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  packages: 'external',
  logLevel: 'warning',
  define: { __VERSION__: '"bench"', __BENCH_REPO__: JSON.stringify(repo) },
};

/** src/index.ts (imported as ../src/index.js or ../../src/index.js) -> the built dist/index.js. */
const builtLibrary = {
  name: 'built-library',
  setup(b) {
    b.onResolve({ filter: /\/src\/index\.js$/ }, (args) => {
      const target = path.resolve(args.resolveDir, args.path.replace(/\.js$/, '.ts'));
      if (target !== libraryEntry) return undefined;
      return { path: path.relative(outDir, path.join(repo, 'dist', 'index.js')), external: true };
    });
  },
};

await build({
  ...common,
  entryPoints: {
    run: path.join(repo, 'bench', 'run.ts'),
    'handoff-worker': path.join(repo, 'bench', 'handoff-worker.ts'),
    'scaling-worker': path.join(repo, 'bench', 'scaling-worker.ts'),
    'events-cost': path.join(repo, 'bench', 'events-cost.ts'),
  },
  outdir: outDir,
  plugins: [builtLibrary],
});

await build({
  ...common,
  entryPoints: { 'fixed-part-lib': libraryEntry },
  outdir: outDir,
  plugins: [
    {
      name: 'fixed-part-rule',
      setup(b) {
        b.onResolve({ filter: /\/glob-overlap\.js$/ }, () => ({
          path: path.join(repo, 'bench', 'fixed-part-rule.ts'),
        }));
      },
    },
  ],
});
