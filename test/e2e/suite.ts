/**
 * The cases every harness is run through, in its real binary against the scripted model server:
 * (a) a held file's edit refused, the file unchanged and the refusal (naming the holder) reaching
 * the model; (b) a free edit allowed; (c) a held file written by the harness's shell tool refused
 * (`echo > f`, `sed -i`); (d) `alock acquire` run through the harness's own shell tool succeeding
 * (its sandbox lets the store be written); where a harness opts in, (e) one id per session, door
 * against door (the hook's and the shell's `alock whoami`), and (f) a shell write no parser reads
 * caught after the fact (`trespassed`). Last, the same free-edit session is timed with our hooks and
 * without them. Two sessions at once are in pairs.ts.
 */
import { existsSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { binaryPath } from '../../scripts/e2e-harnesses.mjs';
import {
  alock,
  cleanup,
  events,
  FILE_A,
  FILE_B,
  keepRecordings,
  makeSandbox,
  type RunResult,
  read,
  runHarness,
  type Sandbox,
} from './kit.js';
import { ModelServer, type ToolCall, type Wire } from './model-server.js';

export interface HarnessDef {
  readonly id: 'claude' | 'codex' | 'gemini' | 'copilot' | 'opencode' | 'cline';
  readonly name: string;
  readonly pkg: string;
  readonly version: string;
  readonly bin: string;
  /** Writes the harness's own config (model server, trust); returns the env it runs with. */
  setup(sb: Sandbox, serverUrl: string): NodeJS.ProcessEnv | Promise<NodeJS.ProcessEnv>;
  /** After `alock hooks install`: anything more the harness needs (hook trust, recorders). */
  afterInstall?(sb: Sandbox): void | Promise<void>;
  /** The command line of one non-interactive session with this prompt. */
  args(sb: Sandbox, prompt: string): string[];
  /**
   * The tool calls that replace `before` by `after` in the file (absolute path), from the tools
   * offered (a harness that wants a file read before it is edited gets the read first).
   */
  edit(tools: readonly string[], wire: Wire, file: string, before: string, after: string): ToolCall[];
  /** The tool calls that run a shell command. */
  shell(tools: readonly string[], wire: Wire, command: string): ToolCall[];
  /** More held shell writes this harness has of its own (each must be refused like held-echo). */
  readonly extraHeldShell?: Readonly<Record<string, string>>;
  /**
   * Runs `one-id`: the harness exports its session id to its shell, so the id its hook uses and the
   * id its agent's own `alock whoami` prints must be one.
   */
  readonly oneId?: boolean;
  /** Runs `trespass`: the harness has a post-tool hook whose answer reaches the model. */
  readonly trespassTold?: boolean;
  /** A case known to fail, with the reason (it still runs, and must fail: `it.fails`). */
  readonly knownFailing?: Partial<Record<string, string>>;
}

/** A shell write no parser reads: the code builds the held file's name at run time. */
export const TRESPASS = `python3 -c "open('src/'+'a'+'.ts','w').write('x')"`;

export type CaseName = 'held-edit' | 'free-edit' | 'held-echo' | 'held-sed' | 'own-acquire';

export function describeRun(run: RunResult): string {
  const tail = (s: string) => s.trim().split('\n').slice(-15).join('\n');
  return `exit ${run.code}${run.timedOut ? ' (timed out)' : ''} after ${run.ms} ms\nstdout:\n${tail(run.stdout)}\nstderr:\n${tail(run.stderr)}`;
}

export function harnessSuite(def: HarnessDef): void {
  const binary = binaryPath(def);
  const installed = existsSync(binary);
  const ci = process.env.CI !== undefined && process.env.CI !== '' && process.env.CI !== 'false';
  const title = `${def.name} ${def.version}`;

  if (!installed && !ci) {
    const why = `${def.pkg}@${def.version} is not installed at ${binary} (run: node scripts/e2e-install.mjs)`;
    console.warn(`\n!!! SKIPPING ${title}: ${why}\n`);
    describe.skip(`${title} (SKIPPED: ${why})`, () => {
      it('held-edit', () => {});
    });
    return;
  }

  describe(title, () => {
    const server = new ModelServer();
    let sb: Sandbox;
    let env: NodeJS.ProcessEnv = {};
    const withHookMs: number[] = [];

    beforeAll(async () => {
      if (!installed)
        throw new Error(`${def.pkg}@${def.version} is not installed at ${binary} and CI is set`);
      await server.start();
      sb = makeSandbox(def.id);
      env = await def.setup(sb, server.url);
      alock(sb, ['hooks', 'install', '--for', def.id]);
      await def.afterInstall?.(sb);
    });

    afterAll(async () => {
      await server.stop();
      if (sb) {
        if (process.env.AGENT_LOCK_E2E_KEEP) console.log(`kept ${sb.base}`);
        else {
          keepRecordings(sb, def.id, def.version);
          cleanup(sb);
        }
      }
    });

    async function session(name: string, steps: (tools: readonly string[], wire: Wire) => ToolCall[]) {
      server.reset({ steps, final: 'Done.' });
      const run = await runHarness(
        binary,
        def.args(sb, `Case ${name}: do the one step asked.`),
        sb,
        env,
        180_000,
      );
      if (process.env.AGENT_LOCK_E2E_DEBUG) {
        const lines = server.requests.map(
          (r) =>
            `  ${r.method} ${r.url} -> ${typeof r.answered === 'string' ? r.answered : JSON.stringify(r.answered)}`,
        );
        console.log(
          `${def.id} ${name}: ${run.ms} ms, ${server.requests.length} requests\n${lines.join('\n')}`,
        );
        writeFileSync(
          path.join(os.tmpdir(), `alock-e2e-${def.id}-${name}.requests.json`),
          JSON.stringify(server.requests, null, 1),
        );
      }
      return run;
    }

    const heldBy = 'other';
    function expectRefusalReached(run: RunResult): void {
      // What the model was told of its refused call: the tool result, or (Cline SDK) the hook's
      // context next to it.
      const results = [...server.toolResults(), ...server.hookContexts()].join('\n');
      expect(server.calls().length, `no tool call was made\n${describeRun(run)}`).toBeGreaterThan(0);
      expect(results, `the refusal did not reach the model\n${describeRun(run)}`).toMatch(
        /agent-lock|held|holds/i,
      );
      expect(results, `the refusal does not name the holder\n${describeRun(run)}`).toContain(heldBy);
    }

    const cases: Array<[string, () => Promise<void>]> = [
      [
        'held-edit',
        async () => {
          alock(sb, ['acquire', 'src/a.ts'], { AGENT_ID: heldBy });
          const file = path.join(sb.repo, 'src', 'a.ts');
          const run = await session('held-edit', (tools, wire) =>
            def.edit(tools, wire, file, 'export const a = 1;', 'export const a = 2;'),
          );
          expect(read(sb, 'src/a.ts'), describeRun(run)).toBe(FILE_A);
          expectRefusalReached(run);
        },
      ],
      [
        'free-edit',
        async () => {
          const file = path.join(sb.repo, 'src', 'b.ts');
          const run = await session('free-edit', (tools, wire) =>
            def.edit(tools, wire, file, 'export const b = 1;', 'export const b = 2;'),
          );
          withHookMs.push(run.ms);
          expect(read(sb, 'src/b.ts'), describeRun(run)).toBe('export const b = 2;\n');
        },
      ],
      [
        'held-echo',
        async () => {
          const run = await session('held-echo', (tools, wire) =>
            def.shell(tools, wire, 'echo x > src/a.ts'),
          );
          expect(read(sb, 'src/a.ts'), describeRun(run)).toBe(FILE_A);
          expectRefusalReached(run);
        },
      ],
      [
        'held-sed',
        async () => {
          const run = await session('held-sed', (tools, wire) =>
            def.shell(tools, wire, "sed -i 's/1/3/' src/a.ts"),
          );
          expect(read(sb, 'src/a.ts'), describeRun(run)).toBe(FILE_A);
          expectRefusalReached(run);
        },
      ],
      [
        'own-acquire',
        async () => {
          const run = await session('own-acquire', (tools, wire) =>
            def.shell(tools, wire, 'alock acquire src/c.ts -m e2e && echo ACQUIRED-OK'),
          );
          const results = server.toolResults().join('\n');
          expect(results, describeRun(run)).toContain('ACQUIRED-OK');
          // Written to the store by the harness's agent (the lock itself is reaped once the harness
          // process, its holder, has exited).
          const log = alock(sb, ['log']);
          const holder = /ACQUIRED src\/c\.ts (\S+)/.exec(log)?.[1];
          expect(holder, `${log}\n${describeRun(run)}`).toBeDefined();
          expect(holder).not.toBe(heldBy);
        },
      ],
    ];

    if (def.oneId) {
      cases.push([
        'one-id',
        async () => {
          // Door against door: the hook names the session by the payload's session id, its shell's
          // `alock` by the variable the harness exports; a shell write claims under the hook's id.
          const ids: string[] = [];
          for (const n of [1, 2]) {
            const file = `src/id-${n}.ts`;
            const run = await session(`one-id-${n}`, (tools, wire) =>
              def.shell(tools, wire, `echo x > ${file} && alock whoami`),
            );
            const said = /AGENT (\S+) \(from (\S+)\)/.exec(server.toolResults().join('\n'));
            const claimed = events(sb).find((e) => e.type === 'claimed' && e.scope === file)?.agent_id;
            expect(said?.[1], `whoami printed no id\n${describeRun(run)}`).toBeDefined();
            expect(claimed, `the hook claimed nothing for ${file}\n${describeRun(run)}`).toBeDefined();
            expect(said?.[1], `whoami (from ${said?.[2]}) and the hook disagree`).toBe(claimed);
            ids.push(claimed ?? '');
          }
          console.log(`one-id ${def.id}: hook = whoami = ${ids[0]}; the next session ${ids[1]}`);
          expect(ids[1], 'two sessions of one harness share an id').not.toBe(ids[0]);
        },
      ]);
    }

    if (def.trespassTold) {
      cases.push([
        'trespass',
        async () => {
          // Code no parser reads builds the held file's name; only the post-tool hook sees the change.
          alock(sb, ['acquire', 'src/a.ts'], { AGENT_ID: heldBy });
          const before = events(sb).length;
          const run = await session('trespass', (tools, wire) => def.shell(tools, wire, TRESPASS));
          try {
            expect(read(sb, 'src/a.ts'), `the write did not run\n${describeRun(run)}`).toBe('x');
            const found = events(sb)
              .slice(before)
              .filter((e) => e.type === 'trespassed');
            expect(
              found.map((e) => [e.scope, e.agent_id]),
              describeRun(run),
            ).toEqual([['src/a.ts', heldBy]]);
            expect(found[0]?.by).toMatch(new RegExp(`^${def.id}-`));
            const told = server.requests.map((r) => r.raw).join('\n');
            expect(told, `the post-tool answer did not reach the model\n${describeRun(run)}`).toContain(
              'your shell command changed src/a.ts',
            );
            expect(told, 'the holder is not named').toMatch(
              new RegExp(`${heldBy}( \\(sub-agent of [^)]*\\))? holds src/a\\.ts`),
            );
          } finally {
            writeFileSync(path.join(sb.repo, 'src', 'a.ts'), FILE_A);
          }
        },
      ]);
    }

    for (const [name, command] of Object.entries(def.extraHeldShell ?? {})) {
      cases.push([
        name,
        async () => {
          const run = await session(name, (tools, wire) => def.shell(tools, wire, command));
          expect(read(sb, 'src/a.ts'), describeRun(run)).toBe(FILE_A);
          expectRefusalReached(run);
        },
      ]);
    }

    for (const [name, body] of cases) {
      const known = def.knownFailing?.[name];
      if (known) it.fails(`${name} (KNOWN FAILING: ${known})`, body, 200_000);
      else it(name, body, 200_000);
    }

    it('cost', async () => {
      // The same scripted free edit once more with the hook, then with it uninstalled (the
      // free-edit case's time counts too: the best with the hook is compared).
      const file = path.join(sb.repo, 'src', 'b.ts');
      const steps = (tools: readonly string[], wire: Wire) =>
        def.edit(tools, wire, file, 'export const b = 1;', 'export const b = 2;');
      writeFileSync(file, FILE_B);
      withHookMs.push((await session('cost', steps)).ms);
      alock(sb, ['hooks', 'uninstall', '--for', def.id]);
      writeFileSync(file, FILE_B);
      const without = await session('cost', steps);
      expect(read(sb, 'src/b.ts'), describeRun(without)).toBe('export const b = 2;\n');
      alock(sb, ['hooks', 'install', '--for', def.id]);
      await def.afterInstall?.(sb);
      const withoutMs = [without.ms];
      const best = Math.min(...withHookMs);
      const bare = Math.min(...withoutMs);
      console.log(
        `COST ${def.id} ${def.version}: one scripted edit session ${(best / 1000).toFixed(2)} s with the hook, ${(bare / 1000).toFixed(2)} s without (${(best / bare).toFixed(2)}x; best of ${withHookMs.length} and ${withoutMs.length})`,
      );
    }, 400_000);
  });
}
