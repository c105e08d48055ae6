import { describe, expect, it } from 'vitest';
import { uniqueHex } from '../../src/host/random.js';

describe('uniqueHex', () => {
  it('gives that many bytes as hex, whole or cut from a longer draw', () => {
    for (const bytes of [1, 3, 4, 8, 13])
      expect(uniqueHex(bytes)).toMatch(new RegExp(`^[0-9a-f]{${bytes * 2}}$`));
  });

  it('tells names apart: no repeat in 100,000 ids of 8 bytes', () => {
    const ids = new Set(Array.from({ length: 100_000 }, () => uniqueHex(8)));
    expect(ids.size).toBe(100_000);
  });
});
