/**
 * Asking a holder through real hook processes: each step is its own `node bin/alock.js` process, as
 * a harness runs its hooks. A Claude Code session claims a file by editing it; another session's
 * edit is refused naming `alock ask`; its `alock ask` reaches the holder as added context on the
 * holder's next tool call (any tool), once; the reply and the end of the turn reach the asker the
 * same way. Codex reads context on its pre-tool answer too; Gemini CLI has no place for it there,
 * so its post-tool answer carries it. The payloads are the recorded ones of fixtures/hooks/.
 */
import { spawn, spawnSync } from 'node:child_process';
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
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { keyName } from '../../src/integrations/trespass-folder.js';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const bin = path.join(repo, 'bin', 'alock.js');

type Json = Record<string, unknown>;

let base: string;
let tree: string;
let tmp: string;

beforeEach(() => {
  base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'alock-ask-')));
  tree = path.join(base, 'repo');
  tmp = path.join(base, 'tmp');
  mkdirSync(path.join(tree, 'src'), { recursive: true });
  mkdirSync(tmp);
  const git = (...args: string[]) => expect(spawnSync('git', args, { cwd: tree }).status).toBe(0);
  git('init', '-q');
  writeFileSync(path.join(tree, 'src', 'a.ts'), 'export const a = 1;\n');
  git('add', '.');
  git('-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-qm', 'start');
});

afterEach(() => {
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

function alock(args: string[], env: Record<string, string> = {}, input?: string) {
  return spawnSync(process.execPath, [bin, ...args], {
    cwd: tree,
    env: cleanEnv(env),
    encoding: 'utf8',
    ...(input === undefined ? {} : { input }),
  });
}

/** A hook call: exit 0 and its JSON answer (an empty answer is `{}`). */
function hook(action: string, payload: Json, env: Record<string, string> = {}): Json {
  const r = alock(['hooks', action], env, JSON.stringify(payload));
  expect(r.status, r.stderr).toBe(0);
  expect(r.stderr).toBe('');
  return r.stdout.trim() === '' ? {} : (JSON.parse(r.stdout) as Json);
}

const context = (answer: Json): string | undefined =>
  (answer.hookSpecificOutput as Json | undefined)?.additionalContext as string | undefined;

const A = 'ef37d7df-dc0f-4e7b-833d-d13fda7bd275';
const B = '5e1f0c3a-8b2d-4c6e-9a7f-1b3c5d7e9f00';

function claude(session: string, tool: string, input: Json, event = 'PreToolUse'): Json {
  return {
    session_id: session,
    transcript_path: `/home/dev/.claude/projects/repo/${session}.jsonl`,
    cwd: tree,
    permission_mode: 'acceptEdits',
    hook_event_name: event,
    tool_name: tool,
    tool_input: input,
    tool_use_id: `toolu_${Math.random().toString(36).slice(2, 10)}`,
  };
}

const editOf = (session: string, rel: string) =>
  claude(session, 'Edit', { file_path: path.join(tree, rel), old_string: '1', new_string: '2' });
const ls = (session: string) => claude(session, 'Bash', { command: 'ls src' });

/** The agent id the hooks gave each holder, as `alock list` shows them. */
function holders(): string[] {
  const r = alock(['--json', 'list']);
  return (JSON.parse(r.stdout).locks as { agent_id: string }[]).map((l) => l.agent_id);
}

function fixture(harness: string): { paths: string; edits: Record<string, Json>; shell: Json } {
  return JSON.parse(
    readFileSync(path.join(import.meta.dirname, 'fixtures', 'hooks', `${harness}.json`), 'utf8'),
  );
}

/** A recorded payload with the tree and the file filled in. */
function fill(payload: Json, absolute: boolean, rel = 'src/a.ts'): Json {
  const file = absolute ? path.join(tree, rel) : rel;
  return JSON.parse(
    JSON.stringify(payload).replaceAll('{{TREE}}', tree).replaceAll('{{FILE}}', file),
  ) as Json;
}

describe('ask through Claude Code hooks', () => {
  it('a refusal names alock ask; the request reaches the holder once, on any tool; reply and turn end reach the asker', () => {
    expect(hook('claude-pre-tool-use', editOf(A, 'src/a.ts'))).toEqual({});
    const [holder] = holders();
    const refused = hook('claude-pre-tool-use', editOf(B, 'src/a.ts'));
    const reason = String((refused.hookSpecificOutput as Json).permissionDecisionReason);
    expect(reason).toContain(`ask its holder with: alock ask src/a.ts "..."`);
    const shell = hook('claude-pre-tool-use', claude(B, 'Bash', { command: 'echo x > src/a.ts' }));
    expect(String((shell.hookSpecificOutput as Json).permissionDecisionReason)).toContain(
      `ask its holder with: alock ask src/a.ts "..."`,
    );
    // B runs `alock ask` as itself (its hook exports its AGENT_ID into every alock command).
    const asker = /You are (\S+)\./.exec(reason)?.[1] ?? '';
    expect(asker).toMatch(/^claude-/);
    const asked = alock(['ask', 'src/a.ts', 'please finish'], { AGENT_ID: asker });
    expect(asked.status, asked.stderr).toBe(0);
    expect(asked.stdout).toMatch(/^ASKED src\/a\.ts: left for /);
    const listed = JSON.parse(alock(['--json', 'list']).stdout).locks as { asked_by?: string[] }[];
    expect(listed.map((l) => l.asked_by)).toEqual([[asker]]);
    // Another agent's hook call does not take it.
    expect(context(hook('claude-pre-tool-use', ls(B)))).toBeUndefined();
    const told = context(hook('claude-pre-tool-use', ls(A)));
    expect(told).toContain('please finish');
    expect(told).toContain(`${asker} asks you about src/a.ts`);
    expect(told).toContain(`alock reply ${asker} "..."`);
    expect(told).toContain('alock release src/a.ts');
    // Once; and once taken, a call with nothing waiting writes nothing to the store.
    const log = path.join(tree, '.git', 'agent-locks', 'locks.log');
    const before = readFileSync(log);
    expect(context(hook('claude-pre-tool-use', ls(A)))).toBeUndefined();
    expect(context(hook('claude-pre-tool-use', editOf(A, 'src/a.ts')))).toBeUndefined();
    expect(readFileSync(log).equals(before)).toBe(true);

    const replied = alock(['reply', asker, 'two minutes'], { AGENT_ID: holder! });
    expect(replied.status, replied.stderr).toBe(0);
    expect(context(hook('claude-pre-tool-use', ls(A)))).toBeUndefined();
    expect(context(hook('claude-pre-tool-use', ls(B)))).toContain(
      `${holder} replies about src/a.ts: "two minutes"`,
    );
    expect(context(hook('claude-pre-tool-use', ls(B)))).toBeUndefined();

    // The holder's turn ends: its claim goes, and the asker's next call says the file is free.
    hook('claude-turn-end', { session_id: A, cwd: tree, hook_event_name: 'Stop', stop_hook_active: false });
    expect(holders()).toEqual([]);
    // Told on the asker's next call of any tool (the turn-end hook left it a hint on this host).
    const freed = hook('claude-pre-tool-use', ls(B));
    expect(context(freed)).toContain('src/a.ts, which you asked');
    expect(context(freed)).toContain('is free now');
    expect(context(hook('claude-pre-tool-use', editOf(B, 'src/a.ts')))).toBeUndefined();
    const events = alock(['log']).stdout;
    expect(events).toContain(`by ${asker}`);
    expect(events).toMatch(/ASKED src\/a\.ts .*please finish/);
    expect(events).toContain(`to ${asker}: two minutes`);
  });

  it('a lock broken by a person is told free to those who asked, on their next call of any tool', () => {
    hook('claude-pre-tool-use', editOf(A, 'src/a.ts'));
    const refused = hook('claude-pre-tool-use', editOf(B, 'src/a.ts'));
    const asker = /You are (\S+)\./.exec(
      String((refused.hookSpecificOutput as Json).permissionDecisionReason),
    )?.[1];
    expect(alock(['ask', 'src/a.ts', 'are you still there?'], { AGENT_ID: asker! }).status).toBe(0);
    const broken = alock(['break', 'src/a.ts', '--reason', 'session gone'], { AGENT_ID: 'a-person' });
    expect(broken.status, broken.stderr).toBe(0);
    const freed = context(hook('claude-pre-tool-use', ls(B)));
    expect(freed).toContain('src/a.ts, which you asked');
    expect(freed).toContain('is free now');
  });

  it('without a hint on this host, the next edit finds the request in the read its check makes', () => {
    hook('claude-pre-tool-use', editOf(A, 'src/a.ts'));
    // Asked from another temp folder (as from another host of a shared store): no hint here.
    const elsewhere = path.join(base, 'elsewhere');
    mkdirSync(elsewhere);
    expect(
      alock(['ask', 'src/a.ts', 'please finish'], { AGENT_ID: 'far-away', TMPDIR: elsewhere }).status,
    ).toBe(0);
    // A call that reads no store learns nothing (and costs nothing more)...
    expect(context(hook('claude-pre-tool-use', ls(A)))).toBeUndefined();
    // ...the next edit, of any file, does.
    expect(context(hook('claude-pre-tool-use', editOf(A, 'src/b.ts')))).toContain('please finish');
    expect(context(hook('claude-pre-tool-use', editOf(A, 'src/c.ts')))).toBeUndefined();
  });

  it('a hint whose tree is gone is dropped without a word', () => {
    hook('claude-pre-tool-use', editOf(A, 'src/a.ts'));
    const [holder] = holders();
    const tell = path.join(tmp, `agent-lock-${process.getuid?.() ?? 'user'}`, 'tell');
    mkdirSync(tell, { recursive: true, mode: 0o700 });
    const gone = path.join(base, 'gone');
    writeFileSync(
      path.join(tell, `${keyName(holder!)}.${keyName(gone)}.mail`),
      JSON.stringify({ agent: holder, dir: gone, at: Date.now() }),
    );
    expect(hook('claude-pre-tool-use', ls(A))).toEqual({});
    expect(readdirSync(tell)).toEqual([]);
  });

  it('two hook calls of the holder at once deliver the request once', async () => {
    hook('claude-pre-tool-use', editOf(A, 'src/a.ts'));
    expect(alock(['ask', 'src/a.ts', 'please finish'], { AGENT_ID: 'asker' }).status).toBe(0);
    const run = (payload: Json) =>
      new Promise<string>((resolve) => {
        const child = spawn(process.execPath, [bin, 'hooks', 'claude-pre-tool-use'], {
          cwd: tree,
          env: cleanEnv({}),
        });
        let out = '';
        child.stdout.on('data', (d) => {
          out += d;
        });
        child.on('close', () => resolve(out));
        child.stdin.end(JSON.stringify(payload));
      });
    const answers = await Promise.all([run(editOf(A, 'src/b.ts')), run(ls(A)), run(editOf(A, 'src/a.ts'))]);
    expect(answers.filter((a) => a.includes('please finish'))).toHaveLength(1);
  });
});

describe('ask through other harnesses', () => {
  it('Codex: the holder reads the request on its next pre-tool call', () => {
    const fx = fixture('codex');
    const edit = fill(Object.values(fx.edits)[0]!, fx.paths === 'absolute');
    expect(hook('codex-pre-tool-use', edit).hookSpecificOutput).toBeUndefined();
    const [holder] = holders();
    expect(holder).toMatch(/^codex-/);
    expect(alock(['ask', 'src/a.ts', 'please finish'], { AGENT_ID: 'asker' }).status).toBe(0);
    const told = context(hook('codex-pre-tool-use', fill(fx.shell, false)));
    expect(told).toContain('asker asks you about src/a.ts');
    expect(told).toContain('please finish');
    expect(context(hook('codex-pre-tool-use', fill(fx.shell, false)))).toBeUndefined();
  });

  it('Gemini CLI: no place on BeforeTool, so the AfterTool answer carries the request, once', () => {
    const fx = fixture('gemini');
    const edit = fill(Object.values(fx.edits)[0]!, fx.paths === 'absolute');
    hook('gemini-pre-tool-use', edit);
    const [holder] = holders();
    expect(holder).toMatch(/^gemini-/);
    expect(alock(['ask', 'src/a.ts', 'please finish'], { AGENT_ID: 'asker' }).status).toBe(0);
    const shell = fill(fx.shell, true);
    expect(JSON.stringify(hook('gemini-pre-tool-use', shell))).not.toContain('please finish');
    const after = { ...shell, hook_event_name: 'AfterTool', tool_response: { llmContent: 'a.ts' } };
    const told = hook('gemini-post-tool-use', after);
    expect(told.hookSpecificOutput).toMatchObject({ hookEventName: 'AfterTool' });
    expect(context(told)).toContain('please finish');
    expect(JSON.stringify(hook('gemini-post-tool-use', after))).not.toContain('please finish');
  });
});

describe('ask through a harness with no place for context', () => {
  it("Cursor: an allowed call carries nothing; the holder's next refused edit carries the request", () => {
    const fx = fixture('cursor');
    const edit = (rel: string) => fill(Object.values(fx.edits)[0]!, fx.paths === 'absolute', rel);
    expect(JSON.stringify(hook('cursor-pre-tool-use', edit('src/a.ts')))).not.toContain('deny');
    const [holder] = holders();
    expect(alock(['acquire', 'src/b.ts'], { AGENT_ID: 'other' }).status).toBe(0);
    expect(alock(['ask', 'src/a.ts', 'please finish'], { AGENT_ID: 'asker' }).status).toBe(0);
    expect(JSON.stringify(hook('cursor-pre-tool-use', edit('src/a.ts')))).not.toContain('please finish');
    const refused = JSON.stringify(hook('cursor-pre-tool-use', edit('src/b.ts')));
    expect(refused).toContain('"permission":"deny"');
    expect(refused).toContain(`asker asks you about src/a.ts`);
    expect(refused).toContain('please finish');
    expect(JSON.stringify(hook('cursor-pre-tool-use', edit('src/b.ts')))).not.toContain('please finish');
    expect(holder).toMatch(/^cursor-/);
  });
});

describe('ask and reply: bad input', () => {
  it('answers a one-line error, exit 2, and leaves nothing', () => {
    hook('claude-pre-tool-use', editOf(A, 'src/a.ts'));
    const bad = [
      ['ask', 'src/a.ts'],
      ['ask', 'src/a.ts', '   '],
      ['ask', 'src/a.ts', 'x'.repeat(1001)],
      ['ask', '../outside.ts', 'hello'],
      ['ask', '', 'hello'],
      ['reply', 'not an id', 'hello'],
      ['reply', 'asker'],
    ];
    for (const args of bad) {
      const r = alock(args, { AGENT_ID: 'asker' });
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr.trim().split('\n'), args.join(' ')).toHaveLength(1);
      expect(r.stderr).toMatch(/^(ERROR: alock: |error: )/);
    }
    const json = alock(['--json', 'ask', 'src/a.ts', 'x'.repeat(1001)], { AGENT_ID: 'asker' });
    expect(json.status).toBe(2);
    expect(JSON.parse(json.stdout)).toMatchObject({
      command: 'ask',
      status: 'error',
      error: { code: 'E_USAGE' },
    });
    // Nothing was left: the holder's next call hears of nothing, and the log has no request.
    expect(context(hook('claude-pre-tool-use', ls(A)))).toBeUndefined();
    expect(alock(['log']).stdout).not.toContain('ASKED');
  });

  it('asking about a free scope or only your own exits 1 and says so', () => {
    const free = alock(['--json', 'ask', 'src/free.ts', 'anyone?'], { AGENT_ID: 'asker' });
    expect(free.status).toBe(1);
    expect(JSON.parse(free.stdout)).toMatchObject({
      command: 'ask',
      status: 'free',
      ok: false,
      exit_code: 1,
    });
    expect(alock(['acquire', 'src/mine.ts'], { AGENT_ID: 'asker' }).status).toBe(0);
    const mine = alock(['ask', 'src/mine.ts', 'me?'], { AGENT_ID: 'asker' });
    expect(mine.status).toBe(1);
    expect(mine.stdout).toMatch(/^YOURS src\/mine\.ts: only you hold it/);
  });
});
