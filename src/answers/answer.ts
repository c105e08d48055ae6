import type { Warning } from '../core/decide.js';
import type { Identity } from '../core/identity.js';
import type { Lock } from '../core/lock.js';
import type { Locks } from '../locks.js';
import type { AnyStatus } from './contract.js';
import type { Style } from './render.js';

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

/** What a command may use: the store (opened on first use), the caller's identity, and the io. */
export interface CliContext {
  readonly io: {
    readonly stdout: (text: string) => void;
    readonly stderr: (text: string) => void;
    readonly env: Readonly<Record<string, string | undefined>>;
    readonly cwd: string;
    readonly isTTY?: boolean;
    readonly stdin?: () => Promise<string>;
    /** Delivers SIGINT, SIGTERM and SIGHUP while subscribed (see CliIo); returns the unsubscribe. */
    readonly onSignal?: (handler: (signal: NodeJS.Signals) => void) => () => void;
  };
  /** The program name the user typed, for messages and next steps. */
  readonly name: string;
  readonly style: Style;
  open(): Promise<Locks>;
  identity(): Identity;
  /** The global options (`--dir`, `--json`, `--backend`). */
  readonly globals: () => { dir?: string; json?: boolean; backend?: string };
}
