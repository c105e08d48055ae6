#!/usr/bin/env node
// The only place that calls process.exit: everything else returns an exit code.
// CommonJS (bin/package.json), unlike the rest of the package: an ES module entry starts Node's ES
// module loader, and its import of `node:fs` evaluates every export of it (fs/promises, the
// streams), milliseconds an agent's hook would pay on every tool call. The command line itself is
// still the ES module dist/cli.js, imported below.
const { readSync, writeSync } = require('node:fs');
const { basename } = require('node:path');

const SIGNALS = { SIGHUP: 1, SIGINT: 2, SIGTERM: 15 };
// A command that can stop cleanly (a wait leaving its place in line, `run` forwarding to its
// command) subscribes to these signals; without a subscriber they end the process as before.
// Once the answer is written (io.answered) a subscriber ends the process with the answer's code.
const handlers = new Set();
const onSignal = (signal) => {
  if (handlers.size === 0) process.exit(128 + SIGNALS[signal]);
  for (const handler of handlers) handler(signal);
};
process.on('SIGINT', onSignal);
const subscribe = (handler) => {
  if (handlers.size === 0) {
    process.on('SIGTERM', onSignal);
    process.on('SIGHUP', onSignal);
  }
  handlers.add(handler);
  return () => {
    handlers.delete(handler);
    if (handlers.size === 0) {
      process.off('SIGTERM', onSignal);
      process.off('SIGHUP', onSignal);
    }
  };
};
const name = basename(process.argv[1] ?? 'alock').replace(/\.js$/, '');
// A reader that went away (`alock list | head -1`) is no error of ours, and no write error may end
// in a stack trace. The exit code still says what happened to the locks, except that an answer that
// could not be written (a full disk) never exits 0.
let unwritten = false;
const lost = (error) => {
  if (error?.code === 'EPIPE' || unwritten) return;
  unwritten = true;
  process.stderr.write(
    `ERROR: ${name}: cannot write the answer: ${error.message} (${name} list shows the locks)\n`,
  );
};
process.on('exit', (code) => {
  if (unwritten && code === 0) process.exitCode = 2;
});
// Creating process.stdout or process.stderr loads Node's stream and socket modules, milliseconds an
// agent's hook pays on every tool call; the hook path touches them only when it must (see below).
const listen = () => {
  process.stdout.on('error', lost);
  process.stderr.on('error', () => {});
};
const argv = process.argv.slice(2);
/** Standard input's bytes, read through the stream; decoded by the caller, once, whole. */
const readStdinBytes = async () => {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks);
};
const readStdin = async () => (await readStdinBytes()).toString('utf8');
/** Resolves once both streams have written all they were given. */
function flushed(code) {
  return new Promise((resolve) => {
    let done = 0;
    const one = () => {
      if (++done === 2) resolve(code);
    };
    // A write's callback hears of a failure before the stream's 'error' event does.
    process.stdout.write('', (error) => {
      if (error) lost(error);
      one();
    });
    process.stderr.write('', one);
  });
}
// The hook's own input and output, read and written on the descriptors themselves. A descriptor
// that would block (a non-blocking pipe) hands the rest over to the streams, which wait for it.
let streamed = false;
const toStreams = () => {
  if (!streamed) listen();
  streamed = true;
};
function writeOut(fd, text) {
  if (!streamed) {
    const bytes = Buffer.from(text, 'utf8');
    let at = 0;
    try {
      while (at < bytes.length) at += writeSync(fd, bytes, at);
      return;
    } catch (error) {
      if (error?.code === 'EPIPE') return;
      if (error?.code !== 'EAGAIN') {
        if (fd === 1) lost(error);
        return;
      }
      text = bytes.subarray(at);
    }
    toStreams();
  }
  (fd === 1 ? process.stdout : process.stderr).write(text);
}
async function readStdinDirect() {
  const chunks = [];
  const buffer = Buffer.allocUnsafe(65536);
  for (;;) {
    let read;
    try {
      read = readSync(0, buffer, 0, buffer.length, null);
    } catch {
      // EAGAIN (a non-blocking pipe) or anything else: the stream reads the rest, as it always has.
      // Bytes, not text: a character split across the two reads must be decoded whole.
      chunks.push(await readStdinBytes());
      break;
    }
    if (read === 0) break;
    chunks.push(Buffer.from(buffer.subarray(0, read)));
  }
  return Buffer.concat(chunks).toString('utf8');
}
const programName = name === 'agent-lock' ? 'agent-lock' : 'alock';
// An agent's hook runs on every tool call: `hooks <harness>-pre-tool-use` alone skips the command
// line (its parser and every other command) and loads only the hook runtime, a bundle of its own.
// `--no-claim` (hooks install --no-claim) is the one flag it takes: the hook only checks.
const noClaim = argv.length === 3 && argv[2] === '--no-claim';

/**
 * The hook runtime, compiled with a V8 code cache (bin/code-cache.js says how and why);
 * AGENT_LOCK_HOOK_CODE_CACHE=off compiles every time.
 */
function loadHook() {
  const file = require('node:path').join(__dirname, '..', 'dist', 'lazy', 'hook.cjs');
  const setting = process.env.AGENT_LOCK_HOOK_CODE_CACHE;
  if (setting !== undefined && setting !== '' && setting !== 'on' && setting !== 'off') {
    // Refused as every bad setting of a hook is (exit 2: the harness blocks the call, and says why).
    process.stderr.write(
      `ERROR: ${name}: AGENT_LOCK_HOOK_CODE_CACHE must be on or off (got ${JSON.stringify(setting)}); fix or unset it\n`,
    );
    process.exit(2);
  }
  if (setting === 'off') return { runtime: require(file), writeCodeCaches: () => {} };
  const cache = require('./code-cache.js');
  return { runtime: cache.load(file), writeCodeCaches: cache.writeCodeCaches };
}

const loadedHook = argv[0] === 'hooks' && (argv.length === 2 || noClaim) ? loadHook() : null;
const hook = loadedHook?.runtime ?? null;

async function main() {
  if (hook?.isDirectHook(argv)) {
    const code = await hook.runDirectHook(argv[1], {
      stdout: (text) => writeOut(1, text),
      stderr: (text) => writeOut(2, text),
      env: noClaim ? { ...process.env, AGENT_LOCK_CLAIM: 'off' } : process.env,
      cwd: process.cwd(),
      stdin: readStdinDirect,
      programName,
    });
    process.exitCode = code;
    if (streamed) await flushed(code);
    loadedHook.writeCodeCaches();
    process.exit(code);
  }
  listen();
  const { runCli } = await import('../dist/cli.js');
  const code = await runCli(argv, {
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    env: process.env,
    cwd: process.cwd(),
    isTTY: process.stdout.isTTY === true,
    stderrIsTTY: process.stderr.isTTY === true,
    onSignal: subscribe,
    stdin: readStdin,
    programName,
    // From here a signal ends the process at once with the answer's code, not 128+N: a lock just
    // granted (and printed) is never reported to the caller as a failure. Subscribed before the
    // command lets go of its own subscription, so no instant falls back to the default action.
    // Only an answer that is all out stands: with part of it still queued for a full pipe, the reader
    // would get it cut off, so the signal ends the process as it would have.
    answered: (exitCode) =>
      subscribe((signal) =>
        process.exit(process.stdout.writableLength > 0 ? 128 + SIGNALS[signal] : exitCode),
      ),
  });
  // The process ends as soon as both streams have flushed: a natural exit would first wait for
  // handles still closing and then tear the runtime down, milliseconds during which a signal finds
  // its default action again and turns the exit into 143.
  process.exitCode = code;
  await flushed(code);
  process.exit(code);
}
main();
