// The hook runtime (dist/lazy/hook.cjs) and the Redis store it requires lazily, compiled with a V8
// code cache. Compiling the runtime's ~200 KB was the
// largest part of what a hook call costs beyond Node's own start (about 10 ms of 30), and the Redis
// store's ~190 KB as much again on a Redis hook call.
//
// The caches sit in the user's cache folder ($XDG_CACHE_HOME/agent-lock, else ~/.cache/agent-lock),
// one file per bundle, named by the bundle's build (its size, time and inode) and the Node version:
// V8 itself checks only the source's length. V8 rejects a cache made by another version or under
// other V8 flags; the call then compiles as before and writes a new one, as it does when there is
// none. (A call that loaded the shell grammar has changed two V8 flags by the time it writes, so the
// next call rejects that cache and writes another: once, after a new build.) V8 does not check a
// code cache's bytes (Node 20 turns its checksum off): a damaged one is deserialised as it is, and
// can crash the process or run other code. So each file holds its cache twice, and a copy that
// differs from the other is no cache: comparing them costs far less than loading a hash
// (node:crypto, node:zlib) would. A cache that cannot be read or written only costs the compile.
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const MAGIC = 'alock-v8';
/**
 * What the runtime requires lazily, beside itself, compiled through the cache too. Not the shell
 * grammar's glue: it changes V8's flags as it loads (a cache of it would never match), and its
 * compile is small beside the grammar's own WebAssembly.
 */
const LAZY = /^\.\/redis-store\.cjs$/;

const loaded = new Map();
/** Scripts whose cache was missing or rejected: written once the call has run. */
const toWrite = [];

function folder() {
  const home = process.env.XDG_CACHE_HOME || path.join(require('node:os').homedir(), '.cache');
  return path.join(home, 'agent-lock');
}

/** The cache a file holds, when it holds the magic and then the same bytes twice. */
function twiceWritten(bytes) {
  const half = (bytes.length - MAGIC.length) / 2;
  if (!Number.isInteger(half) || half === 0) return undefined;
  if (bytes.toString('latin1', 0, MAGIC.length) !== MAGIC) return undefined;
  const first = bytes.subarray(MAGIC.length, MAGIC.length + half);
  return first.equals(bytes.subarray(MAGIC.length + half)) ? first : undefined;
}

/** A CommonJS bundle's exports, compiled with its cache when there is a good one. */
function load(file) {
  const known = loaded.get(file);
  if (known !== undefined) return known.exports;
  let source;
  let cacheFile = null;
  let cached;
  try {
    source = fs.readFileSync(file, 'utf8');
    const stat = fs.statSync(file);
    const build = [process.version, process.arch, stat.size, Math.trunc(stat.mtimeMs), stat.ino].join('-');
    cacheFile = path.join(folder(), `${path.basename(file, '.cjs')}-${build}.v8`);
    cached = twiceWritten(fs.readFileSync(cacheFile));
  } catch {
    // No cache yet (or no home): compile, and write one at the end.
  }
  if (source === undefined) return require(file);
  const vm = require('node:vm');
  const Module = require('node:module');
  const script = new vm.Script(Module.wrap(source), { filename: file, cachedData: cached });
  const module = { exports: {}, filename: file, id: file };
  loaded.set(file, module);
  const plain = Module.createRequire(file);
  const own = (id) => (LAZY.test(id) ? load(path.join(path.dirname(file), id)) : plain(id));
  script.runInThisContext().call(module.exports, module.exports, own, module, file, path.dirname(file));
  if (cacheFile !== null && (cached === undefined || script.cachedDataRejected)) {
    toWrite.push({ script, cacheFile });
  }
  return module.exports;
}

/** Writes the caches that were missing, once the call has run (so they hold what it compiled). */
function writeCodeCaches() {
  for (const { script, cacheFile } of toWrite.splice(0)) {
    try {
      const dir = path.dirname(cacheFile);
      fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
      const temporary = `${cacheFile}.${process.pid}.tmp`;
      const data = script.createCachedData();
      fs.writeFileSync(temporary, Buffer.concat([Buffer.from(MAGIC, 'latin1'), data, data]), { mode: 0o600 });
      fs.renameSync(temporary, cacheFile);
      // This bundle's caches of earlier builds or other Node versions, and what a killed writer
      // left: one is enough.
      const prefix = `${path.basename(cacheFile).replace(/-v\d.*$/, '')}-v`;
      for (const name of fs.readdirSync(dir)) {
        if (name.startsWith(prefix) && path.join(dir, name) !== cacheFile) {
          fs.rmSync(path.join(dir, name), { force: true });
        }
      }
    } catch {
      // A cache folder that cannot be written (a read-only home in a sandbox) only costs the compile.
    }
  }
}

module.exports = { load, writeCodeCaches };
