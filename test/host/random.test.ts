import { describe, expect, it } from 'vitest';
import { randomBytesPooled, randomTextPooled } from '../../src/host/random.js';

describe('the random pool', () => {
  it('hands every byte out once, across refills, and the bytes look random', () => {
    // 40 KiB: ten refills of the 4 KiB pool.
    const chunks = Array.from({ length: 1280 }, () => randomBytesPooled(32));
    const seen = new Set(chunks.map((chunk) => chunk.toString('hex')));
    expect(seen.size).toBe(chunks.length);
    const all = Buffer.concat(chunks);
    const counts = new Array<number>(256).fill(0);
    for (const byte of all) counts[byte]! += 1;
    // 160 of each value expected: a stuck or zeroed source is far outside these bounds.
    expect(Math.min(...counts)).toBeGreaterThan(80);
    expect(Math.max(...counts)).toBeLessThan(260);
    expect(randomTextPooled(8, 'hex')).toMatch(/^[0-9a-f]{16}$/);
  });
});
