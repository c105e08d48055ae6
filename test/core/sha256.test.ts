import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sha256Hex } from '../../src/core/sha256.js';

describe('sha256Hex', () => {
  it('hashes as node:crypto does', () => {
    // A lone surrogate is encoded as U+FFFD by both.
    for (const text of ['', 'tok_abc', 'é ✓ 𝄞', 'x'.repeat(10_000), 'a\ud800b', '\udfff']) {
      expect(sha256Hex(text)).toBe(createHash('sha256').update(text).digest('hex'));
    }
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 300 }), (text) => {
        expect(sha256Hex(text)).toBe(createHash('sha256').update(text).digest('hex'));
      }),
      { numRuns: 2000 },
    );
  });

  it('gives the known digest of "abc"', () => {
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});
