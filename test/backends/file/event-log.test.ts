/**
 * The file store's history: events ride in their decision's line of locks.log, move to events.log
 * at compaction (never twice), and events.log rotates by size keeping at least EVENTS_KEPT events.
 */
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FileStore } from '../../../src/backends/file/file-store.js';
import type { StoreEvent } from '../../../src/core/events.js';
import { EVENTS_KEPT } from '../../../src/core/events.js';
import { fileStore, type TestStore } from '../../contract/stores.js';

let store: TestStore;
let handle: FileStore;
let dir: string;

beforeEach(async () => {
  store = await fileStore();
  handle = store.connect() as FileStore;
  dir = handle.location;
});

afterEach(async () => {
  await store.cleanup();
});

/** One commit that changes no lock and records `count` events (numbered from `from` in intent). */
function record(count: number, from: number, padding = 0): Promise<void> {
  return handle.transact((state, now) => ({
    result: undefined,
    changes: {
      put: [],
      del: [],
      fence: state.fence,
      tombstones: null,
      events: Array.from(
        { length: count },
        (_, i): StoreEvent => ({
          at: now,
          type: 'noted',
          agent_id: 'A',
          parent_agent_id: null,
          by: null,
          scope: '@r',
          kind: 'resource',
          tree: null,
          mode: 'exclusive',
          fence: 1,
          lock_id: 'lk_1',
          intent: `${from + i}`,
          reason: 'x'.repeat(padding),
        }),
      ),
    },
  }));
}

const numbers = (events: readonly StoreEvent[]) => events.map((e) => Number(e.intent));
const lines = (file: string) => readFileSync(file, 'utf8').split('\n').filter(Boolean);

describe('file store event log', () => {
  it('writes the events in the very line of the decision that makes them', async () => {
    await record(2, 0);
    const last = JSON.parse(lines(path.join(dir, 'locks.log')).at(-1)!) as { t: string; ev: { n: number }[] };
    expect(last.t).toBe('tx');
    expect(last.ev.map((e) => e.n)).toEqual([1, 2]);
    expect(existsSync(path.join(dir, 'events.log'))).toBe(false);
    expect(numbers(await handle.events(10))).toEqual([0, 1]);
  });

  it('moves events to events.log at compaction and reads them on in order', async () => {
    for (let i = 0; i < 600; i++) await record(1, i);
    expect(lines(path.join(dir, 'events.log')).length).toBeGreaterThanOrEqual(512);
    const events = await handle.events(1000);
    expect(numbers(events)).toEqual(Array.from({ length: 600 }, (_, i) => i));
    expect(events.map((e) => Number(e.id))).toEqual(Array.from({ length: 600 }, (_, i) => i + 1));
    // A reader following from an event on reads only what came after it, whichever file holds it.
    expect(numbers(await handle.events(1000, '590'))).toEqual([
      590, 591, 592, 593, 594, 595, 596, 597, 598, 599,
    ]);
    expect(numbers(await handle.events(3, '100'))).toEqual([597, 598, 599]);
  });

  it('never moves an event twice, also after a compaction that died before its rename', async () => {
    for (let i = 0; i < 100; i++) await record(1, i);
    // What a compaction killed between its append and its rename leaves: the events in both files.
    const pending = lines(path.join(dir, 'locks.log')).flatMap((line) => JSON.parse(line).ev ?? []);
    writeFileSync(
      path.join(dir, 'events.log'),
      pending.map((e: unknown) => `${JSON.stringify(e)}\n`).join(''),
    );
    for (let i = 100; i < 700; i++) await record(1, i);
    const moved = lines(path.join(dir, 'events.log')).map((line) => JSON.parse(line).n as number);
    expect(moved).toEqual(Array.from({ length: moved.length }, (_, i) => i + 1));
    expect(numbers(await handle.events(1000))).toEqual(Array.from({ length: 700 }, (_, i) => i));
  });

  it('moves in order the events of lines another handle read without the mutex and never numbered', async () => {
    for (let i = 0; i < 50; i++) await record(1, i);
    // A hook's check: it reads the whole log, events and all, and changes nothing.
    const other = store.connect() as FileStore;
    const seen = await other.transact(
      (state) => ({
        result: state.locks.size,
        changes: { put: [], del: [], fence: state.fence, tombstones: null, events: [] },
      }),
      undefined,
      { cached: 'whole' },
    );
    expect(seen).toBe(0);
    const previous = handle;
    handle = other;
    try {
      // Its own commits number on from the last event it read, and its compaction moves them all.
      for (let i = 50; i < 700; i++) await record(1, i);
    } finally {
      handle = previous;
      await other.close();
    }
    const moved = lines(path.join(dir, 'events.log')).map((line) => JSON.parse(line).n as number);
    expect(moved.length).toBeGreaterThan(50);
    expect(moved).toEqual(Array.from({ length: moved.length }, (_, i) => i + 1));
    expect(numbers(await handle.events(1000))).toEqual(Array.from({ length: 700 }, (_, i) => i));
  });

  it('numbers on past a damaged event number (Infinity, past 2^53) instead of taking it', async () => {
    await record(2, 0);
    const log = path.join(dir, 'locks.log');
    const last = JSON.parse(lines(log).at(-1)!) as { fence: number };
    // A line as damage could leave it: one event whose number no event can have.
    const damaged = (n: string) =>
      `{"t":"tx","fence":${last.fence},"put":[],"del":[],"ev":[{"n":${n},"at":1,"type":"noted","agent_id":"A","scope":"@r"}]}\n`;
    writeFileSync(log, readFileSync(log, 'utf8') + damaged('1e400') + damaged('9007199254740993'));
    const other = store.connect() as FileStore;
    const previous = handle;
    handle = other;
    try {
      await record(2, 2);
    } finally {
      handle = previous;
      await other.close();
    }
    const numbered = (JSON.parse(lines(log).at(-1)!) as { ev: { n: unknown }[] }).ev.map((e) => e.n);
    expect(numbered).toEqual([3, 4]);
    expect(numbers(await handle.events(10))).toEqual([0, 1, 2, 3]);
  });

  it('rotates events.log by size, keeping at least the last 10,000 events and not all', async () => {
    const total = 3 * EVENTS_KEPT;
    // About 600 bytes an event: 4 MiB is reached before 10,000 events, so the count decides.
    for (let from = 0; from < total; from += 1000) await record(1000, from, 400);
    expect(existsSync(path.join(dir, 'events.1.log'))).toBe(true);
    const kept = await handle.events(3 * EVENTS_KEPT);
    expect(kept.length).toBeGreaterThanOrEqual(EVENTS_KEPT);
    expect(kept.length).toBeLessThan(total);
    expect(numbers(kept)).toEqual(Array.from({ length: kept.length }, (_, i) => total - kept.length + i));
    const size = (file: string) =>
      existsSync(path.join(dir, file)) ? statSync(path.join(dir, file)).size : 0;
    const bytes = size('events.log') + size('events.1.log') + size('locks.log');
    expect(bytes).toBeLessThan(2 * 1.5 * EVENTS_KEPT * 700);
  });
});
