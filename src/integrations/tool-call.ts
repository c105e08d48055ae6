/**
 * A harness's tool call as the shared decision sees it, and the small readers the adapters
 * (harness-hooks.ts) share: which files an edit writes, a shell command (refused when it is not a
 * string), Cline's command lists, Codex's exec_command workdir.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import type { CallerFacts } from './hook-check.js';
import { shellQuote } from './hook-check.js';
import { patchPaths } from './patch-paths.js';

/** A tool call as the shared decision sees it. */
export type ToolCall =
  /** Not a call this hook guards (another event, a read, a search): it goes, silently. */
  | { readonly kind: 'ignore'; readonly why: string }
  | {
      readonly kind: 'shell';
      readonly tool: string;
      readonly command: string;
      /** Further commands of the same call, each run on its own (Cline's run_commands). */
      readonly more?: readonly string[];
      readonly cwd?: unknown;
      readonly caller: CallerFacts;
    }
  | {
      readonly kind: 'powershell';
      readonly tool: string;
      readonly command: string;
      readonly cwd?: unknown;
      readonly caller: CallerFacts;
    }
  /** A call that names what it runs in a form no harness runs: refused, saying why. */
  | { readonly kind: 'refuse'; readonly why: string }
  | {
      readonly kind: 'edit';
      readonly tool: string;
      /** As the payload names them: absolute, or relative to `cwd`. */
      readonly files: readonly string[];
      readonly cwd?: unknown;
      readonly caller: CallerFacts;
    }
  | { readonly kind: 'invalid'; readonly why: string };

export type Json = Record<string, unknown>;

export function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The first of `fields` that holds a non-blank string, as the list of files an edit writes. */
export function fileField(input: Json, fields: readonly string[]): string[] {
  for (const field of fields) {
    const value = input[field];
    if (typeof value === 'string' && value.trim() !== '') return [value];
  }
  return [];
}

export function edit(
  tool: string,
  files: string[],
  cwd: unknown,
  caller: CallerFacts,
  what: string,
): ToolCall {
  if (files.length === 0) return { kind: 'invalid', why: `${tool} names no ${what}` };
  return { kind: 'edit', tool, files, cwd, caller };
}

/** A patch whose file headers name no file writes nothing this hook can check: refused as unreadable. */
export function patchEdit(tool: string, patch: unknown, cwd: unknown, caller: CallerFacts): ToolCall {
  if (typeof patch !== 'string') return { kind: 'invalid', why: `${tool} carries no patch text` };
  return edit(tool, patchPaths(patch), cwd, caller, 'file in its patch headers');
}

/**
 * A shell tool's call. A command that is not a string (an array, an object, null, missing) is no
 * command any shell runs as it stands, and nothing can be checked in it: refused, saying so, rather
 * than let through unread.
 */
export function shellCall(tool: string, command: unknown, cwd: unknown, caller: CallerFacts): ToolCall {
  if (typeof command !== 'string') return notAString(tool, command);
  return { kind: 'shell', tool, command, cwd, caller };
}

export function powerShellCall(tool: string, command: unknown, cwd: unknown, caller: CallerFacts): ToolCall {
  if (typeof command !== 'string') return notAString(tool, command);
  return { kind: 'powershell', tool, command, cwd, caller };
}

export function notAString(tool: string, command: unknown): ToolCall {
  return { kind: 'refuse', why: notAStringReason(tool, command) };
}

/** Why a shell call whose command is not a string is refused (every harness's hook says it alike). */
export function notAStringReason(tool: string, command: unknown): string {
  const got =
    command === undefined
      ? 'missing'
      : command === null
        ? 'null'
        : Array.isArray(command)
          ? 'an array'
          : typeof command === 'object'
            ? 'an object'
            : `a ${typeof command}`;
  return `agent-lock: this ${tool} call's command is ${got}, not a string, so agent-lock cannot tell which files it writes; send the command as one string.`;
}

/** A JSON-looking string as its value (Cline sends every parameter as a string), else as it is. */
export function jsonish(value: unknown): unknown {
  if (typeof value !== 'string' || !/^\s*[[{]/.test(value)) return value;
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}

/** How much of the end of a Codex transcript is searched for the call: its last few turns. */
const TRANSCRIPT_TAIL = 512 * 1024;

/**
 * exec_command's `workdir`, read from the function call in the session's transcript (the rollout
 * JSONL Codex writes as the model's output arrives), found by the payload's tool_use_id. Null when
 * there is no transcript, no such call in its tail, or no workdir: the session's cwd then stands.
 */
export function codexWorkdir(p: Json): string | null {
  const file = p.transcript_path;
  const id = p.tool_use_id;
  if (typeof file !== 'string' || typeof id !== 'string' || id === '') return null;
  let text: string;
  try {
    const fd = openSync(file, 'r');
    try {
      const size = fstatSync(fd).size;
      const length = Math.min(size, TRANSCRIPT_TAIL);
      const buffer = Buffer.alloc(length);
      readSync(fd, buffer, 0, length, size - length);
      text = buffer.toString('utf8');
    } finally {
      closeSync(fd);
    }
  } catch {
    return null;
  }
  const needle = JSON.stringify(id);
  for (const line of text.split('\n').reverse()) {
    if (!line.includes(needle)) continue;
    try {
      const item = (JSON.parse(line) as Json).payload;
      if (!isObject(item) || item.call_id !== id || typeof item.arguments !== 'string') continue;
      const args = JSON.parse(item.arguments) as unknown;
      return isObject(args) && typeof args.workdir === 'string' ? args.workdir : null;
    } catch {}
  }
  return null;
}

/** run_commands' input in every shape the SDK accepts, as shell command lines (null: unreadable). */
export function clineCommands(input: unknown): unknown[] | null {
  const value = jsonish(input);
  if (typeof value === 'string' || Array.isArray(value)) return [value].flat();
  if (!isObject(value)) return null;
  if ('commands' in value) return [jsonish(value.commands)].flat();
  if ('cmd' in value) return [value.cmd];
  if ('command' in value) return [value];
  return null;
}

/** One run_commands entry: a shell line, or {command, args} run without a shell (quoted here). */
export function clineCommandLine(entry: unknown): unknown {
  if (!isObject(entry)) return entry;
  const { command, args } = entry;
  if (args === undefined) return command;
  const list = jsonish(args);
  if (typeof command !== 'string' || !Array.isArray(list) || !list.every((a) => typeof a === 'string')) {
    return null;
  }
  return [command, ...list].map(shellQuote).join(' ');
}
