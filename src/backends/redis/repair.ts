/**
 * `alock repair` on a Redis store: moves what cannot be read aside, into {PREFIX}:damaged:<time>
 * (kept): records that do not parse, metadata that is no number or no JSON; a store key of another
 * type is renamed there whole. The store goes on with the rest.
 */
import type { RepairReport } from '../backend.js';
import type { StoreKeys } from './commit.js';
import type { Client } from './connection.js';
import { parseRecord, parseTombstones } from './snapshot.js';

/** The store's metadata fields that hold a number. */
const NUMERIC_META = new Set(['#version', '#fence', '#tomb_v', '#watch', '#dv', '#floor', '#dwatch']);

/** Every key of a store's layout, with the type it must have and its name under the damage key. */
function layout(keys: StoreKeys): [key: string, type: string, name: string][] {
  return [
    [keys.store, 'hash', 'store'],
    [keys.changes, 'list', 'changes'],
    [keys.history, 'stream', 'history'],
    [keys.domains, 'hash', 'domains'],
  ];
}

/**
 * The keys of the layout that exist with another type, each as `KEY is a TYPE, not a TYPE`: what a
 * WRONGTYPE error does not say (which key), for the error, `repair` and `doctor` alike. A missing
 * key is no damage: every one of them is made again by the next commit.
 */
export async function layoutDamage(
  client: Client,
  keys: StoreKeys,
  call: <T>(command: () => Promise<T>) => Promise<T>,
): Promise<{ key: string; name: string; found: string; type: string }[]> {
  const wrong: { key: string; name: string; found: string; type: string }[] = [];
  for (const [key, type, name] of layout(keys)) {
    const found = await call(() => client.type(key));
    if (found !== 'none' && found !== type) wrong.push({ key, name, found, type });
  }
  return wrong;
}

/** `call` runs one command as the store runs every command (its error wording and retries). */
export async function repairStore(
  client: Client,
  keys: StoreKeys,
  prefix: string,
  call: <T>(command: () => Promise<T>) => Promise<T>,
): Promise<RepairReport> {
  const { store, changes } = keys;
  const aside = `{${prefix}}:damaged:${new Date().toISOString()}`;
  const damage: string[] = [];
  for (const { key, name, found, type } of await layoutDamage(client, keys, call)) {
    await call(() => client.rename(key, `${aside}:${name}`));
    damage.push(`${key} was a ${found}, not a ${type}`);
  }
  const fields = await call(() => client.hgetall(store));
  const move: string[] = [];
  let locksKept = 0;
  for (const [field, value] of Object.entries(fields)) {
    let bad: boolean;
    if (field === '#tombstones') bad = parseTombstones(value) === null;
    else if (NUMERIC_META.has(field)) bad = !/^\d+$/.test(value);
    else if (field.startsWith('#')) bad = false;
    else bad = parseRecord(field, value, 0).unreadable === true;
    if (bad) {
      move.push(field, value);
      damage.push(`${field.startsWith('#') ? 'metadata' : 'record'} ${field} cannot be read`);
    } else if (!field.startsWith('#')) locksKept += 1;
  }
  const keptAt = damage.length > 0 ? [aside] : [];
  if (move.length > 0) await call(() => client.agentLockRepair(store, changes, aside, ...move));
  return { damage, keptAt, locksKept };
}
