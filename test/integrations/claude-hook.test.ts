/**
 * The Claude Code integration: recorded PreToolUse payloads fed on stdin to `alock hooks
 * claude-pre-tool-use` in-process, and `alock hooks install --for claude` merging settings.json.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/run-cli.js';
import { sessionAgentId } from '../../src/core/identity.js';
import { makeSandbox, parseOneJson, STACK_FRAME, type Sandbox } from '../cli/cli-harness.js';

const SESSION = '11112222-3333-4444-5555-666677778888';
const MAIN = 'claude-11112222';

interface HookOutput {
  hookSpecificOutput?: {
    hookEventName: string;
    permissionDecision?: string;
    permissionDecisionReason?: string;
    updatedInput?: Record<string, unknown>;
  };
  systemMessage?: string;
}

let sandbox: Sandbox;
beforeEach(() => {
  sandbox = makeSandbox();
});
afterEach(() => sandbox.cleanup());

/** A PreToolUse payload as Claude Code sends it (sub-agent calls carry agent_id and agent_type). */
function payload(tool: string, toolInput: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return JSON.stringify({
    session_id: SESSION,
    transcript_path: `/home/dev/.claude/projects/repo/${SESSION}.jsonl`,
    cwd: sandbox.tree,
    permission_mode: 'default',
    hook_event_name: 'PreToolUse',
    tool_name: tool,
    tool_input: toolInput,
    tool_use_id: 'toolu_01ABCDEF',
    ...extra,
  });
}

/** Runs the hook as Claude Code would: the payload on stdin, no AGENT_ID in the environment. */
async function hook(stdin: string, env: Record<string, string | undefined> = {}, argv: string[] = []) {
  let stdout = '';
  let stderr = '';
  const code = await runCli([...argv, 'hooks', 'claude-pre-tool-use'], {
    stdout: (t) => {
      stdout += t;
    },
    stderr: (t) => {
      stderr += t;
    },
    env: { AGENT_LOCK_DIR: sandbox.store, AGENT_LOCK_REDIS_PROBE: 'off', ...env },
    cwd: sandbox.tree,
    isTTY: false,
    stdin: async () => stdin,
  });
  const output = stdout.trim() === '' ? null : (JSON.parse(stdout) as HookOutput);
  return { code, stdout, stderr, output };
}

function decision(output: HookOutput | null): string | undefined {
  return output?.hookSpecificOutput?.permissionDecision;
}

describe('alock hooks claude-pre-tool-use: edits', () => {
  it('refuses an Edit of a file another agent holds, naming the holder and intent', async () => {
    expect((await sandbox.run('other-agent', ['acquire', 'src/a.ts', '-m', 'refactor login'])).code).toBe(0);
    const r = await hook(
      payload('Edit', { file_path: path.join(sandbox.tree, 'src/a.ts'), old_string: 'a', new_string: 'b' }),
    );
    expect(r.code).toBe(0);
    expect(r.output?.hookSpecificOutput?.hookEventName).toBe('PreToolUse');
    expect(decision(r.output)).toBe('deny');
    const reason = r.output?.hookSpecificOutput?.permissionDecisionReason ?? '';
    expect(reason).toContain('src/a.ts');
    expect(reason).toContain('other-agent');
    expect(reason).toContain('refactor login');
    expect(reason).toContain(MAIN);
  });

  it('refuses Write, MultiEdit and NotebookEdit inside a folder another agent holds', async () => {
    await sandbox.run('other-agent', ['acquire', 'src/lib', '-m', 'move helpers']);
    const file = path.join(sandbox.tree, 'src/lib/x.ts');
    for (const [tool, input] of [
      ['Write', { file_path: file, content: 'x' }],
      ['MultiEdit', { file_path: file, edits: [{ old_string: 'a', new_string: 'b' }] }],
      ['NotebookEdit', { notebook_path: 'src/lib/n.ipynb', new_source: 'print(1)' }],
    ] as const) {
      const r = await hook(payload(tool, input));
      expect(decision(r.output), tool).toBe('deny');
      expect(r.output?.hookSpecificOutput?.permissionDecisionReason).toContain('src/lib/**');
    }
  });

  it('stays silent (normal permission flow) when the file is free', async () => {
    await sandbox.run('other-agent', ['acquire', 'src/a.ts']);
    const r = await hook(payload('Write', { file_path: path.join(sandbox.tree, 'src/b.ts'), content: 'x' }));
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('');
  });

  it("allows the session's own lock, and a sub-agent inside its parent's lock", async () => {
    await sandbox.run(MAIN, ['acquire', 'src/**', '-m', 'mine']);
    const edit = payload('Edit', { file_path: path.join(sandbox.tree, 'src/a.ts') });
    expect((await hook(edit)).stdout).toBe('');
    const sub = payload(
      'Edit',
      { file_path: path.join(sandbox.tree, 'src/a.ts') },
      { agent_id: 'a1b2c3d4e5f60718', agent_type: 'general-purpose' },
    );
    expect((await hook(sub)).stdout).toBe('');
  });

  it("refuses a sub-agent the file its sibling holds, and its parent the sub-agent's file", async () => {
    const sibling = `${MAIN}-aaaaaaaa`;
    await sandbox.run(sibling, ['acquire', 'src/a.ts', '-m', 'tests'], { AGENT_PARENT_ID: MAIN });
    const asSub = await hook(
      payload('Edit', { file_path: path.join(sandbox.tree, 'src/a.ts') }, { agent_id: 'bbbbbbbb0000' }),
    );
    expect(decision(asSub.output)).toBe('deny');
    expect(asSub.output?.hookSpecificOutput?.permissionDecisionReason).toContain(sibling);
    expect(asSub.output?.hookSpecificOutput?.permissionDecisionReason).toContain(`You are ${MAIN}-bbbbbbbb`);
    const asMain = await hook(payload('Edit', { file_path: path.join(sandbox.tree, 'src/a.ts') }));
    expect(decision(asMain.output)).toBe('deny');
    // The sub-agent that holds it may edit it.
    const asHolder = await hook(
      payload('Edit', { file_path: path.join(sandbox.tree, 'src/a.ts') }, { agent_id: 'aaaaaaaa1111' }),
    );
    expect(asHolder.stdout).toBe('');
  });

  it('resolves a relative path against the payload cwd, in a sub-folder of a git checkout', async () => {
    execFileSync('git', ['init', '-q'], { cwd: sandbox.tree });
    await sandbox.run('other-agent', ['acquire', 'docs/guide.md']);
    const r = await hook(
      JSON.stringify({
        ...JSON.parse(payload('Edit', { file_path: 'guide.md' })),
        cwd: path.join(sandbox.tree, 'docs'),
      }),
    );
    expect(decision(r.output)).toBe('deny');
  });

  it('refuses an edit in a git checkout below a session started in a plain parent folder', async () => {
    execFileSync('git', ['init', '-q'], { cwd: sandbox.tree });
    await sandbox.run('other-agent', ['acquire', 'src/a.ts']);
    const r = await hook(
      JSON.stringify({
        ...JSON.parse(payload('Edit', { file_path: path.join(sandbox.tree, 'src/a.ts') })),
        cwd: path.dirname(sandbox.tree),
      }),
    );
    expect(decision(r.output)).toBe('deny');
  });

  it('refuses an edit in a nested checkout locked from the session folder', async () => {
    execFileSync('git', ['init', '-q'], { cwd: sandbox.tree });
    mkdirSync(path.join(sandbox.tree, 'vendor', 'src'), { recursive: true });
    execFileSync('git', ['init', '-q'], { cwd: path.join(sandbox.tree, 'vendor') });
    // Taken from the superproject's root: the lock lives under its tree, not the nested one's.
    expect((await sandbox.run('other-agent', ['acquire', 'vendor/src/a.ts'])).code).toBe(0);
    const r = await hook(payload('Edit', { file_path: path.join(sandbox.tree, 'vendor/src/a.ts') }));
    expect(decision(r.output)).toBe('deny');
    // A free file there still goes through.
    const free = await hook(payload('Edit', { file_path: path.join(sandbox.tree, 'vendor/src/b.ts') }));
    expect(free.output).toBeNull();
  });

  it('prints the hook answer as is under --json', async () => {
    await sandbox.run('other-agent', ['acquire', 'src/a.ts']);
    const r = await hook(payload('Edit', { file_path: path.join(sandbox.tree, 'src/a.ts') }), {}, ['--json']);
    expect(decision(r.output)).toBe('deny');
    expect(r.output).not.toHaveProperty('schema');
  });
});

describe('alock hooks claude-pre-tool-use: shell commands', () => {
  it("exports the main agent's AGENT_ID in front of its command, keeping the other input", async () => {
    const r = await hook(
      payload('Bash', { command: "alock acquire 'src/**' -m x", description: 'claim', timeout: 5000 }),
    );
    expect(r.code).toBe(0);
    const out = r.output?.hookSpecificOutput;
    expect(out?.hookEventName).toBe('PreToolUse');
    // No decision: a rewrite must not skip the user's permission prompts.
    expect(out?.permissionDecision).toBeUndefined();
    expect(out?.updatedInput).toEqual({
      command: `export AGENT_ID=${MAIN}; alock acquire 'src/**' -m x`,
      description: 'claim',
      timeout: 5000,
    });
  });

  it('gives a sub-agent its own AGENT_ID with the session as its parent, for the whole command', async () => {
    const r = await hook(
      payload(
        'Bash',
        { command: 'cd src && printenv AGENT_ID AGENT_PARENT_ID && git --version >/dev/null' },
        { agent_id: 'a1b2c3d4e5f6', agent_type: 'Explore' },
      ),
    );
    const command = r.output?.hookSpecificOutput?.updatedInput?.command as string;
    expect(command).toBe(
      `export AGENT_ID=${MAIN}-a1b2c3d4 AGENT_PARENT_ID=${MAIN}; cd src && printenv AGENT_ID AGENT_PARENT_ID && git --version >/dev/null`,
    );
    // Run it: the id reaches commands after `cd ... &&`, which a `VAR=x cmd` prefix would not.
    const printed = execFileSync('sh', ['-c', command], { cwd: sandbox.tree, encoding: 'utf8' });
    expect(printed.split('\n').filter(Boolean)).toEqual([`${MAIN}-a1b2c3d4`, MAIN]);
  });

  it('keeps sub-agents with look-alike ids apart', async () => {
    const ids = await Promise.all(
      ['agent_0001', 'agent_0002'].map(async (agent) => {
        const r = await hook(payload('Bash', { command: 'alock mine' }, { agent_id: agent }));
        return r.output?.hookSpecificOutput?.updatedInput?.command as string;
      }),
    );
    expect(ids[0]).not.toBe(ids[1]);
  });

  it('leaves a command that sets AGENT_ID itself alone', async () => {
    for (const command of ['AGENT_ID=me alock mine', 'export AGENT_ID=me; alock mine']) {
      const r = await hook(payload('Bash', { command }, { agent_id: 'a1b2c3d4e5f6' }));
      expect(r.stdout, command).toBe('');
    }
  });

  it('uses the AGENT_ID the session was started with as the main agent', async () => {
    const r = await hook(payload('Bash', { command: 'alock mine' }, { agent_id: 'a1b2c3d4e5f6' }), {
      AGENT_ID: 'lead',
    });
    expect(r.output?.hookSpecificOutput?.updatedInput?.command).toBe(
      'export AGENT_ID=lead-a1b2c3d4 AGENT_PARENT_ID=lead; alock mine',
    );
  });

  it('rewrites shell commands even when the store is broken (they need no store)', async () => {
    const notAFolder = path.join(sandbox.outside, 'file');
    writeFileSync(notAFolder, 'x');
    const r = await hook(payload('Bash', { command: 'git commit -m x' }), { AGENT_LOCK_DIR: notAFolder });
    expect(r.output?.hookSpecificOutput?.updatedInput?.command).toBe(
      `export AGENT_ID=${MAIN}; git commit -m x`,
    );
  });

  it('leaves commands that cannot take or check a lock untouched, so permission rules still match', async () => {
    for (const command of ['ls -la', 'npm test', 'cat alock.md', 'echo digit']) {
      const r = await hook(payload('Bash', { command }, { agent_id: 'a1b2c3d4e5f6' }));
      expect(r.stdout, command).toBe('');
    }
    for (const command of [
      'alock acquire x',
      'npx alock mine',
      'cd a && git commit -m x',
      './node_modules/.bin/alock list',
    ]) {
      const r = await hook(payload('Bash', { command }, { agent_id: 'a1b2c3d4e5f6' }));
      expect(r.output?.hookSpecificOutput?.updatedInput?.command, command).toMatch(/^export AGENT_ID=/);
    }
  });

  it('lets an edit outside every checkout through without creating a store for it', async () => {
    const r = await hook(
      payload('Write', { file_path: path.join(sandbox.outside, 'notes.txt'), content: 'x' }),
      { AGENT_LOCK_DIR: undefined, HOME: sandbox.outside },
    );
    expect(r.stdout).toBe('');
    expect(existsSync(path.join(sandbox.outside, '.agent-locks'))).toBe(false);
  });

  it('ignores tools it does not guard', async () => {
    const r = await hook(payload('Read', { file_path: path.join(sandbox.tree, 'src/a.ts') }));
    expect(r.stdout).toBe('');
  });
});

describe('alock hooks claude-pre-tool-use: Bash writes', () => {
  it('refuses a command that writes a file another agent holds, as an Edit would be', async () => {
    expect((await sandbox.run('other-agent', ['acquire', 'src/a.ts', '-m', 'refactor login'])).code).toBe(0);
    const r = await hook(payload('Bash', { command: "cd src && sed -i 's/a/b/' a.ts" }));
    expect(decision(r.output)).toBe('deny');
    expect(r.output?.hookSpecificOutput?.permissionDecisionReason).toContain('refactor login');
  });

  it('still exports the identity into a command that writes only free files', async () => {
    expect((await sandbox.run('other-agent', ['acquire', 'src/a.ts'])).code).toBe(0);
    const r = await hook(payload('Bash', { command: 'echo x > docs/b.md && alock acquire docs/b.md' }));
    expect(decision(r.output)).toBeUndefined();
    expect(r.output?.hookSpecificOutput?.updatedInput?.command).toMatch(/^export AGENT_ID=claude-11112222; /);
  });
});

describe('alock hooks claude-pre-tool-use: `..` after a symlinked folder', () => {
  // src/to-docs is a symlink to docs: `src/to-docs/../a.ts` is the file `a.ts` at the top, not
  // `src/a.ts`, and an edit or a write there touches what another agent holds.
  beforeEach(() => {
    mkdirSync(path.join(sandbox.tree, 'src'), { recursive: true });
    mkdirSync(path.join(sandbox.tree, 'docs'), { recursive: true });
    symlinkSync(path.join(sandbox.tree, 'docs'), path.join(sandbox.tree, 'src', 'to-docs'));
  });

  // Held as the file system reads the path, or as text (a tool may tidy a path before writing it).
  it.each(['a.ts', 'src/a.ts'])('refuses an Edit of src/to-docs/../a.ts while %s is held', async (held) => {
    expect((await sandbox.run('other-agent', ['acquire', held])).code).toBe(0);
    const r = await hook(
      payload('Edit', { file_path: `${sandbox.tree}/src/to-docs/../a.ts`, old_string: 'a', new_string: 'b' }),
    );
    expect(decision(r.output)).toBe('deny');
  });

  it('refuses a shell write to it, also after a cd into the link', async () => {
    expect((await sandbox.run('other-agent', ['acquire', 'a.ts'])).code).toBe(0);
    for (const command of ['echo x > src/to-docs/../a.ts', 'cd src/to-docs && echo x > ../a.ts']) {
      const r = await hook(payload('Bash', { command }));
      expect(decision(r.output), command).toBe('deny');
    }
  });

  it('follows a logical cd: `cd link && cd ..` is back where it started', async () => {
    expect((await sandbox.run('other-agent', ['acquire', 'src/a.ts'])).code).toBe(0);
    for (const command of ['cd src/to-docs && cd .. && echo x > a.ts', 'cd src/to-docs; cd ..; touch a.ts']) {
      const r = await hook(payload('Bash', { command }));
      expect(decision(r.output), command).toBe('deny');
    }
  });
});

describe('alock hooks claude-pre-tool-use: AGENT_PARENT_ID', () => {
  it('takes none (or empty) as no parent, and exports no parent into the command', async () => {
    for (const value of ['none', 'NONE', '']) {
      const r = await hook(payload('Bash', { command: 'alock acquire x' }), {
        AGENT_ID: 'worker-1',
        AGENT_PARENT_ID: value,
      });
      expect(r.output?.hookSpecificOutput?.updatedInput?.command).toBe(
        'export AGENT_ID=worker-1; alock acquire x',
      );
    }
    const named = await hook(payload('Bash', { command: 'alock acquire x' }), {
      AGENT_ID: 'worker-1',
      AGENT_PARENT_ID: 'lead',
    });
    expect(named.output?.hookSpecificOutput?.updatedInput?.command).toBe(
      'export AGENT_ID=worker-1 AGENT_PARENT_ID=lead; alock acquire x',
    );
  });
});

describe('alock hooks claude-pre-tool-use: when it cannot decide', () => {
  const broken = ['not json at all {', JSON.stringify({ tool_name: 'Edit' }), '', '[1,2]'];

  it('refuses by default on an unreadable payload, naming AGENT_LOCK_HOOK_ON_ERROR', async () => {
    for (const stdin of broken) {
      const r = await hook(stdin);
      expect(r.code, stdin).toBe(0);
      expect(decision(r.output), stdin).toBe('deny');
      expect(r.output?.hookSpecificOutput?.permissionDecisionReason).toContain(
        'AGENT_LOCK_HOOK_ON_ERROR=allow',
      );
      expect(r.stderr).not.toMatch(STACK_FRAME);
    }
  });

  it('lets the call through with a warning under AGENT_LOCK_HOOK_ON_ERROR=allow', async () => {
    for (const stdin of broken) {
      const r = await hook(stdin, { AGENT_LOCK_HOOK_ON_ERROR: 'allow' });
      expect(r.code).toBe(0);
      expect(decision(r.output)).toBeUndefined();
      expect(r.output?.systemMessage).toContain('AGENT_LOCK_HOOK_ON_ERROR=allow');
    }
  });

  it('follows the setting when the store cannot be opened', async () => {
    const notAFolder = path.join(sandbox.outside, 'file');
    writeFileSync(notAFolder, 'x');
    const edit = payload('Edit', { file_path: path.join(sandbox.tree, 'src/a.ts') });
    const denied = await hook(edit, { AGENT_LOCK_DIR: notAFolder });
    expect(decision(denied.output)).toBe('deny');
    expect(denied.output?.hookSpecificOutput?.permissionDecisionReason).toContain('is not a folder');
    const allowed = await hook(edit, { AGENT_LOCK_DIR: notAFolder, AGENT_LOCK_HOOK_ON_ERROR: 'allow' });
    expect(decision(allowed.output)).toBeUndefined();
    expect(allowed.output?.systemMessage).toContain('is not a folder');
  });

  it('refuses and names the variable when AGENT_LOCK_HOOK_ON_ERROR has a bad value', async () => {
    const r = await hook('{', { AGENT_LOCK_HOOK_ON_ERROR: 'maybe' });
    expect(decision(r.output)).toBe('deny');
    expect(r.output?.hookSpecificOutput?.permissionDecisionReason).toContain(
      'AGENT_LOCK_HOOK_ON_ERROR must be allow or deny',
    );
  });

  it('refuses on a bad AGENT_LOCK_HOOK_ON_ERROR even when nothing else goes wrong', async () => {
    const r = await hook(payload('Edit', { file_path: path.join(sandbox.tree, 'src/free.ts') }), {
      AGENT_LOCK_HOOK_ON_ERROR: 'maybe',
    });
    expect(decision(r.output)).toBe('deny');
    expect(r.output?.hookSpecificOutput?.permissionDecisionReason).toContain('AGENT_LOCK_HOOK_ON_ERROR');
    // A command that takes no lock is no decision of the hook's: it goes through.
    expect(
      (await hook(payload('Bash', { command: 'ls' }), { AGENT_LOCK_HOOK_ON_ERROR: 'Allow' })).output,
    ).toBeNull();
  });

  it('never exports an id alock would refuse: a bad AGENT_ID or session id is a refusal', async () => {
    const gitStatus = payload('Bash', { command: 'git status' });
    const badId = await hook(gitStatus, { AGENT_ID: 'bad id' });
    expect(decision(badId.output)).toBe('deny');
    expect(badId.output?.hookSpecificOutput?.updatedInput).toBeUndefined();
    const badSession = await hook(JSON.stringify({ ...JSON.parse(gitStatus), session_id: 'ab cd ef 12' }));
    expect(decision(badSession.output)).toBe('deny');
    // A command that takes no lock needs no identity: it still goes through untouched.
    expect((await hook(payload('Bash', { command: 'ls' }), { AGENT_ID: 'bad id' })).output).toBeNull();
    // A session id that is no random UUID is named by a hash of all of it (emoji included).
    const emoji = await hook(JSON.stringify({ ...JSON.parse(gitStatus), session_id: 'abcdefg\u{1F600}xyz' }));
    expect(emoji.output?.hookSpecificOutput?.updatedInput?.command).toBe(
      `export AGENT_ID=${sessionAgentId('claude', 'abcdefg\u{1F600}xyz')}; git status`,
    );
  });

  it('refuses an edit tool whose input names no file', async () => {
    const r = await hook(payload('Edit', { old_string: 'a' }));
    expect(decision(r.output)).toBe('deny');
  });
});

describe('alock hooks install --for claude', () => {
  const settingsFile = () => path.join(sandbox.tree, '.claude', 'settings.json');
  const read = () => JSON.parse(readFileSync(settingsFile(), 'utf8'));
  const ours = (entry: { hooks: { command: string }[] }) =>
    entry.hooks.some((h) => h.command.includes('hooks claude-pre-tool-use'));

  it('creates the settings file with a PreToolUse hook on Bash and every edit tool', async () => {
    const r = await sandbox.run('me', ['hooks', 'install', '--for', 'claude']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^INSTALLED PreToolUse hook in /);
    const entries = read().hooks.PreToolUse;
    // This node and this package's bin by absolute path: Claude Code's PATH is not needed.
    const program = `${process.execPath} ${realpathSync(path.resolve('bin/alock.js'))}`;
    expect(entries).toEqual([
      {
        matcher: 'Bash|PowerShell|Edit|Write|MultiEdit|NotebookEdit',
        hooks: [
          { type: 'command', command: expect.stringContaining(`${program} hooks claude-pre-tool-use || `) },
        ],
      },
    ]);
    const matcher = new RegExp(`^(?:${entries[0].matcher})$`);
    for (const tool of ['Bash', 'PowerShell', 'Edit', 'Write', 'MultiEdit', 'NotebookEdit']) {
      expect(tool).toMatch(matcher);
    }
    expect('Read').not.toMatch(matcher);
  });

  it('merges into existing settings, keeping every key and hook, and adds nothing the second time', async () => {
    mkdirSync(path.dirname(settingsFile()), { recursive: true });
    const before = {
      permissions: { allow: ['Bash(npm test)'], deny: ['Read(.env)'] },
      env: { FOO: '1' },
      hooks: {
        PreToolUse: [{ matcher: 'Bash', hooks: [{ type: 'command', command: './guard.sh', timeout: 5 }] }],
        PostToolUse: [{ matcher: 'Edit', hooks: [{ type: 'command', command: 'prettier --write' }] }],
      },
      model: 'opus',
    };
    writeFileSync(settingsFile(), `${JSON.stringify(before, null, 4)}\n`);
    expect((await sandbox.run('me', ['hooks', 'install', '--for', 'claude'])).code).toBe(0);
    const after = read();
    expect(after.permissions).toEqual(before.permissions);
    expect(after.env).toEqual(before.env);
    expect(after.model).toBe('opus');
    // Someone's PostToolUse hook stays first; agent-lock's own (trespass) comes after it.
    expect(after.hooks.PostToolUse[0]).toEqual(before.hooks.PostToolUse[0]);
    const program = `${process.execPath} ${realpathSync(path.resolve('bin/alock.js'))}`;
    expect(after.hooks.PostToolUse.slice(1)).toEqual([
      {
        matcher: 'Bash|PowerShell|Edit|Write|MultiEdit|NotebookEdit',
        hooks: [
          { type: 'command', command: expect.stringContaining(`${program} hooks claude-post-tool-use || `) },
        ],
      },
    ]);
    expect(after.hooks.PreToolUse[0]).toEqual(before.hooks.PreToolUse[0]);
    expect(after.hooks.PreToolUse.filter(ours)).toHaveLength(1);
    expect(readFileSync(settingsFile(), 'utf8')).toMatch(/^\{\n {4}"permissions"/);

    const text = readFileSync(settingsFile(), 'utf8');
    const again = await sandbox.json('me', ['hooks', 'install', '--for', 'claude']);
    expect(again.code).toBe(0);
    expect(again.body.status).toBe('unchanged');
    expect(readFileSync(settingsFile(), 'utf8')).toBe(text);
  });

  it('refuses invalid JSON and leaves the file untouched', async () => {
    mkdirSync(path.dirname(settingsFile()), { recursive: true });
    const text = '{ "permissions": { "allow": [ } // oops\n';
    writeFileSync(settingsFile(), text);
    const r = await sandbox.run('me', ['hooks', 'install', '--for', 'claude']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^ERROR: alock: .*settings\.json is not valid JSON/);
    expect(r.stderr).not.toMatch(STACK_FRAME);
    expect(readFileSync(settingsFile(), 'utf8')).toBe(text);
  });

  it('refuses settings whose hooks are not the shape Claude Code reads, untouched', async () => {
    mkdirSync(path.dirname(settingsFile()), { recursive: true });
    const text = '{"hooks": {"PreToolUse": {"matcher": "Bash"}}}\n';
    writeFileSync(settingsFile(), text);
    const r = await sandbox.run('me', ['hooks', 'install']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('"hooks.PreToolUse" is not a list');
    expect(readFileSync(settingsFile(), 'utf8')).toBe(text);
  });

  it('install again replaces an older spelling of its entry in place, then answers unchanged', async () => {
    mkdirSync(path.dirname(settingsFile()), { recursive: true });
    const old = {
      matcher: 'Bash|Edit|Write|MultiEdit|NotebookEdit',
      hooks: [
        {
          type: 'command',
          command: '"$CLAUDE_PROJECT_DIR"/node_modules/.bin/alock hooks claude-pre-tool-use',
        },
      ],
    };
    const guard = { matcher: 'Bash', hooks: [{ type: 'command', command: './guard.sh' }] };
    // The post-tool hook (trespass) by the same rule: its older spelling replaced where it stands.
    const oldPost = {
      matcher: 'Bash|Edit|Write|MultiEdit|NotebookEdit',
      hooks: [{ type: 'command', command: 'alock hooks claude-post-tool-use' }],
    };
    const format = { matcher: 'Edit', hooks: [{ type: 'command', command: 'prettier --write' }] };
    writeFileSync(
      settingsFile(),
      JSON.stringify({ hooks: { PreToolUse: [old, guard], PostToolUse: [oldPost, format] } }),
    );
    const first = await sandbox.run('me', ['hooks', 'install']);
    expect(first.code).toBe(0);
    expect(first.stdout).toContain('INSTALLED PreToolUse hook in ');
    expect(first.stdout).toContain('INSTALLED PostToolUse hook in ');
    expect(first.stdout.match(/^next: /gm)).toHaveLength(1);
    const list = read().hooks.PreToolUse;
    expect(list).toHaveLength(2);
    expect(list[0].matcher).toContain('PowerShell');
    expect(list[0].hooks[0].command).toContain(`${process.execPath} `);
    expect(list[1]).toEqual(guard);
    const post = read().hooks.PostToolUse;
    expect(post).toHaveLength(2);
    expect(post[0].matcher).toContain('PowerShell');
    expect(post[0].hooks[0].command).toContain(`${process.execPath} `);
    expect(post[0].hooks[0].command).toContain(' hooks claude-post-tool-use || ');
    expect(post[1]).toEqual(format);
    // Both entries, in their absolute form, are known as ours: nothing added the second time.
    expect((await sandbox.json('me', ['hooks', 'install'])).body.status).toBe('unchanged');
    expect(read().hooks.PostToolUse).toEqual(post);
  });

  it('refuses an unknown agent and an unknown action', async () => {
    expect((await sandbox.run('me', ['hooks', 'install', '--for', 'vscode'])).code).toBe(2);
    const r = await sandbox.run('me', ['hooks', 'frobnicate']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('unknown hooks action');
    expect(parseOneJson((await sandbox.run('me', ['--json', 'hooks', 'frobnicate'])).stdout).exit_code).toBe(
      2,
    );
  });
});
