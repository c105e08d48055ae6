// Bundles the CLI into one file (fast cold start: one module to load) and the library as ESM,
// then emits type declarations.
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { build } from 'esbuild';

const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
rmSync(new URL('../dist', import.meta.url), { recursive: true, force: true });
const common = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  define: { __VERSION__: JSON.stringify(version) },
  logLevel: 'warning',
};
// commander is CommonJS and requires node built-ins; an ESM bundle needs a real `require` for that.
const banner = {
  js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
};
await build({
  ...common,
  banner,
  entryPoints: { cli: 'src/cli/run-cli.ts' },
  outdir: 'dist',
  splitting: true,
  minify: true,
});
await build({ ...common, entryPoints: { index: 'src/index.ts' }, outdir: 'dist', packages: 'external' });
execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], {
  stdio: 'inherit',
});
