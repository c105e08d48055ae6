/**
 * Choosing and opening a store's backend. The store folder keeps a marker naming the backend at
 * first use; every later process follows it, so two agents never silently split across backends.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { AgentLockError } from '../core/errors.js';
import type { Holder } from '../core/lock.js';
import type { Backend, BackendKind } from './backend.js';
import { FileStore } from './file/file-store.js';
import { ensureStoreDir, readPrivate, writeAtomic } from './file/safe-fs.js';

export interface Marker {
  readonly schema: 'agent-lock/store-v1';
  readonly backend: Exclude<BackendKind, 'memory'>;
  readonly created_at: string;
}

export interface OpenBackendOptions {
  readonly storeDir: string;
  readonly requested: Exclude<BackendKind, 'memory'> | null;
  /** This process: it owns the store's internal mutex while deciding (see FileStoreOptions.self). */
  readonly self: Holder;
  readonly mutexTimeoutMs: number;
  readonly processAlive: (pid: number, started: string) => boolean;
  readonly now: () => number;
}

const MARKER = 'backend.json';

export function readMarker(storeDir: string): Marker | null {
  const file = path.join(storeDir, MARKER);
  const data = readPrivate(file);
  if (data === null) return null;
  try {
    const marker = JSON.parse(data.toString('utf8')) as Marker;
    if (marker.backend === 'file' || marker.backend === 'redis') return marker;
  } catch {
    // Reported below.
  }
  throw new AgentLockError('E_STORE_UNREADABLE', `the store marker ${file} is unreadable`, {
    hint: 'restore it, or remove it once no agent holds a lock in this store',
  });
}

function writeMarker(storeDir: string, backend: Marker['backend'], now: number): void {
  const marker: Marker = { schema: 'agent-lock/store-v1', backend, created_at: new Date(now).toISOString() };
  writeAtomic(path.join(storeDir, MARKER), `${JSON.stringify(marker)}\n`);
}

async function storeIsEmpty(backend: Backend): Promise<boolean> {
  return backend.transact((state) => ({
    result: state.locks.size === 0,
    changes: { put: [], del: [], fence: state.fence, tombstones: null, events: [] },
  }));
}

export async function openBackend(options: OpenBackendOptions): Promise<Backend> {
  const { storeDir } = options;
  ensureStoreDir(storeDir);
  const marker = readMarker(storeDir);
  const wanted = options.requested ?? marker?.backend ?? 'file';
  const fresh = marker === null && !existsSync(path.join(storeDir, 'locks.log'));
  const openFile = () => new FileStore({ ...options, dir: storeDir, fresh });

  if (marker !== null && marker.backend !== wanted) {
    // Switching is allowed only while the old backend holds nothing.
    const old = marker.backend === 'file' ? openFile() : null;
    const empty = old !== null && (await storeIsEmpty(old));
    await old?.close();
    if (!empty) {
      throw new AgentLockError(
        'E_BACKEND_MISMATCH',
        `the store ${storeDir} uses the ${marker.backend} backend, not ${wanted}`,
        {
          hint: `release its locks first, then run init --backend ${wanted}; or drop --backend / AGENT_LOCK_BACKEND`,
        },
      );
    }
  }
  if (wanted === 'redis') {
    throw new AgentLockError('E_BACKEND_UNAVAILABLE', 'the redis backend is not part of this build yet', {
      hint: 'use --backend file',
    });
  }
  if (marker?.backend !== wanted) writeMarker(storeDir, wanted, options.now());
  return openFile();
}
