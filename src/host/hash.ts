/**
 * SHA-256 of a short text, as hex. Node 20.12 and later hash in one call (`crypto.hash`), about
 * four times cheaper than a Hash object per token; earlier 20.x releases take the object.
 */
import * as crypto from 'node:crypto';

type OneShot = (algorithm: string, data: string, encoding: 'hex') => string;
const oneShot = (crypto as unknown as { hash?: OneShot }).hash;

export const sha256Hex: (text: string) => string =
  typeof oneShot === 'function'
    ? (text) => oneShot('sha256', text, 'hex')
    : (text) => crypto.createHash('sha256').update(text).digest('hex');
