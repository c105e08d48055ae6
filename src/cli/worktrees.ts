/** The words for worktrees: warnings, the block refusal, and `list --worktrees`. Nothing here decides. */

import type { Answer } from '../answers/answer.js';
import type { CommandName, DecidedStatus } from '../answers/contract.js';
import { claimRefusal } from '../answers/messages.js';
import { paint, type Style } from '../answers/render.js';
import type { Outcome, Warning } from '../core/decide.js';
import type { Lock } from '../core/lock.js';
import type { Cli } from './context.js';

/** `WARNING ...` lines after a text answer: told, never changing the status or the exit code. */
export function warningLines(style: Style, warnings: readonly Warning[] | undefined): string[] {
  return (warnings ?? []).map((w) => `${paint(style, 'yellow', 'WARNING')} ${w.code} ${w.message}`);
}

/** AGENT_LOCK_WORKTREES=block: an overlap with another worktree's lock is a refusal of its own. */
export function otherWorktreeAnswer<C extends CommandName>(
  cli: Cli,
  command: C,
  outcome: Outcome<DecidedStatus<C>>,
  asked: string[],
): Answer {
  const holders = [...new Set(outcome.conflicts.map((l) => l.agent_id))].join(', ');
  return {
    ...cli.answer(
      command,
      outcome,
      [
        cli.head(
          'other_worktree',
          `${asked.join(' ')}: held in another worktree (AGENT_LOCK_WORKTREES=block)`,
        ),
        ...outcome.conflicts.flatMap((l) => [
          `  in ${l.worktree} on ${l.branch ?? 'a detached HEAD'}:`,
          ...cli.lines([l]).map((line) => `  ${line}`),
        ]),
        `next: work elsewhere, or ask ${holders} to merge first (${cli.cmd('conflicts')} predicts the merge)`,
      ],
      claimRefusal(outcome, asked.join(' ')) ?? '',
    ),
    // The refusal already says all the warnings would.
    warnings: [],
  };
}

export interface WorktreeGroup {
  /** The worktree's root (or, for locks without one, their tree key; null for resources). */
  worktree: string | null;
  branch: string | null;
  locks: Lock[];
}

/** `list --worktrees`: locks grouped by the worktree and branch they were taken in. */
export function byWorktree(cli: Cli, locks: readonly Lock[]): { groups: WorktreeGroup[]; text: string[] } {
  const groups = new Map<string, WorktreeGroup>();
  for (const lock of locks) {
    const worktree = lock.worktree ?? lock.tree;
    const branch = lock.branch ?? null;
    const key = JSON.stringify([worktree, branch]);
    let group = groups.get(key);
    if (group === undefined) {
      group = { worktree, branch, locks: [] };
      groups.set(key, group);
    }
    group.locks.push(lock);
  }
  // Resources (no worktree) last; worktrees by path.
  const sorted = [...groups.values()].sort((a, b) =>
    a.worktree === null ? 1 : b.worktree === null ? -1 : a.worktree.localeCompare(b.worktree),
  );
  const text = sorted.flatMap((g) => {
    const title =
      g.worktree === null
        ? 'RESOURCES (no worktree)'
        : `WORKTREE ${g.worktree} ${g.branch === null ? (g.locks[0]?.worktree ? '(detached HEAD)' : '') : `(branch ${g.branch})`}`.trimEnd();
    return [
      `${paint(cli.style, 'cyan', title)}`,
      ...g.locks.flatMap((l) => cli.lines([l]).map((x) => `  ${x}`)),
    ];
  });
  return { groups: sorted, text };
}
