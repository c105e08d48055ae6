import { describe, expect, it } from 'vitest';
import { iso } from '../../src/core/lock.js';

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
