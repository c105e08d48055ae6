import type { Warning } from '../core/decide.js';
import type { Lock } from '../core/lock.js';
import type { AnyStatus } from './contract.js';

/** What a command hands back to the CLI edge: words, the JSON envelope's parts and an exit code. */
export interface Answer {
  command: string;
  /** One of the contract table's answers (answers/contract.ts): any other does not compile. */
  status: AnyStatus;
  exitCode: number;
  locks: Lock[];
  conflicts: Lock[];
  message: string;
  text: string[];
  /** Told beside the answer (JSON `warnings`, text `WARNING` lines); never changes status or exit code. */
  warnings?: Warning[];
  extra?: Record<string, unknown>;
  /** Output that must be printed exactly as is (a hook's JSON answer), also under --json. */
  raw?: { stdout: string; stderr?: string };
}

// The context lives in cli-context.ts; re-exported so that every front end's import keeps working.
export type { CliContext } from './cli-context.js';
