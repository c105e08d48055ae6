/**
 * Trespass end to end through the real binary, each step its own process: a holder locks a file in
 * a git tree; another agent's shell call runs as a harness runs it (`alock hooks claude-pre-tool-use`,
 * then the real command, `python3 -c` writing the held file, then `alock hooks claude-post-tool-use`).
 * The store records `trespassed`, the agent reads what it did, the holder is told once on its next
 * hook call, and `alock log` shows it. A hook call with no lock held loads nothing more than before.
 */
import { spawnSync } from 'node:child_process';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const bin = path.join(repo, 'bin', 'alock.js');

let base: string;
let tree: string;
let tmp: string;

beforeAll(() => {
  base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'alock-trespass-')));
  tree = path.join(base, 'repo');
  tmp = path.join(base, 'tmp');
  mkdirSync(path.join(tree, 'src'), { recursive: true });
  mkdirSync(tmp);
  const git = (...args: string[]) => {
    const r = spawnSync('git', args, { cwd: tree, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
  };
  git('init', '-q');
  writeFileSync(path.join(tree, 'src', 'held.ts'), 'export const held = 1;\n');
  writeFileSync(path.join(tree, 'src', 'free.ts'), 'export const free = 1;\n');
  git('add', '.');
  git('-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-qm', 'start');
});

afterAll(() => {
  rmSync(base, { recursive: true, force: true });
});

/** The caller's environment without any agent-lock or agent-session setting that could leak in. */
function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(AGENT_|CLAUDE_|CODEX_|REDIS_URL$|NO_COLOR$|TMPDIR$)/.test(key)) continue;
    env[key] = value;
  }
  return { ...env, AGENT_LOCK_REDIS_PROBE: 'off', AGENT_PARENT_ID: 'none', TMPDIR: tmp, ...extra };
}

function alock(args: string[], env: Record<string, string> = {}, input?: string, node: string[] = []) {
  return spawnSync(process.execPath, [...node, bin, ...args], {
    cwd: tree,
    env: cleanEnv(env),
    encoding: 'utf8',
    ...(input === undefined ? {} : { input }),
  });
}

/** The other agent's Claude Code session (a random UUID, as Claude Code's): agent claude-5e1f0c3a. */
const OTHER_SESSION = '5e1f0c3a-8b2d-4c6e-9a7f-1b3c5d7e9f00';

/** A Claude Code Bash call's payload, before or after the call. */
function bash(event: 'PreToolUse' | 'PostToolUse', session: string, id: string, command: string): string {
  return JSON.stringify({
    session_id: session,
    transcript_path: `/home/dev/.claude/projects/repo/${session}.jsonl`,
    cwd: tree,
    permission_mode: 'default',
    hook_event_name: event,
    tool_name: 'Bash',
    tool_input: { command, description: 'run it' },
    tool_use_id: id,
    ...(event === 'PostToolUse' ? { tool_response: { stdout: '', stderr: '', interrupted: false } } : {}),
  });
}

function context(stdout: string): string | null {
  if (stdout.trim() === '') return null;
  const out = JSON.parse(stdout) as { hookSpecificOutput?: { additionalContext?: string } };
  return out.hookSpecificOutput?.additionalContext ?? null;
}

describe('a shell command that changes a file another agent holds', () => {
  it('is recorded, told to the agent that ran it, and to the holder once on its next hook call', () => {
    expect(alock(['acquire', 'src/held.ts', '-m', 'rename the export'], { AGENT_ID: 'holder' }).status).toBe(
      0,
    );
    // The file's name is built inside Python (spelled backwards): no word of the command names it.
    const command = `python3 -c "open('st.dleh/crs'[::-1],'w').write('export const held = 2;\\n')"`;

    // The harness's pre-tool hook: the command is not refused (no parser sees its write).
    const pre = alock(
      ['hooks', 'claude-pre-tool-use'],
      {},
      bash('PreToolUse', OTHER_SESSION, 'toolu_p1', command),
    );
    expect(pre.status).toBe(0);
    expect(pre.stdout).not.toContain('deny');

    // The command itself, as the harness's shell runs it.
    const run = spawnSync('sh', ['-c', command], { cwd: tree, encoding: 'utf8' });
    expect(run.status, run.stderr).toBe(0);
    expect(readFileSync(path.join(tree, 'src', 'held.ts'), 'utf8')).toBe('export const held = 2;\n');

    const post = alock(
      ['hooks', 'claude-post-tool-use'],
      {},
      bash('PostToolUse', OTHER_SESSION, 'toolu_p1', command),
    );
    expect(post.status).toBe(0);
    expect(post.stderr).toBe('');
    const told = context(post.stdout);
    expect(told).toContain('your shell command changed src/held.ts');
    expect(told).toContain('holder holds src/held.ts, intent "rename the export"');
    expect(told).toContain('You are claude-5e1f0c3a');
    expect(told).toContain('git checkout -- src/held.ts');

    const log = alock(['--json', 'log'], { AGENT_ID: 'reader' });
    expect(log.status).toBe(0);
    const events = log.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((e) => e.type === 'trespassed');
    expect(events).toMatchObject([
      {
        type: 'trespassed',
        agent_id: 'holder',
        by: 'claude-5e1f0c3a',
        scope: 'src/held.ts',
        files: ['src/held.ts'],
        reason: command,
      },
    ]);
    expect(alock(['log'], { AGENT_ID: 'reader' }).stdout).toMatch(
      /TRESPASSED src\/held\.ts holder by claude-5e1f0c3a .*: python3 -c .* \[src\/held\.ts\]/,
    );

    // The holder's next hook call (an edit of something else) tells it; the one after does not.
    const holderCall = (id: string) =>
      JSON.stringify({
        session_id: 'sess-holder',
        cwd: tree,
        hook_event_name: 'PostToolUse',
        tool_name: 'Edit',
        tool_input: { file_path: path.join(tree, 'src', 'free.ts'), old_string: '1', new_string: '2' },
        tool_response: { success: true },
        tool_use_id: id,
      });
    const first = alock(['hooks', 'claude-post-tool-use'], { AGENT_ID: 'holder' }, holderCall('toolu_h1'));
    expect(context(first.stdout)).toContain(
      'claude-5e1f0c3a changed src/held.ts, which you hold (src/held.ts)',
    );
    const second = alock(['hooks', 'claude-post-tool-use'], { AGENT_ID: 'holder' }, holderCall('toolu_h2'));
    expect(second.status).toBe(0);
    expect(second.stdout).toBe('');

    // Nothing is left behind for this call: its stamp was taken, the notice told.
    expect(readdirSync(path.join(tmp, readdirSync(tmp)[0]!, 'stamps'))).toEqual([]);
    expect(readdirSync(path.join(tmp, readdirSync(tmp)[0]!, 'tell'))).toEqual([]);
    expect(alock(['release', 'src/held.ts'], { AGENT_ID: 'holder' }).status).toBe(0);
  });

  it('costs a shell call with no lock held no node:crypto, before or after', () => {
    const loaded = path.join(base, 'loaded.cjs');
    writeFileSync(
      loaded,
      "process.on('exit', () => process.stderr.write(JSON.stringify(process.moduleLoadList.filter((m) => /crypto/.test(m)))));\n",
    );
    for (const [action, event] of [
      ['claude-pre-tool-use', 'PreToolUse'],
      ['claude-post-tool-use', 'PostToolUse'],
    ] as const) {
      const r = alock(
        ['hooks', action],
        {},
        // A Claude Code session id is a random UUID: named by its first 8 digits, no hash to load.
        bash(event, 'f7ee0002-0000-4000-8000-000000000002', 'toolu_f1', 'npm test 2>&1 | tail -5'),
        ['--require', loaded],
      );
      expect(r.status).toBe(0);
      expect(r.stdout).toBe('');
      expect(JSON.parse(r.stderr)).toEqual([]);
    }
  });
});
