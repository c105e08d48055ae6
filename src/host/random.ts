/**
 * Random bytes from a pool refilled 4 KiB at a time: one call into the system's CSPRNG per hundred
 * locks instead of two per lock (each costs microseconds on the hot path of acquire). Every byte is
 * handed out once.
 */
import { randomFillSync } from 'node:crypto';

const pool = Buffer.alloc(4096);
let used = pool.length;

export function randomBytesPooled(size: number): Buffer {
  if (size > pool.length) throw new RangeError('randomBytesPooled: at most 4096 bytes');
  if (used + size > pool.length) {
    randomFillSync(pool);
    used = 0;
  }
  const bytes = Buffer.from(pool.subarray(used, used + size));
  used += size;
  return bytes;
}
