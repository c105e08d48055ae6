/**
 * The OpenCode plugin `alock hooks install --for opencode` writes to `.opencode/plugins/`. OpenCode
 * has no command hooks: a plugin's `tool.execute.before` runs before each tool call and refuses it by
 * throwing. The plugin only forwards the call to `alock hooks opencode-pre-tool-use` (the decision
 * stays in one place) and throws the reason of a deny. A child session (a sub-agent started by the
 * task tool) is sent with its parent's session id, so it counts as its parent's sub-agent. Its
 * `shell.env` hook gives the shell tool's commands the same session ids (OPENCODE_SESSION_ID,
 * OPENCODE_PARENT_SESSION_ID), which OpenCode itself does not export (1.18).
 */
export function opencodePlugin(command: string): string {
  // The words of the command as hooks install wrote them (single-quoted where a path has spaces).
  const words = [...command.matchAll(/'((?:[^']|'\\'')*)'|(\S+)/g)].map((m) =>
    m[1] !== undefined ? m[1].replace(/'\\''/g, "'") : m[2]!,
  );
  const [program, ...args] = words;
  // `hooks opencode-pre-tool-use [--no-claim]`: what AGENT_LOCK_BIN runs too.
  const hooksAt = args.indexOf('hooks');
  const tail = hooksAt < 0 ? ['hooks', 'opencode-pre-tool-use'] : args.slice(hooksAt);
  const lead = hooksAt < 0 ? args : args.slice(0, hooksAt);
  // The end of a session's turn (session.idle) or of the session (session.deleted) ends the claims
  // its edits took (docs/claims.md); with --no-claim there are none.
  const ends = tail.includes('--no-claim')
    ? {}
    : {
        'session.idle': ['hooks', 'opencode-turn-end'],
        'session.deleted': ['hooks', 'opencode-session-end'],
      };
  // The post-tool hook's words (it claims nothing: no --no-claim there).
  const postArgs = [...lead, 'hooks', 'opencode-post-tool-use'];
  return `// agent-lock: refuses edits of files other agents hold. Written by \`alock hooks install --for opencode\`;
// \`alock hooks uninstall --for opencode\` removes it. The decision is made by: ${command}
import { spawnSync } from 'node:child_process';

// bash in 1.x, shell in 2.x.
const CHECKED = new Set(['edit', 'write', 'multiedit', 'patch', 'apply_patch', 'bash', 'shell']);

// One function for both plugin formats: OpenCode 1.x calls each exported function with its context;
// 2.x reads a default export {id, setup}. The default is that same function with id and setup on
// it, so a loader that reads every export finds one plugin, not two.
export const AgentLock = async ({ client, directory }) => {
  const parents = new Map();
  // A call's arguments, kept from before to after (tool.execute.after does not always carry them).
  const argsOf = new Map();
  const parentOf = async (sessionID) => {
    if (!parents.has(sessionID)) {
      let parent;
      try {
        const session = await client.session.get({ path: { id: sessionID } });
        parent = session?.data?.parentID;
      } catch {
        parent = undefined;
      }
      parents.set(sessionID, parent);
    }
    return parents.get(sessionID);
  };
  const ENDS = ${JSON.stringify(ends)};
  return {
    // OpenCode gives the commands its shell tool runs no session id: this names the session (and a
    // sub-agent's parent) to them, so the agent's own alock is the agent this plugin's payloads name.
    'shell.env': async (input, output) => {
      if (!input?.sessionID || !output?.env) return;
      output.env.OPENCODE_SESSION_ID = input.sessionID;
      const parentSessionID = await parentOf(input.sessionID);
      if (parentSessionID) output.env.OPENCODE_PARENT_SESSION_ID = parentSessionID;
    },
    event: async ({ event }) => {
      const endArgs = ENDS[event?.type];
      const sessionID = event?.properties?.sessionID ?? event?.properties?.info?.id;
      if (!endArgs || !sessionID) return;
      const payload = { sessionID, directory, event: event.type };
      const parentSessionID = event?.properties?.info?.parentID ?? (await parentOf(sessionID));
      if (parentSessionID) payload.parentSessionID = parentSessionID;
      const [program, args] = process.env.AGENT_LOCK_BIN
        ? [process.env.AGENT_LOCK_BIN, endArgs]
        : [${JSON.stringify(program)}, [...${JSON.stringify(lead)}, ...endArgs]];
      // Never in the way of the session: a claim left behind ends with its lease or its process.
      spawnSync(program, args, { input: JSON.stringify(payload), encoding: 'utf8' });
    },
    'tool.execute.before': async (input, output) => {
      if (!CHECKED.has(input.tool)) return;
      const payload = {
        tool: input.tool,
        sessionID: input.sessionID,
        callID: input.callID,
        args: output.args,
        directory,
      };
      if (argsOf.size > 1000) argsOf.clear();
      argsOf.set(input.callID, output.args);
      const parentSessionID = await parentOf(input.sessionID);
      if (parentSessionID) payload.parentSessionID = parentSessionID;
      // AGENT_LOCK_BIN: another alock program to run instead (its own path, without node).
      const [program, args] = process.env.AGENT_LOCK_BIN
        ? [process.env.AGENT_LOCK_BIN, ${JSON.stringify(tail)}]
        : [${JSON.stringify(program)}, ${JSON.stringify(args)}];
      const run = spawnSync(program, args, { input: JSON.stringify(payload), encoding: 'utf8' });
      if (run.error || run.status !== 0) {
        const why = run.error ? run.error.message : (run.stderr || '').trim() || \`exit \${run.status}\`;
        // Not decided: AGENT_LOCK_HOOK_ON_ERROR says whether the call goes through (deny by default).
        if (process.env.AGENT_LOCK_HOOK_ON_ERROR === 'allow') return;
        throw new Error(\`agent-lock could not check this tool call: \${why}. Set AGENT_LOCK_HOOK_ON_ERROR=allow to let tool calls through unchecked.\`);
      }
      const text = (run.stdout || '').trim();
      if (text === '') return;
      const answer = JSON.parse(text);
      if (answer.decision === 'deny') throw new Error(answer.reason);
    },
    // After the call: a held file a shell command changed anyway, and what happened to this
    // session's own held files, added to the tool's output for the model. Never in the way.
    'tool.execute.after': async (input, output) => {
      if (!CHECKED.has(input.tool)) return;
      const payload = {
        tool: input.tool,
        sessionID: input.sessionID,
        callID: input.callID,
        args: input.args ?? argsOf.get(input.callID) ?? {},
        directory,
      };
      argsOf.delete(input.callID);
      const parentSessionID = await parentOf(input.sessionID);
      if (parentSessionID) payload.parentSessionID = parentSessionID;
      const [program, args] = process.env.AGENT_LOCK_BIN
        ? [process.env.AGENT_LOCK_BIN, ['hooks', 'opencode-post-tool-use']]
        : [${JSON.stringify(program)}, ${JSON.stringify(postArgs)}];
      const run = spawnSync(program, args, { input: JSON.stringify(payload), encoding: 'utf8' });
      if (run.error || run.status !== 0) return;
      try {
        const answer = JSON.parse((run.stdout || '').trim() || '{}');
        if (typeof answer.context === 'string' && answer.context !== '' && output && typeof output === 'object') {
          output.output = \`\${typeof output.output === 'string' ? output.output : ''}\n\n\${answer.context}\`;
        }
      } catch {
        // Nothing to add.
      }
    },
  };
};
AgentLock.id = 'agent-lock';
AgentLock.setup = AgentLock;
export default AgentLock;
`;
}
