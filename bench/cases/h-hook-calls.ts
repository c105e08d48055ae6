// (h) an agent hook's call that concerns no held file (a Claude Code Edit of a free file, and a
//     shell `ls`) against `node -e 0`, both spawned with the payload on stdin.  target: <= 1.3x
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import type { BenchCase } from '../case.js';
import { verdict } from '../case.js';
import { repo, TARGETS } from '../settings.js';
import { type SpawnResult, spawnAgainstNode } from '../spawn.js';

/** A Claude Code PreToolUse payload, as recorded in test/integrations/claude-hook.test.ts. */
function claudePayload(tree: string, tool: string, input: Record<string, string>): string {
  return JSON.stringify({
    session_id: '11112222-3333-4444-5555-666677778888',
    transcript_path: '/tmp/session.jsonl',
    cwd: tree,
    permission_mode: 'default',
    hook_event_name: 'PreToolUse',
    tool_name: tool,
    tool_input: input,
    tool_use_id: 'toolu_bench',
  });
}

export interface HookCalls {
  edit: SpawnResult;
  shell: SpawnResult;
  pass: boolean;
}

export const hookCalls: BenchCase<HookCalls> = {
  id: 'h',
  key: 'hookCalls',
  title: "an agent hook's call that concerns no held file",
  target: `hook / node -e 0 (median) <= ${TARGETS.hookCallMax}x`,
  async run(ctx) {
    // Someone else holds one file, so the edit is checked against a store that has locks in it.
    const holdOne = (tree: string, env: NodeJS.ProcessEnv) => {
      const taken = spawnSync(process.execPath, [path.join(repo, 'bin', 'alock.js'), 'acquire', 'held.ts'], {
        cwd: tree,
        env: { ...env, AGENT_ID: 'bench-holder' },
      });
      if (taken.status !== 0) throw new Error(`acquire held.ts: ${taken.stderr}`);
    };
    const args = ['hooks', 'claude-pre-tool-use'];
    const edit = spawnAgainstNode(
      ctx,
      'hook-edit',
      args,
      (tree) =>
        claudePayload(tree, 'Edit', {
          file_path: path.join(tree, 'free.ts'),
          old_string: 'a',
          new_string: 'b',
        }),
      TARGETS.hookCallMax,
      holdOne,
    );
    const shell = spawnAgainstNode(
      ctx,
      'hook-shell',
      args,
      (tree) => claudePayload(tree, 'Bash', { command: 'ls -la' }),
      TARGETS.hookCallMax,
      holdOne,
    );
    const h: HookCalls = { edit, shell, pass: edit.pass && shell.pass };
    return {
      data: h,
      blocks: [
        {
          kind: 'table',
          title: `(h) an agent hook's call that concerns no held file, ${h.edit.runs} runs each, alternating`,
          header: ['command', 'median ms', 'min ms'],
          rows: [
            ['node -e 0 (payload on stdin)', h.edit.nodeMedianMs.toFixed(2), h.edit.nodeMinMs.toFixed(2)],
            [
              'hooks claude-pre-tool-use: Edit free.ts',
              h.edit.alockMedianMs.toFixed(2),
              h.edit.alockMinMs.toFixed(2),
            ],
            ['node -e 0 (payload on stdin)', h.shell.nodeMedianMs.toFixed(2), h.shell.nodeMinMs.toFixed(2)],
            [
              'hooks claude-pre-tool-use: Bash ls -la',
              h.shell.alockMedianMs.toFixed(2),
              h.shell.alockMinMs.toFixed(2),
            ],
          ],
          verdicts: [
            {
              label: 'ratio hook Edit / node (median)',
              ratio: h.edit.ratio,
              target: h.edit.target,
              pass: h.edit.pass,
            },
            {
              label: 'ratio hook Bash / node (median)',
              ratio: h.shell.ratio,
              target: h.shell.target,
              pass: h.shell.pass,
            },
          ],
        },
      ],
      summary: { hookCalls: verdict(h.pass) },
      summaryText: verdict(h.pass),
    };
  },
};
