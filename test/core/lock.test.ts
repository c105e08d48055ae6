import { describe, expect, it } from 'vitest';
import { isLockRecord, iso, type LockRecord } from '../../src/core/lock.js';

describe('iso', () => {
  it('writes every instant exactly as toISOString does', () => {
    const instants = [0, 1, 9, 10, 99, 100, 999, 1000, 1001, 1_796_298_889_189, 1_796_298_889_000];
    instants.push(253_402_300_799_999, 253_402_300_800_000, -1, -1001, 1.5, 8_640_000_000_000_000);
    let seed = 7;
    for (let i = 0; i < 2000; i++) {
      seed = (seed * 48271) % 2147483647;
      // Mostly instants a few seconds apart, as one answer has them, plus some anywhere.
      instants.push(i % 4 === 0 ? seed * 117_000 : 1_796_298_000_000 + (seed % 40_000));
    }
    for (const ms of instants) expect(iso(ms), String(ms)).toBe(new Date(ms).toISOString());
  });

  it('fails on an invalid instant as toISOString does', () => {
    expect(() => iso(Number.NaN)).toThrow(RangeError);
    expect(() => iso(8_640_000_000_000_001)).toThrow(RangeError);
  });
});

describe('isLockRecord', () => {
  const record: LockRecord = {
    id: 'lk_1',
    scope: '@merge',
    kind: 'resource',
    mode: 'exclusive',
    agent_id: 'a',
    parent_agent_id: null,
    intent: null,
    tree: null,
    host: 'h',
    pid: 1,
    started: 's',
    created_at: 1,
    updated_at: 2,
    expires_at: null,
    ttl_seconds: null,
    status: 'active',
    fence: 3,
    frozen_paths: [],
    notes: [{ at: 1, text: 'n' }],
    token_hash: 't',
  };

  it('takes a record of the stored shape, with or without its optional fields', () => {
    expect(isLockRecord(record)).toBe(true);
    expect(isLockRecord({ ...record, parent_agent_id: 'p', intent: 'i', tree: '/t' })).toBe(true);
    expect(isLockRecord({ ...record, expires_at: 5, ttl_seconds: 5, frozen_modes: [0o644] })).toBe(true);
    expect(isLockRecord({ ...record, status: 'waiting', holder: { host: 'h', pid: 2, started: 's' } })).toBe(
      true,
    );
  });

  it('refuses a record with any field missing or of the wrong kind', () => {
    const wrong: [keyof LockRecord, unknown][] = [
      ['id', 1],
      ['scope', null],
      ['kind', 'file'],
      ['mode', 'read'],
      ['agent_id', undefined],
      ['parent_agent_id', 1],
      ['intent', 1],
      ['tree', 1],
      ['host', null],
      ['pid', '1'],
      ['pid', Number.NaN],
      ['started', 1],
      ['created_at', null],
      ['updated_at', Number.POSITIVE_INFINITY],
      ['expires_at', '5'],
      ['ttl_seconds', undefined],
      ['status', 'done'],
      ['fence', null],
      ['frozen_paths', 'x'],
      ['frozen_modes', 1],
      ['notes', {}],
      ['notes', [null]],
      ['notes', [{ at: '1', text: 'n' }]],
      ['notes', [{ at: 1 }]],
      ['token_hash', 1],
    ];
    for (const [field, value] of wrong) {
      expect(isLockRecord({ ...record, [field]: value }), `${field}: ${String(value)}`).toBe(false);
    }
    expect(isLockRecord(null)).toBe(false);
    expect(isLockRecord('{}')).toBe(false);
  });
});
