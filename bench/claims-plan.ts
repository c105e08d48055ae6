// The pure parts of section (l): which file each call of an agent's loop edits, the Claude Code
// payload it sends, whether a call wrote to the store, and the loop's timing figures. No clock,
// no processes: test/bench/claims-plan.test.ts checks them.
import { percentile, round } from './stats.js';

/** One call of an agent's loop: the file it edits, and whether that edit is the file's first. */
export interface PlannedEdit {
  file: number;
  first: boolean;
}

/**
 * `calls` edits of an agent that starts a new file every `newEvery` calls and, in between, edits
 * the files it claimed already (round the last few, newest first), as an agent working through a
 * change does. The first call always claims a new file.
 */
export function planEdits(calls: number, newEvery: number): PlannedEdit[] {
  if (!Number.isInteger(newEvery) || newEvery < 1)
    throw new Error(`newEvery must be 1 or more (got ${newEvery})`);
  const plan: PlannedEdit[] = [];
  let claimed = 0;
  for (let i = 0; i < calls; i++) {
    if (i % newEvery === 0) {
      plan.push({ file: claimed, first: true });
      claimed++;
    } else {
      // Back over the files claimed so far: the newest, then the one before, and so on.
      plan.push({ file: claimed - 1 - (((i % newEvery) - 1) % claimed), first: false });
    }
  }
  return plan;
}

/** An agent's session id: distinct in its first eight hex digits, which name the agent. */
export function sessionId(agent: number): string {
  return `${(0xbe000000 + agent).toString(16)}-3333-4444-5555-666677778888`;
}

/** A Claude Code PreToolUse payload for an Edit of `file`, as (h) sends it. */
export function editPayload(session: string, cwd: string, file: string): string {
  return JSON.stringify({
    session_id: session,
    transcript_path: '/tmp/session.jsonl',
    cwd,
    permission_mode: 'default',
    hook_event_name: 'PreToolUse',
    tool_name: 'Edit',
    tool_input: { file_path: file, old_string: 'a', new_string: 'b' },
    tool_use_id: 'toolu_bench',
  });
}

/**
 * How many calls wrote to the store, from what the store looked like before and after each call
 * (a mark that changes with every write: the file store's log size, inode and mtime; the Redis
 * store's version).
 */
export function callsThatWrote(marks: readonly { before: string; after: string }[]): number {
  return marks.filter((m) => m.before !== m.after).length;
}

/** When the next call of a loop may start: `periodMs` after the last start, or now if later. */
export function nextStart(lastStartMs: number, nowMs: number, periodMs: number): number {
  return Math.max(nowMs, lastStartMs + periodMs);
}

/** The figures of one loop run: its calls' p50 and p99 in ms. */
export interface LoopFigures {
  agents: number;
  calls: number;
  p50Ms: number;
  p99Ms: number;
}

export function loopFigures(agents: number, samples: readonly number[]): LoopFigures {
  return {
    agents,
    calls: samples.length,
    p50Ms: round(percentile(samples, 50)),
    p99Ms: round(percentile(samples, 99)),
  };
}
