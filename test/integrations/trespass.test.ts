/**
 * Trespass, per harness: a shell call's pre-tool payload and its post-tool payload
 * (test/integrations/fixtures/hooks/trespass/<harness>.json, each naming its source and version)
 * fed in-process to `alock hooks <harness>-pre-tool-use` and `<harness>-post-tool-use`, around a
 * change to a file another agent holds, against a real file store in a temp tree.
 */
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/run-cli.js';
import { sessionAgentId } from '../../src/core/identity.js';
import { openLocks } from '../../src/locks.js';
import { prune } from '../../src/integrations/trespass-folder.js';
import { shellKey } from '../../src/integrations/trespass-hooks.js';
import { serveDashboard } from '../../src/ui/dashboard.js';
import { DASHBOARD_HTML } from '../../src/ui/page.js';
import { makeSandbox, type Sandbox } from '../cli/cli-harness.js';

const HARNESSES = ['claude', 'codex', 'gemini', 'cursor', 'opencode', 'copilot', 'cline'] as const;
type Harness = (typeof HARNESSES)[number];

interface Fixture {
  harness: string;
  source: string;
  version: string;
  /** Whether the harness reads a post-tool answer the agent sees. */
  tells: boolean;
  pre: unknown;
  post: unknown;
  holder_post?: unknown;
}

function fixture(harness: Harness): Fixture {
  const file = path.join(import.meta.dirname, 'fixtures', 'hooks', 'trespass', `${harness}.json`);
  return JSON.parse(readFileSync(file, 'utf8')) as Fixture;
}

/**
 * A write no shell parser can see: the file's name is built inside Python (spelled backwards), so
 * no word of the command names it (a command that did would be refused before it ran).
 */
const COMMAND = `python3 -c "open('st.a/crs'[::-1],'w').write('changed')"`;

let sandbox: Sandbox;
let tmp: string;
beforeEach(() => {
  sandbox = makeSandbox();
  tmp = path.join(path.dirname(sandbox.tree), 'tmp');
  mkdirSync(tmp);
  writeFileSync(path.join(sandbox.tree, 'src', 'a.ts'), 'export const a = 1;\n');
});
afterEach(() => sandbox.cleanup());

/** The payload with the tree and the command filled in (also inside a JSON text, as Copilot sends its args). */
function fill(payload: unknown, command = COMMAND): string {
  const put = (value: unknown): unknown => {
    if (typeof value === 'string') {
      if (value.startsWith('{"') && value.includes('{{COMMAND}}'))
        return JSON.stringify(put(JSON.parse(value)));
      return value.replaceAll('{{TREE}}', sandbox.tree).replaceAll('{{COMMAND}}', command);
    }
    if (Array.isArray(value)) return value.map(put);
    if (typeof value === 'object' && value !== null) {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, put(v)]));
    }
    return value;
  };
  return JSON.stringify(put(payload));
}

/** Takes a lock as `agent`, with no parent inferred from the test's own process. */
async function acquire(agent: string, ...argv: string[]) {
  expect((await sandbox.run(agent, ['acquire', ...argv], { AGENT_PARENT_ID: 'none' })).code).toBe(0);
}

async function hook(action: string, stdin: string, env: Record<string, string | undefined> = {}) {
  let stdout = '';
  let stderr = '';
  const code = await runCli(['hooks', action], {
    stdout: (t) => {
      stdout += t;
    },
    stderr: (t) => {
      stderr += t;
    },
    env: { AGENT_LOCK_DIR: sandbox.store, AGENT_LOCK_REDIS_PROBE: 'off', TMPDIR: tmp, ...env },
    cwd: sandbox.tree,
    isTTY: false,
    stdin: async () => stdin,
  });
  const output = stdout.trim() === '' ? null : (JSON.parse(stdout) as Record<string, unknown>);
  return { code, stdout, stderr, output };
}

/** The context a harness's post-tool answer adds for the agent, or null when it adds none. */
function told(harness: Harness, out: Record<string, unknown> | null): string | null {
  if (out === null) return null;
  switch (harness) {
    case 'claude':
    case 'codex':
    case 'gemini': {
      const specific = out.hookSpecificOutput as Record<string, unknown> | undefined;
      expect(specific?.hookEventName).toBe(harness === 'gemini' ? 'AfterTool' : 'PostToolUse');
      return typeof specific?.additionalContext === 'string' ? specific.additionalContext : null;
    }
    case 'opencode':
      return typeof out.context === 'string' ? out.context : null;
    case 'cline':
      expect(out.cancel).toBe(false);
      return typeof out.contextModification === 'string' ? out.contextModification : null;
    default:
      throw new Error(`${harness} answers nothing after a call, yet it printed ${JSON.stringify(out)}`);
  }
}

async function trespasses() {
  const locks = await openLocks({ dir: sandbox.tree, env: sandbox.envFor('reader') });
  try {
    return (await locks.events(100)).filter((e) => e.type === 'trespassed');
  } finally {
    await locks.close();
  }
}

describe.each(HARNESSES)('trespass through %s hooks', (harness) => {
  const fx = fixture(harness);

  it('names its source and version, and pairs a shell call before and after', () => {
    expect(fx.harness).toBe(harness);
    expect(fx.source.length).toBeGreaterThan(30);
    expect(fx.version.length).toBeGreaterThan(5);
    expect(JSON.stringify(fx.pre)).toContain('{{COMMAND}}');
    expect(JSON.stringify(fx.post)).toContain('{{COMMAND}}');
    expect(shellKey(harness, JSON.parse(fill(fx.pre)), COMMAND)).toBe(
      shellKey(harness, JSON.parse(fill(fx.post)), COMMAND),
    );
  });

  it('records a held file changed by a shell command no parser reads, and tells both agents', async () => {
    await acquire('other-agent', 'src/a.ts', '-m', 'refactor login');
    const pre = await hook(`${harness}-pre-tool-use`, fill(fx.pre));
    expect(pre.code).toBe(0);
    expect(JSON.stringify(pre.output ?? {})).not.toMatch(/deny|cancel":true/);
    // The command runs: here the file is changed as `python3 -c` would (the process test runs it).
    writeFileSync(path.join(sandbox.tree, 'src', 'a.ts'), 'changed');
    const post = await hook(`${harness}-post-tool-use`, fill(fx.post));
    expect(post.code).toBe(0);
    expect(post.stderr).toBe('');

    const events = await trespasses();
    expect(events).toHaveLength(1);
    const [event] = events;
    expect(event).toMatchObject({
      type: 'trespassed',
      agent_id: 'other-agent',
      scope: 'src/a.ts',
      files: ['src/a.ts'],
      reason: COMMAND,
      intent: 'refactor login',
    });
    expect(event!.by).toMatch(new RegExp(`^${harness}-`));

    const text = told(harness, post.output);
    if (fx.tells) {
      expect(text).toContain(`your shell command changed src/a.ts`);
      expect(text).toContain('other-agent holds src/a.ts, intent "refactor login"');
      expect(text).toContain(`You are ${event!.by}`);
      expect(text).toContain('git checkout -- src/a.ts');
    } else {
      expect(text).toBeNull();
    }

    // The same call's post hook again (a harness that runs it twice) records nothing more.
    await hook(`${harness}-post-tool-use`, fill(fx.post));
    expect(await trespasses()).toHaveLength(1);

    if (fx.holder_post !== undefined) {
      // The holder's next call: told once, by its own harness, then never again.
      const first = await hook(`${harness}-post-tool-use`, fill(fx.holder_post), { AGENT_ID: 'other-agent' });
      const notice = told(harness, first.output);
      expect(notice).toContain(`${event!.by} changed src/a.ts, which you hold`);
      expect(notice).toContain(COMMAND.replaceAll('"', '\\"'));
      const second = await hook(`${harness}-post-tool-use`, fill(fx.holder_post), {
        AGENT_ID: 'other-agent',
      });
      expect(told(harness, second.output)).toBeNull();
    }
  });

  it('says nothing and records nothing when the held file is left alone', async () => {
    await acquire('other-agent', 'src/a.ts');
    await hook(`${harness}-pre-tool-use`, fill(fx.pre, 'ls -la src'));
    const post = await hook(`${harness}-post-tool-use`, fill(fx.post, 'ls -la src'));
    expect(told(harness, post.output)).toBeNull();
    expect(await trespasses()).toHaveLength(0);
  });
});

describe('trespass', () => {
  const claude = fixture('claude');

  it('stamps nothing when no other agent holds a lock in the tree', async () => {
    await acquire('some-agent', '@deploy');
    await hook('claude-pre-tool-use', fill(claude.pre));
    // Only what the call read is kept (an empty list), for the next call.
    const [folder] = readdirSync(tmp);
    expect(readdirSync(path.join(tmp, folder!))).toEqual(['held']);
  });

  it('writes nothing at all in a tree without a store', async () => {
    rmSync(sandbox.store, { recursive: true, force: true });
    await hook('claude-pre-tool-use', fill(claude.pre, 'npm test'));
    expect(existsSync(sandbox.store)).toBe(false);
    expect(readdirSync(tmp)).toEqual([]);
  });

  it("counts a file made where another agent's glob lock reaches as created", async () => {
    await acquire('other-agent', 'src/lib/**');
    const command = 'python3 make.py';
    await hook('claude-pre-tool-use', fill(claude.pre, command));
    writeFileSync(path.join(sandbox.tree, 'src', 'lib', 'new.ts'), 'x');
    const post = await hook('claude-post-tool-use', fill(claude.post, command));
    expect(told('claude', post.output)).toContain('your shell command created src/lib/new.ts');
    expect(await trespasses()).toMatchObject([
      { scope: 'src/lib/**', files: ['src/lib/new.ts'], reason: command },
    ]);
  });

  it('does not use a stamp past its age (12 hours): it may be of another call with the same key', async () => {
    await acquire('other-agent', 'src/a.ts');
    await hook('claude-pre-tool-use', fill(claude.pre));
    const stamps = path.join(tmp, readdirSync(tmp)[0]!, 'stamps');
    const [name] = readdirSync(stamps);
    const file = path.join(stamps, name!);
    const stamp = JSON.parse(readFileSync(file, 'utf8')) as { at: number };
    writeFileSync(file, JSON.stringify({ ...stamp, at: stamp.at - 13 * 60 * 60 * 1000 }));
    writeFileSync(path.join(sandbox.tree, 'src', 'a.ts'), 'changed');
    const post = await hook('claude-post-tool-use', fill(claude.post));
    expect(post.output).toBeNull();
    expect(await trespasses()).toHaveLength(0);
    expect(readdirSync(stamps)).toEqual([]);
  });

  it('leaves up to 256 stamps unlooked at, and past that keeps the newest 128 not past their age', () => {
    const stamps = path.join(tmp, 'prune-test', 'stamps');
    mkdirSync(stamps, { recursive: true });
    const now = Date.now() / 1000;
    const put = (i: number, age: number) => {
      const file = path.join(stamps, `old-${String(i).padStart(3, '0')}.json`);
      writeFileSync(file, '{}');
      utimesSync(file, now - age, now - age);
    };
    // 255 left behind, 5 of them past their age: nothing is looked at yet.
    for (let i = 0; i < 255; i++) put(i, i < 5 ? 86_400 : 60 + 255 - i);
    prune(stamps, 12 * 60 * 60 * 1000, Date.now(), 256);
    expect(readdirSync(stamps)).toHaveLength(255);
    // Two more: past 256, the aged ones go, and all but the newest 128.
    put(255, 1);
    put(256, 2);
    prune(stamps, 12 * 60 * 60 * 1000, Date.now(), 256);
    const left = readdirSync(stamps).sort();
    expect(left).toHaveLength(128);
    expect(left.at(-1)).toBe('old-256.json');
    expect(left[0]).toBe('old-129.json');
  });

  it('drops every notice past its age whenever one is left: a file in tell/ makes every hook call look', () => {
    const tell = path.join(tmp, 'prune-test', 'tell');
    mkdirSync(tell, { recursive: true });
    const now = Date.now() / 1000;
    for (const [name, age] of [
      ['gone.json', 2 * 86_400],
      ['fresh.json', 60],
    ] as const) {
      writeFileSync(path.join(tell, name), '{}');
      utimesSync(path.join(tell, name), now - age, now - age);
    }
    prune(tell, 24 * 60 * 60 * 1000, Date.now());
    expect(readdirSync(tell)).toEqual(['fresh.json']);
  });

  describe('what a stamp keeps between shell calls', () => {
    const folder = () => path.join(tmp, readdirSync(tmp)[0]!);
    const stampedScopes = () => {
      const stamps = path.join(folder(), 'stamps');
      const [name] = readdirSync(stamps);
      const stamp = JSON.parse(readFileSync(path.join(stamps, name!), 'utf8')) as {
        locks: { scope: string }[];
      };
      rmSync(path.join(stamps, name!));
      return stamp.locks.map((l) => l.scope).sort();
    };
    /** The kept list of the (one) agent, changed by `change`. */
    const tamper = (change: (lock: Record<string, unknown>) => Record<string, unknown>) => {
      const held = path.join(folder(), 'held');
      const [name] = readdirSync(held);
      const file = path.join(held, name!);
      const kept = JSON.parse(readFileSync(file, 'utf8')) as { locks: Record<string, unknown>[] };
      writeFileSync(file, JSON.stringify({ ...kept, locks: kept.locks.map(change) }));
    };

    it('takes the locks from its last read while the log is unchanged, and reads the store once it changes', async () => {
      await acquire('other-agent', 'src/a.ts');
      await hook('claude-pre-tool-use', fill(claude.pre));
      expect(stampedScopes()).toEqual(['src/a.ts']);
      // What the next call stamps comes from the kept list: the log is as it was.
      tamper((lock) => ({ ...lock, scope: 'src/kept.ts' }));
      await hook('claude-pre-tool-use', fill(claude.pre));
      expect(stampedScopes()).toEqual(['src/kept.ts']);
      // A commit changes the log: the store is read again, and the new read kept.
      await acquire('other-agent', 'docs/x.md');
      await hook('claude-pre-tool-use', fill(claude.pre));
      expect(stampedScopes()).toEqual(['docs/x.md', 'src/a.ts']);
      await hook('claude-pre-tool-use', fill(claude.pre));
      expect(stampedScopes()).toEqual(['docs/x.md', 'src/a.ts']);
    });

    it.each([
      ['its holder is gone', { pid: 2 ** 22 + 17, started: 'gone' }],
      ['its lease ran out', { expires_at: Date.now() - 1000 }],
      ['its holder on another host was not heard of for long', { host: 'elsewhere', updated_at: 0 }],
    ])('reads the store when a kept lock no longer stands (%s)', async (_why, change) => {
      await acquire('other-agent', 'src/a.ts');
      await hook('claude-pre-tool-use', fill(claude.pre));
      expect(stampedScopes()).toEqual(['src/a.ts']);
      tamper((lock) => ({ ...lock, scope: 'src/kept.ts', ...change }));
      await hook('claude-pre-tool-use', fill(claude.pre));
      expect(stampedScopes()).toEqual(['src/a.ts']);
    });

    it.each([
      ['null', (file: string) => writeFileSync(file, 'null')],
      ['not JSON', (file: string) => writeFileSync(file, '{"key":')],
      [
        'a pipe',
        (file: string) => {
          rmSync(file);
          execFileSync('mkfifo', [file]);
        },
      ],
      [
        'a link to /dev/zero',
        (file: string) => {
          rmSync(file);
          symlinkSync('/dev/zero', file);
        },
      ],
      [
        'another key',
        (file: string) =>
          writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, 'utf8')), key: 'other' })),
      ],
      [
        'a lock without its lease field',
        (file: string) => {
          const kept = JSON.parse(readFileSync(file, 'utf8')) as { locks: Record<string, unknown>[] };
          const locks = kept.locks.map(({ expires_at: _, ...lock }) => ({ ...lock, scope: 'src/kept.ts' }));
          writeFileSync(file, JSON.stringify({ ...kept, locks }));
        },
      ],
    ])('reads the store, and keeps its read anew, when the kept file is %s', async (_what, damage) => {
      await acquire('other-agent', 'src/a.ts');
      await hook('claude-pre-tool-use', fill(claude.pre));
      expect(stampedScopes()).toEqual(['src/a.ts']);
      const held = path.join(folder(), 'held');
      const file = path.join(held, readdirSync(held)[0]!);
      damage(file);
      await hook('claude-pre-tool-use', fill(claude.pre));
      expect(stampedScopes()).toEqual(['src/a.ts']);
      const kept = JSON.parse(readFileSync(file, 'utf8')) as { locks: { scope: string }[] };
      expect(kept.locks.map((l) => l.scope)).toEqual(['src/a.ts']);
    });

    it('keeps an empty list when only the agent itself holds locks, and stamps nothing', async () => {
      await acquire('claude-7d2c9e4a', 'src/a.ts');
      await hook('claude-pre-tool-use', fill(claude.pre));
      const held = path.join(folder(), 'held');
      const [name] = readdirSync(held);
      expect(JSON.parse(readFileSync(path.join(held, name!), 'utf8')).locks).toEqual([]);
      expect(readdirSync(folder())).toEqual(['held']);
      // Another agent's lock changes the log: the next call reads it, and stamps.
      await acquire('other-agent', 'docs/x.md');
      await hook('claude-pre-tool-use', fill(claude.pre));
      expect(stampedScopes()).toEqual(['docs/x.md']);
    });
  });

  it("never counts an agent's change to its own held file", async () => {
    await acquire('claude-7d2c9e4a', 'src/a.ts');
    await hook('claude-pre-tool-use', fill(claude.pre));
    writeFileSync(path.join(sandbox.tree, 'src', 'a.ts'), 'changed');
    const post = await hook('claude-post-tool-use', fill(claude.post));
    expect(post.output).toBeNull();
    expect(await trespasses()).toHaveLength(0);
  });

  it('is shown by log, watch and the ui', async () => {
    await acquire('other-agent', 'src/a.ts');
    await hook('claude-pre-tool-use', fill(claude.pre));
    writeFileSync(path.join(sandbox.tree, 'src', 'a.ts'), 'changed');
    await hook('claude-post-tool-use', fill(claude.post));
    const line = /TRESPASSED src\/a\.ts other-agent by claude-7d2c9e4a.*: python3 -c .* \[src\/a\.ts\]/;
    expect((await sandbox.run('reader', ['log'])).stdout).toMatch(line);
    // Off a terminal, watch prints one snapshot of the board.
    expect((await sandbox.run('reader', ['watch'])).stdout).toMatch(line);
    const locks = await openLocks({ dir: sandbox.tree, env: sandbox.envFor('reader') });
    const ui = await serveDashboard(locks);
    try {
      const state = (await (await fetch(new URL('/api/state', ui.url))).json()) as {
        events: { type: string; by: string; files?: string[] }[];
      };
      expect(state.events.filter((e) => e.type === 'trespassed')).toMatchObject([
        { by: 'claude-7d2c9e4a', files: ['src/a.ts'] },
      ]);
      expect(DASHBOARD_HTML).toContain("'trespassed'");
    } finally {
      await ui.close();
      await locks.close();
    }
  });

  it('tells the holder on its next pre-tool call already, where the harness reads context there', async () => {
    await acquire('other-agent', 'src/a.ts');
    await hook('claude-pre-tool-use', fill(claude.pre));
    writeFileSync(path.join(sandbox.tree, 'src', 'a.ts'), 'changed');
    await hook('claude-post-tool-use', fill(claude.post));
    const edit = {
      session_id: 'holder-session',
      cwd: sandbox.tree,
      hook_event_name: 'PreToolUse',
      tool_name: 'Edit',
      tool_input: {
        file_path: path.join(sandbox.tree, 'docs', 'notes.md'),
        old_string: 'a',
        new_string: 'b',
      },
      tool_use_id: 'toolu_h9',
    };
    const before = await hook('claude-pre-tool-use', JSON.stringify(edit), { AGENT_ID: 'other-agent' });
    expect(before.output).toEqual({
      hookSpecificOutput: {
        hookEventName: 'PreToolUse',
        additionalContext: expect.stringContaining('claude-7d2c9e4a changed src/a.ts, which you hold'),
      },
    });
    // Told once: its post-tool hook, and its next call, say nothing more.
    const after = await hook(
      'claude-post-tool-use',
      JSON.stringify({ ...edit, hook_event_name: 'PostToolUse' }),
      {
        AGENT_ID: 'other-agent',
      },
    );
    expect(after.output).toBeNull();
    expect(
      (await hook('claude-pre-tool-use', JSON.stringify(edit), { AGENT_ID: 'other-agent' })).output,
    ).toBeNull();
  });

  it("reaches the model through the OpenCode plugin's tool.execute.after", async () => {
    expect((await sandbox.json('me', ['hooks', 'install', '--for', 'opencode'])).body.status).toBe(
      'installed',
    );
    await acquire('other-agent', 'src/a.ts', '-m', 'refactor login');
    const bin = path.join(sandbox.outside, 'bin');
    mkdirSync(bin, { recursive: true });
    symlinkSync(path.resolve('bin/alock.js'), path.join(bin, 'alock'));
    // The plugin runs alock with the process's own environment: set for this test, then put back
    // key by key (os.tmpdir() reads TMPDIR from the live environment).
    const keys = ['AGENT_LOCK_BIN', 'AGENT_LOCK_DIR', 'AGENT_LOCK_REDIS_PROBE', 'TMPDIR', 'AGENT_ID'];
    const saved = Object.fromEntries(keys.map((key) => [key, process.env[key]]));
    Object.assign(process.env, {
      AGENT_LOCK_BIN: path.join(bin, 'alock'),
      AGENT_LOCK_DIR: sandbox.store,
      AGENT_LOCK_REDIS_PROBE: 'off',
      TMPDIR: tmp,
    });
    delete process.env.AGENT_ID;
    try {
      const file = path.join(sandbox.tree, '.opencode/plugins/agent-lock.js');
      const mod = (await import(pathToFileURL(file).href)) as {
        AgentLock: (ctx: unknown) => Promise<Record<string, (i: unknown, o: unknown) => Promise<void>>>;
      };
      const client = { session: { get: async () => ({ data: {} }) } };
      const hooks = await mod.AgentLock({ client, directory: sandbox.tree });
      const input = { tool: 'bash', sessionID: 'ses_plugin_trespass', callID: 'call_p1' };
      await hooks['tool.execute.before']!(input, { args: { command: COMMAND, description: 'update' } });
      execFileSync('sh', ['-c', COMMAND], { cwd: sandbox.tree });
      // tool.execute.after gets no args in OpenCode 1.x: the plugin kept them from before.
      const output = { title: 'bash', output: 'done', metadata: {} };
      await hooks['tool.execute.after']!(input, output);
      expect(output.output).toMatch(/^done\n\nagent-lock: your shell command changed src\/a\.ts/);
      expect(output.output).toContain('other-agent holds src/a.ts, intent "refactor login"');
    } finally {
      for (const key of keys) {
        if (saved[key] === undefined) delete process.env[key];
        else process.env[key] = saved[key];
      }
    }
    // OpenCode's time-ordered session ids are named by a hash of the whole id.
    expect(await trespasses()).toMatchObject([
      { by: sessionAgentId('opencode', 'ses_plugin_trespass'), files: ['src/a.ts'] },
    ]);
  });

  it('pairs a Cline CLI call by its tool call id, whatever its command text', () => {
    const pre = { hookName: 'tool_call', taskId: 't1', tool_call: { id: 'tc_9', name: 'run_commands' } };
    const post = { hookName: 'tool_result', taskId: 't1', tool_result: { id: 'tc_9', name: 'run_commands' } };
    expect(shellKey('cline', pre, 'ls')).toBe(shellKey('cline', post, 'ls\n'));
    expect(shellKey('cline', pre, 'ls')).not.toBe(
      shellKey('cline', { ...post, tool_result: { id: 'tc_8' } }, 'ls'),
    );
  });
});
