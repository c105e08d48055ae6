#!/usr/bin/env node
// The only place that calls process.exit: everything else returns an exit code.
import { basename } from 'node:path';
import { runCli } from '../dist/cli.js';

const SIGNALS = { SIGHUP: 1, SIGINT: 2, SIGTERM: 15 };
// A command that can stop cleanly (a wait leaving its place in line, `run` forwarding to its
// command) subscribes to these signals; without a subscriber they end the process as before.
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
const code = await runCli(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
  cwd: process.cwd(),
  isTTY: process.stdout.isTTY === true,
  stderrIsTTY: process.stderr.isTTY === true,
  onSignal: subscribe,
  stdin: async () => {
    const chunks = [];
    for await (const chunk of process.stdin) chunks.push(chunk);
    return Buffer.concat(chunks).toString('utf8');
  },
  programName: name === 'agent-lock' ? 'agent-lock' : 'alock',
});
process.exitCode = code;
