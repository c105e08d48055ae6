#!/usr/bin/env node
// The only place that calls process.exit: everything else returns an exit code.
import { basename } from 'node:path';

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
process.stdout.on('error', lost);
process.stderr.on('error', () => {});
process.on('exit', (code) => {
  if (unwritten && code === 0) process.exitCode = 2;
});
const argv = process.argv.slice(2);
const readStdin = async () => {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
};
const programName = name === 'agent-lock' ? 'agent-lock' : 'alock';
// An agent's hook runs on every tool call: `hooks <harness>-pre-tool-use` alone skips the command
// line (its parser and every other command) and loads only the hook runtime.
const hooks = argv[0] === 'hooks' && argv.length === 2 ? await import('../dist/lazy/hooks.js') : null;
const { runCli } = hooks?.isDirectHook(argv) ? { runCli: null } : await import('../dist/cli.js');
const code =
  runCli === null
    ? await hooks.runDirectHook(argv[1], {
        stdout: (text) => process.stdout.write(text),
        stderr: (text) => process.stderr.write(text),
        env: process.env,
        cwd: process.cwd(),
        stdin: readStdin,
        programName,
      })
    : await runCli(argv, {
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
// A write's callback hears of a failure before the stream's 'error' event does.
let flushed = 0;
const flush = () => {
  if (++flushed === 2) process.exit(code);
};
process.stdout.write('', (error) => {
  if (error) lost(error);
  flush();
});
process.stderr.write('', flush);
