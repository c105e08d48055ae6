/**
 * SHA-256 of a text, as hex: lock tokens (the store keeps their hash), agent ids derived from
 * session ids, store and tree names. In JavaScript (@noble/hashes), not node:crypto: loading
 * node:crypto costs a hook call about 9 ms of CPU (it brings the stream modules with it), and a hook
 * that claims a file, or names a Codex, Gemini, OpenCode or Cline session, hashes once. A hash of a
 * short text costs microseconds either way.
 */
import { sha256 } from '@noble/hashes/sha2';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils';

export function sha256Hex(text: string): string {
  return bytesToHex(sha256(utf8ToBytes(text)));
}
