import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { sha256Hex } from '../../src/host/hash.js';

describe('sha256Hex', () => {
  it('hashes as a Hash object does, whichever way this Node takes', () => {
    for (const text of ['', 'tok_abc', 'é ✓ 𝄞', 'x'.repeat(10_000)]) {
      expect(sha256Hex(text)).toBe(createHash('sha256').update(text).digest('hex'));
    }
  });

  it('gives the known digest of "abc"', () => {
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});
