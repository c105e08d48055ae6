/**
 * End to end through the real binary: `node bin/alock.js` runs the bundled dist/cli.js, each run a
 * separate process, so these also show that locks hold across processes.
 */
import { spawn, spawnSync } from 'node:child_process';
import {
  closeSync,
  constants,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseOneJson, STACK_FRAME } from './cli-harness.js';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const bin = path.join(repo, 'bin', 'alock.js');
const version = (JSON.parse(readFileSync(path.join(repo, 'package.json'), 'utf8')) as { version: string })
  .version;

let base: string;
let tree: string;
let store: string;

beforeAll(() => {
  base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'alock-bin-')));
  tree = path.join(base, 'repo');
  store = path.join(base, 'store');
  mkdirSync(path.join(tree, 'src'), { recursive: true });
});

afterAll(() => {
  rmSync(base, { recursive: true, force: true });
});

/** The caller's environment without any agent-lock or agent-session setting that could leak in. */
function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(AGENT_|CLAUDE_|CODEX_|REDIS_URL$|NO_COLOR$)/.test(key)) continue;
    env[key] = value;
  }
  return { ...env, AGENT_LOCK_DIR: store, AGENT_LOCK_REDIS_PROBE: 'off', ...extra };
}

function alock(agent: string, args: string[], command: string[] = [process.execPath, bin]) {
  const [file, ...pre] = command;
  const r = spawnSync(file!, [...pre, ...args], {
    cwd: tree,
    env: cleanEnv({ AGENT_ID: agent }),
    encoding: 'utf8',
  });
  if (r.error) throw r.error;
  return { code: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

describe('the alock binary', () => {
  it("version prints package.json's version", () => {
    const r = alock('A', ['version']);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`${version}\n`);
    expect(r.stderr).toBe('');
  });

  it('two processes with different AGENT_IDs block each other', () => {
    const first = alock('A', ['acquire', 'src/**', '-m', 'refactor login']);
    expect(first.code).toBe(0);
    expect(first.stdout.split('\n')[0]).toBe('ACQUIRED src/**');

    const second = alock('B', ['acquire', 'src/a.ts']);
    expect(second.code).toBe(1);
    expect(second.stdout.split('\n')[0]).toBe('HELD src/a.ts');
    expect(second.stdout).toMatch(/by A\b/);
    expect(second.stdout).toContain('"refactor login"');

    const check = alock('B', ['--json', 'check', 'src/lib/x.ts']);
    expect(check.code).toBe(1);
    expect(parseOneJson(check.stdout)).toMatchObject({ status: 'held', exit_code: 1, ok: false });

    // And the other way round: B's own claim blocks A.
    expect(alock('B', ['acquire', '@merge']).code).toBe(0);
    const back = alock('A', ['acquire', '@merge']);
    expect(back.code).toBe(1);
    expect(back.stdout).toMatch(/by B\b/);

    expect(alock('A', ['release', 'src/**']).code).toBe(0);
    expect(alock('B', ['release', '@merge']).code).toBe(0);
    const now = alock('B', ['acquire', 'src/a.ts']);
    expect(now.code).toBe(0);
    expect(alock('B', ['release-all']).code).toBe(0);
  });

  it('release --token works from another process and another agent', () => {
    const taken = alock('A', ['--json', 'acquire', '@review/pr-7', '--ttl', '600']);
    expect(taken.code).toBe(0);
    const token = parseOneJson(taken.stdout).locks[0]?.token;
    expect(typeof token).toBe('string');
    const released = alock('daemon-2', ['release', '@review/pr-7', '--token', String(token)]);
    expect(released.code).toBe(0);
    expect(released.stdout.split('\n')[0]).toBe('RELEASED @review/pr-7');
    expect(parseOneJson(alock('C', ['--json', 'list']).stdout).locks).toEqual([]);
  });

  it('an error prints one ERROR line without a stack, exit 2', () => {
    for (const args of [
      ['acquire', ''],
      ['frobnicate'],
      ['acquire', '../outside.ts'],
      ['acquire', 'x', '--ttl', '0'],
    ]) {
      const r = alock('A', args);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      const lines = r.stderr.split('\n').filter((line) => line !== '');
      expect(lines).toHaveLength(1);
      expect(lines[0]!.startsWith('ERROR: alock: ')).toBe(true);
      expect(STACK_FRAME.test(r.stderr)).toBe(false);
    }
  });

  it('an error in --json mode is one JSON object on stdout, exit 2', () => {
    const r = alock('A', ['--json', 'acquire', '@a b']);
    expect(r.code).toBe(2);
    const body = parseOneJson(r.stdout);
    expect(body).toMatchObject({ schema: 'agent-lock/v1', status: 'error', ok: false, exit_code: 2 });
    expect(body.error?.code).toBe('E_RESOURCE_INVALID');
    expect(STACK_FRAME.test(r.stdout + r.stderr)).toBe(false);
  });

  it.runIf(existsSync('/proc/self'))(
    'a store folder that cannot be made under /proc is exit 2, not a hang',
    () => {
      // Node's recursive mkdirSync spins for ever there; 20 s bounds a hang, not a speed.
      const r = spawnSync(process.execPath, [bin, 'list'], {
        cwd: tree,
        env: { ...cleanEnv({ AGENT_ID: 'A' }), AGENT_LOCK_DIR: '/proc/agent-lock-test/store' },
        encoding: 'utf8',
        timeout: 20_000,
      });
      expect(r.signal).toBeNull();
      expect(r.status).toBe(2);
      expect(r.stderr).toMatch(
        /^ERROR: alock: cannot create the store \/proc\/agent-lock-test\/store: ENOENT/,
      );
    },
  );

  it('a bad environment value is exit 2 naming the variable', () => {
    const r = spawnSync(process.execPath, [bin, 'list'], {
      cwd: tree,
      env: cleanEnv({ AGENT_ID: 'A', AGENT_LOCK_STALE_MINUTES: 'abc' }),
      encoding: 'utf8',
    });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^ERROR: alock: AGENT_LOCK_STALE_MINUTES/);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('help exits 0 and names the commands', () => {
    const r = alock('A', ['--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('acquire');
    expect(r.stdout).toContain('release');
  });
});

describe('invoked as agent-lock (a node_modules/.bin style symlink)', () => {
  let link: string;
  beforeAll(() => {
    const binDir = path.join(base, 'node_modules', '.bin');
    mkdirSync(binDir, { recursive: true });
    link = path.join(binDir, 'agent-lock');
    symlinkSync(bin, link);
  });

  it('names itself agent-lock in errors when run directly', () => {
    const r = alock('A', ['acquire', ''], [link]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr.split('\n').filter(Boolean)).toEqual([
      expect.stringMatching(/^ERROR: agent-lock: empty scope/),
    ]);
  });

  it('names itself agent-lock when run through node', () => {
    const r = alock('A', ['frobnicate'], [process.execPath, link]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^ERROR: agent-lock: unknown command/);
  });

  it('uses its name in the next commands it suggests and in completion', () => {
    const held = alock('A', ['acquire', '@symlinked']);
    expect(held.code).toBe(0);
    const blocked = alock('B', ['acquire', '@symlinked'], [link]);
    expect(blocked.code).toBe(1);
    expect(blocked.stdout).toContain('agent-lock check @symlinked');
    expect(alock('A', ['release', '@symlinked'], [link]).code).toBe(0);
    const completion = alock('A', ['completion', 'bash'], [link]);
    expect(completion.code).toBe(0);
    expect(completion.stdout).toContain('complete -o filenames -F _agent_lock agent-lock');
  });

  it('a reader that goes away is no error: no stack, and the exit code still tells the outcome', () => {
    expect(alock('B', ['acquire', '@piped']).code).toBe(0);
    // `alock acquire @piped | true`: the reader has exited long before node writes (EPIPE).
    const script = '{ "$0" "$1" acquire @piped; echo "rc=$?" >&2; } | true';
    const r = spawnSync('/bin/sh', ['-c', script, process.execPath, bin], {
      cwd: tree,
      env: cleanEnv({ AGENT_ID: 'A' }),
      encoding: 'utf8',
    });
    expect(r.stderr).toBe('rc=1\n');
    expect(alock('B', ['release', '@piped']).code).toBe(0);
  });

  it.runIf(existsSync('/dev/full'))(
    'an answer that cannot be written is one ERROR line and never exit 0',
    () => {
      const full = openSync('/dev/full', 'w');
      try {
        const r = spawnSync(process.execPath, [bin, 'list'], {
          cwd: tree,
          env: cleanEnv({ AGENT_ID: 'A' }),
          encoding: 'utf8',
          stdio: ['ignore', full, 'pipe'],
        });
        expect(r.status).toBe(2);
        expect(r.stderr).not.toMatch(STACK_FRAME);
        expect(r.stderr.split('\n').filter(Boolean)).toEqual([
          expect.stringMatching(
            /^ERROR: alock: cannot write the answer: ENOSPC.* \(alock list shows the locks\)$/,
          ),
        ]);
      } finally {
        closeSync(full);
      }
    },
  );
});

describe('a hook reading its payload from a non-blocking pipe', () => {
  it('decodes a character split between two reads whole, so a held file is still refused', async () => {
    // Held by A. The payload names the file; it arrives in two writes, split inside the `é`: the
    // hook reads the first part on the descriptor, meets EAGAIN and reads the rest from the stream.
    expect(alock('A', ['acquire', 'src/café.ts']).code).toBe(0);
    const payload = Buffer.from(
      JSON.stringify({
        session_id: 'split-1',
        hook_event_name: 'PreToolUse',
        tool_name: 'Write',
        tool_input: { file_path: path.join(tree, 'src', 'café.ts'), content: 'x' },
        cwd: tree,
      }),
    );
    const cut = payload.indexOf(Buffer.from('é')) + 1;
    const fifo = path.join(base, 'split.fifo');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
    const writer = openSync(fifo, constants.O_WRONLY);
    // Node (libuv) makes a child's stdin blocking as it starts it; perl (part of every Debian
    // system) makes it non-blocking again, as some agent harnesses leave it, and execs the hook.
    const nonBlocking =
      'use Fcntl; fcntl(STDIN, F_SETFL, fcntl(STDIN, F_GETFL, 0) | O_NONBLOCK) or die; exec @ARGV';
    const child = spawn('perl', ['-e', nonBlocking, process.execPath, bin, 'hooks', 'claude-pre-tool-use'], {
      cwd: tree,
      env: cleanEnv({}),
      stdio: [reader, 'pipe', 'pipe'],
    });
    closeSync(reader);
    let stdout = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
    });
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    writeSync(writer, payload.subarray(0, cut));
    // Time for the hook to start and read the first part (if it is slower, it reads both parts at
    // once, and the answer must be the same).
    await new Promise((resolve) => setTimeout(resolve, 1500));
    writeSync(writer, payload.subarray(cut));
    closeSync(writer);
    expect(await exited).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({ hookSpecificOutput: { permissionDecision: 'deny' } });
    expect(alock('A', ['release', 'src/café.ts']).code).toBe(0);
  });
});

describe("a hook's check of a free file", () => {
  const edit = (file: string, env: Record<string, string>, loaded?: string) =>
    spawnSync(
      process.execPath,
      [...(loaded ? ['--require', loaded] : []), bin, 'hooks', 'claude-pre-tool-use'],
      {
        cwd: tree,
        env: cleanEnv(env),
        encoding: 'utf8',
        input: JSON.stringify({
          // A Claude Code session id is a random UUID: named by its first 8 digits, no hash to load.
          session_id: 'f7ee0001-0000-4000-8000-000000000001',
          hook_event_name: 'PreToolUse',
          tool_name: 'Edit',
          tool_input: { file_path: path.join(tree, 'src', file), old_string: 'a', new_string: 'b' },
          cwd: tree,
        }),
      },
    );
  const cryptoLoader = () => {
    const loaded = path.join(base, 'loaded.cjs');
    writeFileSync(
      loaded,
      "process.on('exit', () => process.stderr.write(JSON.stringify(process.moduleLoadList.filter((m) => /crypto/.test(m)))));\n",
    );
    return loaded;
  };

  it('answers from the store without loading node:crypto (it costs a hook call milliseconds)', () => {
    expect(alock('A', ['acquire', 'src/held.ts']).code).toBe(0);
    const r = edit('free.ts', { AGENT_LOCK_CLAIM: 'off' }, cryptoLoader());
    expect(r.status).toBe(0);
    expect(r.stdout).toBe(''); // allowed, nothing to say
    expect(JSON.parse(r.stderr)).toEqual([]);
    expect(alock('A', ['release', 'src/held.ts']).code).toBe(0);
  });

  it('answers a further edit of a file the agent claims without loading node:crypto', () => {
    // The first edit claims (a new lock needs a token); the next ones change nothing.
    expect(edit('claimed.ts', {}).status).toBe(0);
    const r = edit('claimed.ts', {}, cryptoLoader());
    expect(r.status).toBe(0);
    expect(r.stdout).toBe('');
    expect(JSON.parse(r.stderr)).toEqual([]);
    expect(alock('A', ['break', 'src/claimed.ts']).code).toBe(0);
  });
});
