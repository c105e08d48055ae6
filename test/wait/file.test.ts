import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FileStore } from '../../src/backends/file/file-store.js';
import { ensureStoreDir } from '../../src/backends/file/safe-fs.js';
import { hostName, processAlive, startStamp } from '../../src/host/process.js';
import { describeWaitContract } from './wait-contract.js';

describeWaitContract('file', async () => {
  const parent = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'alock-wait-store-')));
  const dir = path.join(parent, 'store');
  ensureStoreDir(dir);
  const self = { host: hostName(), pid: process.pid, started: startStamp(process.pid) };
  const handles: FileStore[] = [];
  return {
    connect() {
      const handle = new FileStore({
        dir,
        self,
        mutexTimeoutMs: 15_000,
        processAlive,
        now: Date.now,
        fresh: true,
      });
      handles.push(handle);
      return handle;
    },
    async cleanup() {
      for (const handle of handles) await handle.close();
      rmSync(parent, { recursive: true, force: true });
    },
  };
});
