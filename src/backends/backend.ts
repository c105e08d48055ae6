import type { Decided, StoreEvent, StoreState } from '../core/decide.js';

export type BackendKind = 'memory' | 'file' | 'redis';

/**
 * A store of locks. Its one obligation: `transact` runs `decide` on a consistent snapshot and
 * commits the changes it returns as one indivisible step, against every other process.
 */
export interface Backend {
  readonly kind: BackendKind;
  /** Where the store is, for messages: a folder, or a URL without its password. */
  readonly location: string;
  transact<T>(decide: (state: StoreState) => Decided<T>): Promise<T>;
  /** Recorded events (breaks), newest last. */
  events(limit: number): Promise<StoreEvent[]>;
  close(): Promise<void>;
}
