/**
 * The context every front end hands a command (the CLI, the MCP server, the hooks, the dashboard):
 * the io, the program's name, the store opened on first use, and the caller's identity.
 */
import type { Identity } from '../core/identity.js';
import type { Locks } from '../locks.js';
import type { Style } from './render.js';

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
