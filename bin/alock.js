#!/usr/bin/env node
// The only place that calls process.exit: everything else returns an exit code.
import { basename } from 'node:path';
import { runCli } from '../dist/cli.js';

process.on('SIGINT', () => process.exit(130));
const name = basename(process.argv[1] ?? 'alock').replace(/\.js$/, '');
const code = await runCli(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
  cwd: process.cwd(),
  isTTY: process.stdout.isTTY === true,
  stdin: async () => {
    const chunks = [];
    for await (const chunk of process.stdin) chunks.push(chunk);
    return Buffer.concat(chunks).toString('utf8');
  },
  programName: name === 'agent-lock' ? 'agent-lock' : 'alock',
});
process.exitCode = code;
