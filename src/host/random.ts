/**
 * Random bytes from a pool refilled 4 KiB at a time: one call into the system's CSPRNG per hundred
 * locks instead of two per lock (each costs microseconds on the hot path of acquire). Every byte is
 * handed out once.
 *
 * The pool is filled from /dev/urandom, the kernel's CSPRNG, where there is one: node:crypto would
 * draw from the same source, but loading it costs a hook call about 9 ms of CPU (it brings the
 * stream modules with it), and a hook that claims a file needs 40 random bytes. Elsewhere (Windows),
 * or when the device cannot be read (a sandbox), node:crypto fills it.
 */
import { randomFillSync } from 'node:crypto';
import { closeSync, openSync, readSync } from 'node:fs';

const pool = Buffer.alloc(4096);
let used = pool.length;

/** Where `size` fresh bytes start in the pool (refilled when too few are left), handed out. */
function take(size: number): number {
  if (size > pool.length) throw new RangeError('randomBytesPooled: at most 4096 bytes');
  if (used + size > pool.length) {
    fill(pool);
    used = 0;
  }
  const at = used;
  used += size;
  return at;
}

let device = process.platform !== 'win32';

function fill(buffer: Buffer): void {
  if (device) {
    try {
      const fd = openSync('/dev/urandom', 'r');
      try {
        let at = 0;
        while (at < buffer.length) {
          const read = readSync(fd, buffer, at, buffer.length - at, null);
          if (read === 0) throw new Error('/dev/urandom ended');
          at += read;
        }
        return;
      } finally {
        closeSync(fd);
      }
    } catch {
      device = false;
    }
  }
  randomFillSync(buffer);
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
