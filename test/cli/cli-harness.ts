/**
 * In-process harness for the command line: a temp tree without git, a temp store, and `runCli`
 * driven with captured stdout/stderr. Several agents are played by changing AGENT_ID.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runCli } from '../../src/cli/run-cli.js';
import { hostName, startStamp } from '../../src/host/process.js';
import { type Locks, openLocks } from '../../src/locks.js';

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

export interface Envelope {
  schema: string;
  command: string;
  status: string;
  ok: boolean;
  exit_code: number;
  agent: { id: string; parent_id: string | null } | null;
  locks: Record<string, unknown>[];
  conflicts: Record<string, unknown>[];
  message: string;
  error: { code: string; message: string } | null;
  [extra: string]: unknown;
}

export interface Sandbox {
  /** Real path of the tree root (no git above it). */
  readonly tree: string;
  /** The store folder (AGENT_LOCK_DIR). */
  readonly store: string;
  /** A folder beside the tree, outside it. */
  readonly outside: string;
  /** Runs the CLI as agent `agent` (AGENT_ID), with extra environment. */
  run(agent: string, argv: string[], env?: Record<string, string | undefined>): Promise<CliRun>;
  /** Runs with `--json` first and parses the single JSON object on stdout. */
  json(
    agent: string,
    argv: string[],
    env?: Record<string, string | undefined>,
  ): Promise<CliRun & { body: Envelope }>;
  envFor(agent: string, env?: Record<string, string | undefined>): Record<string, string | undefined>;
  cleanup(): void;
}

export function makeSandbox(): Sandbox {
  const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'alock-cli-')));
  const tree = path.join(base, 'repo');
  const store = path.join(base, 'store');
  const outside = path.join(base, 'repo-other');
  mkdirSync(path.join(tree, 'src', 'lib'), { recursive: true });
  mkdirSync(path.join(tree, 'docs'), { recursive: true });
  mkdirSync(outside, { recursive: true });
  const envFor = (agent: string, env: Record<string, string | undefined> = {}) => ({
    AGENT_LOCK_DIR: store,
    // A new store would otherwise probe 127.0.0.1:6379 and become a Redis store if one runs there.
    AGENT_LOCK_REDIS_PROBE: 'off',
    AGENT_ID: agent,
    ...env,
  });
  const run = async (agent: string, argv: string[], env: Record<string, string | undefined> = {}) => {
    let stdout = '';
    let stderr = '';
    const code = await runCli(argv, {
      stdout: (text) => {
        stdout += text;
      },
      stderr: (text) => {
        stderr += text;
      },
      env: envFor(agent, env),
      cwd: tree,
      isTTY: false,
    });
    return { code, stdout, stderr };
  };
  return {
    tree,
    store,
    outside,
    run,
    envFor,
    async json(agent, argv, env = {}) {
      const result = await run(agent, ['--json', ...argv], env);
      return { ...result, body: parseOneJson(result.stdout) };
    },
    cleanup() {
      rmSync(base, { recursive: true, force: true });
    },
  };
}

/** Exactly one JSON object on one line of stdout, nothing else. */
export function parseOneJson(stdout: string): Envelope {
  const lines = stdout.split('\n').filter((line) => line !== '');
  if (lines.length !== 1) throw new Error(`expected one JSON line on stdout, got ${lines.length}: ${stdout}`);
  const value = JSON.parse(lines[0]!) as unknown;
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new Error(`expected a JSON object, got ${lines[0]}`);
  return value as Envelope;
}

export const ENVELOPE_FIELDS = [
  'schema',
  'command',
  'status',
  'ok',
  'exit_code',
  'agent',
  'locks',
  'conflicts',
  'message',
  'error',
  'warnings',
] as const;

/** The lock fields docs/json.md names (token excepted: only the taker sees it). */
export const LOCK_FIELDS = [
  'id',
  'scope',
  'kind',
  'mode',
  'agent_id',
  'parent_agent_id',
  'intent',
  'tree',
  'host',
  'pid',
  'started',
  'created_at',
  'updated_at',
  'expires_at',
  'status',
  'fence',
  'frozen_paths',
  'notes',
  'stale',
] as const;

/** A stack frame line as Node prints them. */
export const STACK_FRAME = /^\s+at\s/m;

export interface DeadHolder {
  /** Opens the library as `agentId`, held by a process that is already gone. */
  locks: Locks;
  close(): Promise<void>;
}

/**
 * Plants locks for a holder that has died: a `sleep` is spawned, its pid and start stamp become the
 * holder, and it is killed (and reaped) before the caller's CLI runs.
 */
export async function openAsDeadHolder(sandbox: Sandbox, agentId: string): Promise<DeadHolder> {
  const child = spawn('sleep', ['600'], { stdio: 'ignore' });
  const pid = child.pid;
  if (pid === undefined) throw new Error('could not spawn sleep');
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const started = startStamp(pid);
  if (started === 'unknown') throw new Error('no start stamp for the sleep process');
  const locks = await openLocks({
    dir: sandbox.tree,
    env: { AGENT_LOCK_DIR: sandbox.store, AGENT_LOCK_REDIS_PROBE: 'off' },
    identity: { agentId, holder: { host: hostName(), pid, started } },
  });
  return {
    locks,
    async close() {
      await locks.close();
      child.kill('SIGKILL');
      await exited;
    },
  };
}
