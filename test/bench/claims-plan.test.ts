// The pure parts of bench section (l): the edits each agent's loop makes, its session ids, the
// count of calls that wrote, the loop's schedule and its figures. The timed parts are the bench's.
import { describe, expect, it } from 'vitest';
import {
  callsThatWrote,
  editPayload,
  loopFigures,
  nextStart,
  planEdits,
  sessionId,
} from '../../bench/claims-plan.js';

describe('bench (l) plan of an agent loop', () => {
  it('claims a new file every 4th call and otherwise edits files it claimed already', () => {
    const plan = planEdits(12, 4);
    expect(plan.map((e) => (e.first ? `+${e.file}` : `${e.file}`))).toEqual([
      '+0',
      '0',
      '0',
      '0',
      '+1',
      '1',
      '0',
      '1',
      '+2',
      '2',
      '1',
      '0',
    ]);
    const claimed = new Set<number>();
    for (const edit of planEdits(200, 4)) {
      // A first edit names a file never edited; a further edit one claimed before it.
      expect(claimed.has(edit.file)).toBe(!edit.first);
      claimed.add(edit.file);
    }
    expect(claimed.size).toBe(50);
  });

  it('with a new file every call, every call claims', () => {
    expect(planEdits(3, 1)).toEqual([
      { file: 0, first: true },
      { file: 1, first: true },
      { file: 2, first: true },
    ]);
  });

  it('refuses a spacing of new files below 1', () => {
    expect(() => planEdits(3, 0)).toThrow('newEvery must be 1 or more (got 0)');
  });

  it('gives each agent a session id of its own in the first eight hex digits (the agent id)', () => {
    const ids = Array.from({ length: 100 }, (_, i) => sessionId(i));
    expect(new Set(ids.map((id) => id.slice(0, 8))).size).toBe(100);
    expect(ids[0]).toMatch(/^[0-9a-f]{8}-3333-4444-5555-666677778888$/);
  });

  it('sends the Claude Code PreToolUse payload of an Edit', () => {
    expect(JSON.parse(editPayload(sessionId(1), '/t', '/t/a.ts'))).toMatchObject({
      session_id: sessionId(1),
      cwd: '/t',
      hook_event_name: 'PreToolUse',
      tool_name: 'Edit',
      tool_input: { file_path: '/t/a.ts' },
    });
  });
});

describe('bench (l) figures', () => {
  it('counts the calls after which the store looked different', () => {
    expect(
      callsThatWrote([
        { before: '5:100:1', after: '5:100:1' },
        { before: '5:100:1', after: '5:180:2' },
        { before: '3', after: '3' },
      ]),
    ).toBe(1);
    expect(callsThatWrote([])).toBe(0);
  });

  it('starts the next call a period after the last start, or at once when that has passed', () => {
    expect(nextStart(1000, 1010, 50)).toBe(1050);
    expect(nextStart(1000, 1200, 50)).toBe(1200);
  });

  it('gives the p50 and p99 of the calls (nearest rank)', () => {
    const samples = Array.from({ length: 200 }, (_, i) => i + 1);
    expect(loopFigures(8, samples)).toEqual({ agents: 8, calls: 200, p50Ms: 100, p99Ms: 198 });
  });
});
