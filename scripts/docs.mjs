// Writes docs/cli.md from the contract table (src/cli/contract.ts), the source `alock contract`
// prints: run `npm run docs` after changing a command, a flag or an answer. test/docs checks that the
// committed file is what this writes.
import { mkdirSync, writeFileSync } from 'node:fs';
import { build } from 'esbuild';

// Bundled beside node_modules, so that its imports of packages (commander) resolve from there.
const cache = new URL('../node_modules/.cache/agent-lock/', import.meta.url);
mkdirSync(cache, { recursive: true });
const bundle = new URL('contract-docs.mjs', cache);
await build({
  entryPoints: ['src/cli/contract-docs.ts'],
  bundle: true,
  platform: 'node',
  format: 'esm',
  packages: 'external',
  outfile: bundle.pathname,
  logLevel: 'warning',
});
const { contractMarkdown } = await import(bundle.href);
writeFileSync(new URL('../docs/cli.md', import.meta.url), contractMarkdown());
console.log('wrote docs/cli.md');
