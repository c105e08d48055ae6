// Bundles the CLI into one file (fast cold start: one module to load, no chunks), each lazily loaded
// command (MCP server, integrations) into a file of its own, and the library as ESM; then emits
// type declarations.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
rmSync(new URL('../dist', import.meta.url), { recursive: true, force: true });
// The Redis store's commit script as the server's script cache names it (its SHA-1), hashed here
// once: hashed on every hook call on Redis it cost milliseconds (src/backends/redis/connection.ts).
const commitScript = await build({
  entryPoints: ['src/backends/redis/commit-script.ts'],
  bundle: true,
  platform: 'node',
  format: 'cjs',
  write: false,
  logLevel: 'warning',
});
const commitModule = { exports: {} };
new Function('module', 'exports', commitScript.outputFiles[0].text)(commitModule, commitModule.exports);
const commitSha1 = createHash('sha1').update(commitModule.exports.COMMIT_LUA, 'utf8').digest('hex');
const common = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  define: { __VERSION__: JSON.stringify(version), __COMMIT_LUA_SHA1__: JSON.stringify(commitSha1) },
  logLevel: 'warning',
};
// commander is CommonJS and requires node built-ins; an ESM bundle needs a real `require` for that.
const banner = {
  js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
};
// The CLI's dynamic imports of these modules stay dynamic, pointing at their own bundles
// (dist/lazy/NAME.js), whichever module imports them.
const lazy = {
  'redis-store': 'src/backends/redis/redis-store.ts',
  server: 'src/mcp/server.ts',
  skill: 'src/integrations/skill.ts',
  hooks: 'src/integrations/hooks.ts',
  'git-guard': 'src/integrations/git-guard.ts',
  conflicts: 'src/host/git.ts',
  doctor: 'src/doctor/doctor.ts',
  // The shell grammar (WebAssembly), loaded by a hook only for a command that could write a file.
  'shell-parser': 'src/integrations/shell-parser.ts',
  watch: 'src/cli/board.ts',
  'ui-command': 'src/ui/ui-command.ts',
};
const root = fileURLToPath(new URL('..', import.meta.url));
const lazyByFile = new Map(Object.entries(lazy).map(([name, file]) => [path.join(root, file), name]));
// `within`: the bundle being built is itself in dist/lazy, beside the others; `ext`: which of a lazy
// module's two bundles it loads (the hook loads the CommonJS ones, below).
const keepLazy = (within, ext = 'js') => ({
  name: 'keep-lazy',
  setup(b) {
    b.onResolve({ filter: /^\.\.?\/.*\.js$/ }, (args) => {
      if (args.kind !== 'dynamic-import') return undefined;
      const name = lazyByFile.get(path.resolve(args.resolveDir, args.path.replace(/\.js$/, '.ts')));
      return name === undefined
        ? undefined
        : { path: `./${within ? '' : 'lazy/'}${name}.${ext}`, external: true };
    });
  },
});
// ioredis (5.x) gives its Commander class a method per Redis command, ~500 of them, one by one on
// the class's prototype: each store to a prototype takes V8's slow path, about 20 ms of every
// process that loads ioredis (a hook call on Redis, 0.7 ms the other way, measured in fresh
// processes). The same methods go on a plain object, made the prototype's own prototype: found as
// before by every Redis, Cluster and Pipeline (nothing in ioredis lists the prototype's own names).
// A build of another ioredis whose loop reads otherwise fails here, not silently.
const COMMANDER_LOOP = `commands.forEach(function (commandName) {
    Commander.prototype[commandName] = generateFunction(commandName, commandName, "utf8");
    Commander.prototype[commandName + "Buffer"] = generateFunction(commandName + "Buffer", commandName, null);
});`;
const COMMANDER_PLAIN = `const builtinCommands = {};
commands.forEach(function (commandName) {
    builtinCommands[commandName] = generateFunction(commandName, commandName, "utf8");
    builtinCommands[commandName + "Buffer"] = generateFunction(commandName + "Buffer", commandName, null);
});
Object.setPrototypeOf(Commander.prototype, builtinCommands);`;
const ioredisCommands = {
  name: 'ioredis-commands',
  setup(b) {
    b.onLoad({ filter: /[\\/]ioredis[\\/]built[\\/]utils[\\/]Commander\.js$/ }, (args) => {
      const source = readFileSync(args.path, 'utf8');
      if (!source.includes(COMMANDER_LOOP)) {
        throw new Error(`${args.path}: the command loop this build rewrites is not there (another ioredis?)`);
      }
      return { contents: source.replace(COMMANDER_LOOP, COMMANDER_PLAIN), loader: 'js' };
    });
  },
};
// The CLI's bundles carry ioredis inside; the library loads it from node_modules (redis-store.ts).
const bundled = { ...common.define, __BUNDLED_IOREDIS__: 'true' };
await build({
  ...common,
  define: bundled,
  banner,
  entryPoints: { cli: 'src/cli/run-cli.ts' },
  outdir: 'dist',
  minify: true,
  plugins: [keepLazy(false), ioredisCommands],
});
await build({
  ...common,
  define: bundled,
  banner,
  entryPoints: Object.fromEntries(Object.entries(lazy).map(([name, file]) => [`lazy/${name}`, file])),
  outdir: 'dist',
  minify: true,
  plugins: [keepLazy(true), ioredisCommands],
});
// An agent's hook runs on every tool call: bin/alock.js loads this bundle alone for
// `hooks <harness>-pre-tool-use`, so that a call on a free file parses the hook runtime and the store
// it reads, and nothing of the command line, the installers or the MCP server.
// node:crypto loads the stream modules and more with it; most hook calls need a random name or a
// hash only once a store is written. node:tls (with crypto) and node:dns come with ioredis, which
// needs them only for a TLS connection or a host name to resolve. Each export is fetched from the
// real module on first use. By either name: ioredis requires `crypto`, not `node:crypto`; the
// shim's own require of the real module is left as it is.
// Built-ins a hook call rarely needs, each loaded on first use: crypto, tls and dns (a Redis call
// over TLS, a cluster's DNS) and assert (redis-errors requires it for a parser error; loading it
// cost about 9 ms of every hook call on Redis). A function is a stand-in that loads the module
// when called (ioredis reads dns.resolveSrv into its defaults as it loads, so a getter would load
// dns at once); a class, a constant or an object is a getter; so is every export of a module that
// is a function itself (assert), which is called through a stand-in too.
const lazyBuiltins = {
  name: 'lazy-builtins',
  setup(b) {
    b.onResolve({ filter: /^(node:)?(crypto|tls|dns|assert)$/ }, (args) => {
      const name = args.path.replace(/^node:/, '');
      return args.namespace === 'lazy-builtins'
        ? { path: name, external: true }
        : { path: name, namespace: 'lazy-builtins' };
    });
    b.onLoad({ filter: /.*/, namespace: 'lazy-builtins' }, async (args) => {
      const real = (await import(`node:${args.path}`)).default;
      const names = Object.keys(real);
      const called = (n) => typeof real[n] === 'function' && /^[a-z]/.test(n);
      const exported =
        typeof real === 'function'
          ? 'const lazy = function (...a) { return load()(...a); };'
          : 'const lazy = {};';
      const members = names.map((n) =>
        called(n)
          ? `Object.defineProperty(lazy, ${JSON.stringify(n)}, { value: (...a) => load()[${JSON.stringify(n)}](...a), enumerable: true });`
          : `Object.defineProperty(lazy, ${JSON.stringify(n)}, { get: () => load()[${JSON.stringify(n)}], enumerable: true });`,
      );
      return {
        contents: [
          'let real;',
          `const load = () => (real ??= require('${args.path}'));`,
          exported,
          ...members,
          'module.exports = lazy;',
        ].join('\n'),
        loader: 'js',
      };
    });
  },
};
// CommonJS, because an ES module's import of a Node built-in evaluates every export of it
// (`node:fs` loads fs/promises and the streams, `node:crypto` WebCrypto); require() does not. The
// hook's bundle and the ones it requires lazily share these settings.
const hookCjs = {
  ...common,
  format: 'cjs',
  // The `performance` global loads perf_hooks on first use, a few milliseconds of a hook call; the
  // code only ever subtracts one reading from another, which the process's monotonic clock answers
  // alike.
  define: { ...bundled, 'import.meta.url': '__hookUrl', 'performance.now': '__hookNow' },
  banner: {
    js: [
      "'use strict';",
      "const __hookUrl = require('node:url').pathToFileURL(__filename).href;",
      'const __hookNow = () => Number(process.hrtime.bigint()) / 1e6;',
    ].join(' '),
  },
  outdir: 'dist',
  outExtension: { '.js': '.cjs' },
  minify: true,
};
await build({
  ...hookCjs,
  entryPoints: { 'lazy/hook': 'src/integrations/hook-direct.ts' },
  // bin/alock.js compiles this bundle itself, with a V8 code cache, and a script compiled that way
  // cannot run import() on Node 20 without an experimental flag: the modules the hook loads lazily
  // come in through require(), from CommonJS bundles of their own (below).
  supported: { 'dynamic-import': false },
  plugins: [keepLazy(true, 'cjs'), lazyBuiltins],
});
// The hook's lazily loaded modules as CommonJS: the shell grammar and the Redis store.
await build({
  ...hookCjs,
  entryPoints: { 'lazy/shell-parser': lazy['shell-parser'], 'lazy/redis-store': lazy['redis-store'] },
  plugins: [lazyBuiltins, ioredisCommands],
});
// shell-parser.js finds these beside itself.
for (const wasm of ['web-tree-sitter/tree-sitter.wasm', 'tree-sitter-bash/tree-sitter-bash.wasm']) {
  copyFileSync(
    new URL(`../node_modules/${wasm}`, import.meta.url),
    new URL(`../dist/lazy/${wasm.split('/').pop()}`, import.meta.url),
  );
}
// The library leaves its dependencies to the user's node_modules, except the SHA-256 of
// @noble/hashes (a few KB), bundled as in the CLI so that it stays out of the user's install.
await build({
  ...common,
  entryPoints: { index: 'src/index.ts' },
  outdir: 'dist',
  plugins: [
    {
      name: 'external-but-noble',
      setup(b) {
        b.onResolve({ filter: /^[^./]/ }, (args) =>
          args.path.startsWith('@noble/hashes/') ? undefined : { path: args.path, external: true },
        );
      },
    },
  ],
});
execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], {
  stdio: 'inherit',
});
