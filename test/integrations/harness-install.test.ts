/**
 * `alock hooks install|uninstall --for <harness>` on a real tree: merged into the configuration each
 * harness already has (kept intact, twice is once), taken out again by uninstall, and the OpenCode
 * plugin it writes run for real against the alock program.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeSandbox, type Sandbox } from '../cli/cli-harness.js';

let sandbox: Sandbox;
beforeEach(() => {
  sandbox = makeSandbox();
});
afterEach(() => sandbox.cleanup());

const JSON_FILES = {
  claude: '.claude/settings.json',
  codex: '.codex/hooks.json',
  gemini: '.gemini/settings.json',
  cursor: '.cursor/hooks.json',
  copilot: '.github/hooks/agent-lock.json',
} as const;

/** What a user already has there: other keys, and other hooks on the same event. */
const EXISTING: Record<keyof typeof JSON_FILES, unknown> = {
  claude: {
    permissions: { allow: ['Bash(npm test)'] },
    hooks: { PreToolUse: [{ matcher: 'Bash', hooks: [{ type: 'command', command: './lint.sh' }] }] },
  },
  codex: { hooks: { PreToolUse: [{ matcher: 'Bash', hooks: [{ type: 'command', command: 'audit' }] }] } },
  gemini: {
    model: { name: 'gemini-2.5-pro' },
    hooks: { BeforeTool: [{ matcher: 'run_shell_command', hooks: [{ type: 'command', command: 'guard' }] }] },
  },
  cursor: {
    version: 1,
    hooks: { afterFileEdit: [{ command: './format.sh' }], preToolUse: [{ command: 'x' }] },
  },
  copilot: { version: 1, hooks: { sessionStart: [{ type: 'command', bash: 'echo hi' }] } },
};

/** The program every installed hook runs: this node and this package's bin, by absolute path. */
const PROGRAM = `${process.execPath} ${realpathSync(path.resolve('bin/alock.js'))}`;
const runs = (harness: string, when: 'pre' | 'post' = 'pre') =>
  new RegExp(`^${escapeRegExp(`${PROGRAM} hooks ${harness}-${when}-tool-use`)} \\|\\| `);
function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

function read(rel: string): string {
  return readFileSync(path.join(sandbox.tree, rel), 'utf8');
}

function write(rel: string, text: string): void {
  mkdirSync(path.dirname(path.join(sandbox.tree, rel)), { recursive: true });
  writeFileSync(path.join(sandbox.tree, rel), text);
}

describe.each(Object.keys(JSON_FILES) as (keyof typeof JSON_FILES)[])('hooks install --for %s', (harness) => {
  const rel = JSON_FILES[harness];

  it('merges into the existing file, keeps every key and hook, is idempotent, and uninstall restores it', async () => {
    const original = `${JSON.stringify(EXISTING[harness], null, 2)}\n`;
    write(rel, original);
    const first = await sandbox.json('me', ['hooks', 'install', '--for', harness]);
    expect(first.code).toBe(0);
    expect(first.body.status).toBe('installed');
    const merged = read(rel);
    expect(merged).toContain(`hooks ${harness}-pre-tool-use`);
    // Everything that was there is still there.
    const before = JSON.parse(original) as { hooks: Record<string, unknown[]> };
    const after = JSON.parse(merged) as { hooks: Record<string, unknown[]> };
    for (const [event, list] of Object.entries(before.hooks)) {
      expect(after.hooks[event]?.slice(0, list.length)).toEqual(list);
    }
    const second = await sandbox.json('me', ['hooks', 'install', '--for', harness]);
    expect(second.body.status).toBe('unchanged');
    expect(read(rel)).toBe(merged);
    const removed = await sandbox.json('me', ['hooks', 'uninstall', '--for', harness]);
    expect(removed.body.status).toBe('uninstalled');
    expect(read(rel)).toBe(original);
    const again = await sandbox.json('me', ['hooks', 'uninstall', '--for', harness]);
    expect(again.body.status).toBe('absent');
  });

  it('creates the file when there is none, and uninstall removes it again', async () => {
    expect((await sandbox.run('me', ['hooks', 'install', '--for', harness])).code).toBe(0);
    expect(existsSync(path.join(sandbox.tree, rel))).toBe(true);
    expect((await sandbox.run('me', ['hooks', 'uninstall', '--for', harness])).code).toBe(0);
    expect(existsSync(path.join(sandbox.tree, rel))).toBe(false);
  });

  it('refuses a file that is not valid JSON, changing nothing', async () => {
    write(rel, '{"hooks": ');
    const r = await sandbox.run('me', ['hooks', 'install', '--for', harness]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^ERROR: alock: .* is not valid JSON .*left unchanged \(.*\)\n$/);
    expect(read(rel)).toBe('{"hooks": ');
  });
});

describe('hooks install: the shape each harness reads', () => {
  it('writes each harness its own event, matcher and command', async () => {
    expect((await sandbox.run('me', ['hooks', 'install', '--for', 'codex,gemini,cursor,copilot'])).code).toBe(
      0,
    );
    expect(JSON.parse(read('.codex/hooks.json'))).toEqual({
      hooks: {
        PreToolUse: [
          {
            matcher: 'apply_patch|Bash',
            hooks: [{ type: 'command', command: expect.stringMatching(runs('codex')) }],
          },
        ],
        PostToolUse: [
          {
            matcher: 'apply_patch|Bash',
            hooks: [{ type: 'command', command: expect.stringMatching(runs('codex', 'post')) }],
          },
        ],
        // The turn's end ends the claims the agent's edits took.
        // (by the same absolute program, but never failing closed: exit 2 at a Stop keeps the agent going)
        Stop: [{ hooks: [{ type: 'command', command: `${PROGRAM} hooks codex-turn-end` }] }],
      },
    });
    const gemini = JSON.parse(read('.gemini/settings.json'));
    expect(gemini.hooks.BeforeTool[0].matcher).toBe('write_file|replace|run_shell_command');
    expect(gemini.hooks.AfterTool[0].hooks[0].command).toMatch(runs('gemini', 'post'));
    expect(gemini.hooks.AfterAgent).toEqual([
      { hooks: [{ type: 'command', command: `${PROGRAM} hooks gemini-turn-end` }] },
    ]);
    expect(gemini.hooks.SessionEnd).toEqual([
      { hooks: [{ type: 'command', command: `${PROGRAM} hooks gemini-session-end` }] },
    ]);
    const cursor = JSON.parse(read('.cursor/hooks.json'));
    expect(cursor.version).toBe(1);
    expect(cursor.hooks.preToolUse[0].command).toMatch(runs('cursor'));
    // Cursor lets a call through when its hook fails, unless the entry says failClosed.
    expect(cursor.hooks.preToolUse[0].failClosed).toBe(true);
    expect(cursor.hooks.beforeShellExecution).toEqual([
      { command: expect.stringMatching(runs('cursor')), failClosed: true },
    ]);
    // After the call nothing is refused any more: no failClosed there.
    expect(cursor.hooks.afterShellExecution).toEqual([
      { command: expect.stringMatching(runs('cursor', 'post')) },
    ]);
    // The end of a turn is never held up by a hook that cannot run: no failClosed there.
    expect(cursor.hooks.stop).toEqual([{ command: `${PROGRAM} hooks cursor-turn-end` }]);
    const copilot = JSON.parse(read('.github/hooks/agent-lock.json'));
    expect(copilot).toEqual({
      version: 1,
      hooks: {
        preToolUse: [{ type: 'command', bash: expect.stringMatching(runs('copilot')), timeoutSec: 30 }],
        postToolUse: [
          { type: 'command', bash: expect.stringMatching(runs('copilot', 'post')), timeoutSec: 30 },
        ],
        agentStop: [{ type: 'command', bash: `${PROGRAM} hooks copilot-turn-end`, timeoutSec: 30 }],
        sessionEnd: [{ type: 'command', bash: `${PROGRAM} hooks copilot-session-end`, timeoutSec: 30 }],
      },
    });
  });

  it('--no-claim installs hooks that only check, with no turn-end hook, for Claude Code too', async () => {
    const r = await sandbox.run('me', ['hooks', 'install', '--for', 'codex', '--no-claim']);
    expect(r.code).toBe(0);
    expect(JSON.parse(read('.codex/hooks.json')).hooks).toEqual({
      PreToolUse: [
        {
          matcher: 'apply_patch|Bash',
          hooks: [
            {
              type: 'command',
              command: expect.stringMatching(
                new RegExp(`^${escapeRegExp(`${PROGRAM} hooks codex-pre-tool-use --no-claim`)} \\|\\| `),
              ),
            },
          ],
        },
      ],
      // The post-tool hook claims nothing either way: it carries no --no-claim.
      PostToolUse: [
        {
          matcher: 'apply_patch|Bash',
          hooks: [{ type: 'command', command: expect.stringMatching(runs('codex', 'post')) }],
        },
      ],
    });
    expect((await sandbox.run('me', ['hooks', 'install', '--for', 'claude', '--no-claim'])).code).toBe(0);
    const claude = JSON.parse(read('.claude/settings.json'));
    expect(Object.keys(claude.hooks).sort()).toEqual(['PostToolUse', 'PreToolUse']);
    expect(claude.hooks.PostToolUse[0].hooks[0].command).toMatch(runs('claude', 'post'));
    expect(claude.hooks.PreToolUse[0].hooks[0].command).toMatch(
      new RegExp(`^${escapeRegExp(`${PROGRAM} hooks claude-pre-tool-use --no-claim`)} \\|\\| `),
    );
    // The installed command's flag turns claims off: the edit goes through and claims nothing.
    let stdout = '';
    const { runCli } = await import('../../src/cli/run-cli.js');
    const code = await runCli(['hooks', 'claude-pre-tool-use', '--no-claim'], {
      stdout: (t) => {
        stdout += t;
      },
      stderr: () => {},
      env: sandbox.envFor('x', { AGENT_ID: undefined }),
      cwd: sandbox.tree,
      isTTY: false,
      stdin: async () =>
        JSON.stringify({
          session_id: 'noclaim1',
          hook_event_name: 'PreToolUse',
          tool_name: 'Edit',
          tool_input: { file_path: path.join(sandbox.tree, 'src', 'a.ts') },
          cwd: sandbox.tree,
        }),
    });
    expect(code).toBe(0);
    expect(stdout).toBe('');
    expect((await sandbox.json('me', ['list'])).body.locks).toEqual([]);
    // Uninstall takes every entry of ours out again.
    expect((await sandbox.run('me', ['hooks', 'uninstall', '--for', 'claude,codex'])).code).toBe(0);
    expect(existsSync(path.join(sandbox.tree, '.codex/hooks.json'))).toBe(false);
  });

  it('--for all installs for the harnesses whose folder exists, and only those', async () => {
    mkdirSync(path.join(sandbox.tree, '.codex'));
    mkdirSync(path.join(sandbox.tree, '.clinerules'));
    const r = await sandbox.json('me', ['hooks', 'install', '--for', 'all']);
    expect(r.code).toBe(0);
    expect((r.body.hooks as { for: string }[]).map((h) => h.for)).toEqual(['codex', 'cline']);
    expect(existsSync(path.join(sandbox.tree, '.claude'))).toBe(false);
    expect(existsSync(path.join(sandbox.tree, '.gemini'))).toBe(false);
  });

  it('--for all with no harness folder, or an unknown harness, is an error that changes nothing', async () => {
    const none = await sandbox.run('me', ['hooks', 'install', '--for', 'all']);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/^ERROR: alock: no agent's configuration folder in .* \(name one: .*\)\n$/);
    const bad = await sandbox.run('me', ['hooks', 'install', '--for', 'codex,vim']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('(got "vim")');
    expect(existsSync(path.join(sandbox.tree, '.codex'))).toBe(false);
  });

  it('writes nothing when one of several files is broken', async () => {
    write('.gemini/settings.json', '[1]');
    const r = await sandbox.run('me', ['hooks', 'install', '--for', 'codex,gemini']);
    expect(r.code).toBe(2);
    expect(existsSync(path.join(sandbox.tree, '.codex/hooks.json'))).toBe(false);
    expect(read('.gemini/settings.json')).toBe('[1]');
  });
});

describe('hooks install --for cline', () => {
  it('writes an executable PreToolUse script, twice is once, and uninstall removes only its own', async () => {
    expect((await sandbox.json('me', ['hooks', 'install', '--for', 'cline'])).body.status).toBe('installed');
    const file = path.join(sandbox.tree, '.clinerules/hooks/PreToolUse');
    expect(statSync(file).mode & 0o111).not.toBe(0);
    expect(read('.clinerules/hooks/PreToolUse')).toContain(`${PROGRAM} hooks cline-pre-tool-use && exit 0`);
    expect(read('.clinerules/hooks/PostToolUse')).toContain(`exec ${PROGRAM} hooks cline-post-tool-use`);
    expect(statSync(path.join(sandbox.tree, '.clinerules/hooks/PostToolUse')).mode & 0o111).not.toBe(0);
    // The task's end (completed or cancelled) ends the claims its edits took.
    for (const end of ['TaskComplete', 'TaskCancel']) {
      expect(statSync(path.join(sandbox.tree, '.clinerules/hooks', end)).mode & 0o111).not.toBe(0);
      expect(read(`.clinerules/hooks/${end}`)).toContain(`exec ${PROGRAM} hooks cline-session-end`);
    }
    expect((await sandbox.json('me', ['hooks', 'install', '--for', 'cline'])).body.status).toBe('unchanged');
    expect((await sandbox.json('me', ['hooks', 'uninstall', '--for', 'cline'])).body.status).toBe(
      'uninstalled',
    );
    expect(existsSync(file)).toBe(false);
    expect(existsSync(path.join(sandbox.tree, '.clinerules/hooks/PostToolUse'))).toBe(false);
    expect(existsSync(path.join(sandbox.tree, '.clinerules/hooks/TaskComplete'))).toBe(false);
  });

  it("never replaces someone else's PreToolUse hook, nor removes it", async () => {
    write('.clinerules/hooks/PreToolUse', '#!/bin/sh\necho \'{"cancel":false}\'\n');
    const r = await sandbox.run('me', ['hooks', 'install', '--for', 'cline']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /already exists and is not agent-lock's; left unchanged \(call .*alock\.js hooks/,
    );
    expect((await sandbox.json('me', ['hooks', 'uninstall', '--for', 'cline'])).body.status).toBe('absent');
    expect(read('.clinerules/hooks/PreToolUse')).toContain('cancel');
  });
});

describe('hooks install --for opencode', () => {
  /** A folder with an `alock` that runs this checkout's built CLI, as a user's PATH would have. */
  function alockBin(): string {
    const bin = path.join(sandbox.outside, 'bin');
    mkdirSync(bin, { recursive: true });
    symlinkSync(path.resolve('bin/alock.js'), path.join(bin, 'alock'));
    return path.join(bin, 'alock');
  }

  it('writes a plugin that refuses a held file through alock, and lets a free one go', async () => {
    expect((await sandbox.json('me', ['hooks', 'install', '--for', 'opencode'])).body.status).toBe(
      'installed',
    );
    const file = path.join(sandbox.tree, '.opencode/plugins/agent-lock.js');
    expect((await sandbox.run('other-agent', ['acquire', 'src/a.ts', '-m', 'refactor login'])).code).toBe(0);
    const saved = { ...process.env };
    Object.assign(process.env, {
      AGENT_LOCK_BIN: alockBin(),
      AGENT_LOCK_DIR: sandbox.store,
      AGENT_LOCK_REDIS_PROBE: 'off',
    });
    delete process.env.AGENT_ID;
    try {
      const mod = (await import(pathToFileURL(file).href)) as {
        AgentLock: (ctx: unknown) => Promise<Record<string, (i: unknown, o: unknown) => Promise<void>>>;
      };
      const client = { session: { get: async () => ({ data: {} }) } };
      const hooks = await mod.AgentLock({ client, directory: sandbox.tree });
      const beforeTool = hooks['tool.execute.before']!;
      const call = (filePath: string) =>
        beforeTool(
          { tool: 'edit', sessionID: 'ses_plugin', callID: 'c1' },
          { args: { filePath: path.join(sandbox.tree, filePath), oldString: 'a', newString: 'b' } },
        );
      await expect(call('src/a.ts')).rejects.toThrow(
        /other-agent .*holds src\/a\.ts, intent "refactor login"/,
      );
      await expect(call('src/free.ts')).resolves.toBeUndefined();
      // A tool that writes nothing is not even sent.
      await expect(
        beforeTool({ tool: 'read', sessionID: 'ses_plugin', callID: 'c2' }, { args: {} }),
      ).resolves.toBe(undefined);
      // The free file's edit claimed it; the session's turn end (session.idle) ends the claim. The
      // plugin has its four handlers: before, after, the session events and the shell's environment.
      expect(Object.keys(hooks).sort()).toEqual([
        'event',
        'shell.env',
        'tool.execute.after',
        'tool.execute.before',
      ]);
      const scopes = async () =>
        ((await sandbox.json('me', ['list'])).body.locks as { scope: string; claim: unknown }[])
          .map((l) => `${l.scope}${l.claim === null ? '' : ' (claim)'}`)
          .sort();
      expect(await scopes()).toEqual(['src/a.ts', 'src/free.ts (claim)']);
      await hooks.event!({ event: { type: 'session.idle', properties: { sessionID: 'ses_plugin' } } }, {});
      expect(await scopes()).toEqual(['src/a.ts']);
    } finally {
      process.env = saved;
    }
    expect((await sandbox.json('me', ['hooks', 'uninstall', '--for', 'opencode'])).body.status).toBe(
      'uninstalled',
    );
    expect(existsSync(file)).toBe(false);
  });
});

describe('hooks install --for opencode: the shell names the agent its hook names', () => {
  it("gives the shell tool's commands the session, so their alock is the agent of the plugin's claims", async () => {
    expect((await sandbox.json('me', ['hooks', 'install', '--for', 'opencode'])).body.status).toBe(
      'installed',
    );
    const file = path.join(sandbox.tree, '.opencode/plugins/agent-lock.js');
    const saved = { ...process.env };
    const bin = path.join(sandbox.outside, 'bin');
    mkdirSync(bin, { recursive: true });
    symlinkSync(path.resolve('bin/alock.js'), path.join(bin, 'alock'));
    Object.assign(process.env, {
      AGENT_LOCK_BIN: path.join(bin, 'alock'),
      AGENT_LOCK_DIR: sandbox.store,
      AGENT_LOCK_REDIS_PROBE: 'off',
    });
    for (const k of ['AGENT_ID', 'AGENT_PARENT_ID', 'CLAUDE_CODE_SESSION_ID', 'CODEX_THREAD_ID']) {
      delete process.env[k];
    }
    try {
      const mod = (await import(pathToFileURL(file).href)) as {
        AgentLock: (ctx: unknown) => Promise<Record<string, (i: unknown, o: unknown) => Promise<void>>>;
      };
      // ses_child is a sub-agent's session (the task tool's), ses_main its parent.
      const client = {
        session: {
          get: async ({ path: p }: { path: { id: string } }) => ({
            data: p.id === 'ses_child' ? { parentID: 'ses_main' } : {},
          }),
        },
      };
      const hooks = await mod.AgentLock({ client, directory: sandbox.tree });
      for (const [session, file] of [
        ['ses_main', 'src/main.ts'],
        ['ses_child', 'src/child.ts'],
      ] as const) {
        await hooks['tool.execute.before']!(
          { tool: 'write', sessionID: session, callID: `c-${session}` },
          { args: { filePath: path.join(sandbox.tree, file), content: 'x' } },
        );
        const output = { env: {} as Record<string, string> };
        await hooks['shell.env']!({ cwd: sandbox.tree, sessionID: session, callID: 'c' }, output);
        const whoami = JSON.parse(
          execFileSync(process.execPath, [path.resolve('bin/alock.js'), 'whoami', '--json'], {
            cwd: sandbox.tree,
            env: { ...process.env, ...output.env },
            encoding: 'utf8',
          }),
        ) as { agent: { id: string; parent_id: string | null } };
        const locks = (await sandbox.json('me', ['list'])).body.locks as {
          scope: string;
          agent_id: string;
          parent_agent_id: string | null;
        }[];
        const claim = locks.find((l) => l.scope === file);
        expect(whoami.agent.id, session).toBe(claim?.agent_id);
        expect(whoami.agent.parent_id, session).toBe(claim?.parent_agent_id ?? null);
      }
    } finally {
      process.env = saved;
    }
  });
});

describe('hooks install --for claude keeps its own behaviour', () => {
  it('uninstall --for claude takes out only its entry', async () => {
    write('.claude/settings.json', `${JSON.stringify(EXISTING.claude, null, 2)}\n`);
    expect((await sandbox.run('me', ['hooks', 'install', '--for', 'claude'])).code).toBe(0);
    expect(read('.claude/settings.json')).toContain('claude-pre-tool-use');
    expect((await sandbox.run('me', ['hooks', 'uninstall', '--for', 'claude'])).code).toBe(0);
    expect(JSON.parse(read('.claude/settings.json'))).toEqual(EXISTING.claude);
  });
});

describe('hooks install: never silently off', () => {
  /** Runs an installed command as the harness would: in sh, with the harness's own PATH. */
  function runHook(command: string, stdin: string, env: Record<string, string> = {}) {
    return spawnSync('/bin/sh', ['-c', command], {
      input: stdin,
      encoding: 'utf8',
      env: { PATH: '/nonexistent', AGENT_LOCK_DIR: sandbox.store, AGENT_LOCK_REDIS_PROBE: 'off', ...env },
      cwd: sandbox.tree,
    });
  }
  const codexEdit = () =>
    JSON.stringify({
      session_id: '7e57ab1e-0000-4000-8000-000000000001',
      hook_event_name: 'PreToolUse',
      tool_name: 'apply_patch',
      cwd: sandbox.tree,
      tool_input: { command: '*** Begin Patch\n*** Update File: src/a.ts\n@@\n-a\n+b\n*** End Patch\n' },
    });
  const codexCommand = () =>
    (JSON.parse(read('.codex/hooks.json')) as { hooks: { PreToolUse: { hooks: { command: string }[] }[] } })
      .hooks.PreToolUse[0]!.hooks[0]!.command;

  it('runs and refuses a held file with no alock on the harness PATH', async () => {
    expect((await sandbox.run('me', ['hooks', 'install', '--for', 'codex'])).code).toBe(0);
    expect((await sandbox.run('other-agent', ['acquire', 'src/a.ts', '-m', 'busy'])).code).toBe(0);
    const r = runHook(codexCommand(), codexEdit());
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout).hookSpecificOutput.permissionDecision).toBe('deny');
  });

  it('blocks the call with exit 2 when its program is gone, unless AGENT_LOCK_HOOK_ON_ERROR=allow', async () => {
    expect((await sandbox.run('me', ['hooks', 'install', '--for', 'codex'])).code).toBe(0);
    const gone = codexCommand().replaceAll(realpathSync(path.resolve('bin/alock.js')), '/gone/bin/alock.js');
    const r = runHook(gone, codexEdit());
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('alock hooks install --for codex');
    expect(runHook(gone, codexEdit(), { AGENT_LOCK_HOOK_ON_ERROR: 'allow' }).status).toBe(0);
  });

  it("Cline's script answers a refusal when its program is gone", async () => {
    expect((await sandbox.run('me', ['hooks', 'install', '--for', 'cline'])).code).toBe(0);
    const script = read('.clinerules/hooks/PreToolUse').replaceAll(
      realpathSync(path.resolve('bin/alock.js')),
      '/gone/bin/alock.js',
    );
    const r = runHook(script, '{}');
    expect(JSON.parse(r.stdout)).toMatchObject({ cancel: true });
  });

  it('install again replaces an older entry of its own (alock on PATH) in place, keeping the rest', async () => {
    write(
      '.codex/hooks.json',
      `${JSON.stringify({
        hooks: {
          PreToolUse: [
            {
              matcher: 'apply_patch|Bash',
              hooks: [{ type: 'command', command: 'alock hooks codex-pre-tool-use' }],
            },
            { matcher: 'Bash', hooks: [{ type: 'command', command: 'audit' }] },
          ],
        },
      })}\n`,
    );
    const r = await sandbox.json('me', ['hooks', 'install', '--for', 'codex']);
    expect(r.body.status).toBe('installed');
    const list = JSON.parse(read('.codex/hooks.json')).hooks.PreToolUse;
    expect(list).toHaveLength(2);
    expect(list[0].hooks[0].command).toMatch(runs('codex'));
    expect(list[1].hooks[0].command).toBe('audit');
    expect((await sandbox.json('me', ['hooks', 'install', '--for', 'codex'])).body.status).toBe('unchanged');
  });

  it('install again replaces older turn-end entries of its own in place; --no-claim takes them out', async () => {
    const stop = (command: string) => ({ hooks: [{ type: 'command', command }] });
    for (const [file, harness] of [
      ['.claude/settings.json', 'claude'],
      ['.codex/hooks.json', 'codex'],
    ] as const) {
      write(
        file,
        `${JSON.stringify({ hooks: { Stop: [stop(`alock hooks ${harness}-turn-end`), stop('notify')] } })}\n`,
      );
      expect((await sandbox.json('me', ['hooks', 'install', '--for', harness])).body.status).toBe(
        'installed',
      );
      expect(JSON.parse(read(file)).hooks.Stop).toEqual([
        stop(`${PROGRAM} hooks ${harness}-turn-end`),
        stop('notify'),
      ]);
      expect((await sandbox.json('me', ['hooks', 'install', '--for', harness])).body.status).toBe(
        'unchanged',
      );
      // Installed --no-claim, the pre-tool entry is replaced in place and the end entries go.
      expect(
        (await sandbox.json('me', ['hooks', 'install', '--for', harness, '--no-claim'])).body.status,
      ).toBe('installed');
      const hooks = JSON.parse(read(file)).hooks;
      expect(hooks.Stop).toEqual([stop('notify')]);
      expect(hooks.SubagentStop).toBeUndefined();
      expect(hooks.SessionEnd).toBeUndefined();
      expect(hooks.PreToolUse).toHaveLength(1);
      expect(hooks.PreToolUse[0].hooks[0].command).toContain(`hooks ${harness}-pre-tool-use --no-claim || `);
      // And back: the flag goes from the same entry, the end entries come back.
      expect((await sandbox.json('me', ['hooks', 'install', '--for', harness])).body.status).toBe(
        'installed',
      );
      const again = JSON.parse(read(file)).hooks;
      expect(again.PreToolUse).toHaveLength(1);
      expect(again.PreToolUse[0].hooks[0].command).toMatch(runs(harness));
      expect(again.Stop).toEqual([stop('notify'), stop(`${PROGRAM} hooks ${harness}-turn-end`)]);
    }
  });

  it('says what each harness still needs switched on', async () => {
    const r = await sandbox.run('me', ['hooks', 'install', '--for', 'codex,gemini,copilot']);
    expect(r.stdout).toContain('trust the hook in /hooks');
    expect(r.stdout).toContain('trustedFolders.json');
    expect(r.stdout).toContain('trustedFolders');
  });
});

describe('hooks install --for opencode: both plugin formats', () => {
  it('exports the 1.x plugin function, and the same function as a 2.x default {id, setup}', async () => {
    expect((await sandbox.run('me', ['hooks', 'install', '--for', 'opencode'])).code).toBe(0);
    const file = path.join(sandbox.tree, '.opencode/plugins/agent-lock.js');
    const mod = (await import(pathToFileURL(file).href)) as {
      AgentLock: unknown;
      default: { id: string; setup: unknown };
    };
    expect(typeof mod.AgentLock).toBe('function');
    expect(mod.default).toBe(mod.AgentLock);
    expect(mod.default.id).toBe('agent-lock');
    expect(mod.default.setup).toBe(mod.AgentLock);
    // The shell tool of 2.x is checked as bash is.
    expect(read('.opencode/plugins/agent-lock.js')).toContain("'shell'");
  });
});

describe("hooks install --for codex: the store stays writable in Codex's workspace-write sandbox", () => {
  it('names the store in .codex/config.toml, merged into what is there, makes the folder, and uninstall takes it out', async () => {
    write('.codex/config.toml', 'model = "gpt-5.5"\n\n[sandbox_workspace_write]\nnetwork_access = true\n');
    const first = await sandbox.run('me', ['hooks', 'install', '--for', 'codex']);
    expect(first.code).toBe(0);
    expect(first.stdout).toContain(`WRITABLE ${sandbox.store}`);
    // The store is outside the tree here (AGENT_LOCK_DIR), so it is named by its absolute path.
    expect(read('.codex/config.toml')).toBe(
      `model = "gpt-5.5"\n\n[sandbox_workspace_write]\nwritable_roots = [${JSON.stringify(sandbox.store)}]\nnetwork_access = true\n`,
    );
    expect(statSync(sandbox.store).isDirectory()).toBe(true);
    const again = await sandbox.run('me', ['hooks', 'install', '--for', 'codex']);
    expect(again.stdout).not.toContain('WRITABLE');
    expect((await sandbox.run('me', ['hooks', 'uninstall', '--for', 'codex'])).code).toBe(0);
    expect(read('.codex/config.toml')).toBe(
      'model = "gpt-5.5"\n\n[sandbox_workspace_write]\nwritable_roots = []\nnetwork_access = true\n',
    );
  });

  it('a store inside the tree is named relative to .codex/, as Codex reads it; a new file is removed whole', async () => {
    const r = await sandbox.run('me', ['hooks', 'install', '--for', 'codex'], { AGENT_LOCK_DIR: '.locks' });
    expect(r.code).toBe(0);
    expect(read('.codex/config.toml')).toContain(
      '[sandbox_workspace_write]\nwritable_roots = ["../.locks"]\n',
    );
    expect(statSync(path.join(sandbox.tree, '.locks')).isDirectory()).toBe(true);
    await sandbox.run('me', ['hooks', 'uninstall', '--for', 'codex'], { AGENT_LOCK_DIR: '.locks' });
    expect(existsSync(path.join(sandbox.tree, '.codex/config.toml'))).toBe(false);
  });

  it('a writable_roots over several lines is refused, and nothing is written', async () => {
    const text = '[sandbox_workspace_write]\nwritable_roots = [\n  "/x",\n]\n';
    write('.codex/config.toml', text);
    const r = await sandbox.run('me', ['hooks', 'install', '--for', 'codex']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^ERROR: alock: .*config\.toml is not what Codex expects: .*several lines.*\n$/);
    expect(read('.codex/config.toml')).toBe(text);
    expect(existsSync(path.join(sandbox.tree, '.codex/hooks.json'))).toBe(false);
  });
});
