/**
 * Random bytes from a pool refilled 4 KiB at a time: one call into the system's CSPRNG per hundred
 * locks instead of two per lock (each costs microseconds on the hot path of acquire). Every byte is
 * handed out once.
 */
import { randomFillSync } from 'node:crypto';

const pool = Buffer.alloc(4096);
let used = pool.length;

/** Where `size` fresh bytes start in the pool (refilled when too few are left), handed out. */
function take(size: number): number {
  if (size > pool.length) throw new RangeError('randomBytesPooled: at most 4096 bytes');
  if (used + size > pool.length) {
    randomFillSync(pool);
    used = 0;
  }
  const at = used;
  used += size;
  return at;
}

export function randomBytesPooled(size: number): Buffer {
  const at = take(size);
  return Buffer.from(pool.subarray(at, at + size));
}

/** `size` random bytes as text, without the copy into a Buffer of their own. */
export function randomTextPooled(size: number, encoding: 'hex' | 'base64url'): string {
  const at = take(size);
  return pool.toString(encoding, at, at + size);
}
