/**
 * The OpenCode plugin `alock hooks install --for opencode` writes to `.opencode/plugins/`. OpenCode
 * has no command hooks: a plugin's `tool.execute.before` runs before each tool call and refuses it by
 * throwing. The plugin only forwards the call to `alock hooks opencode-pre-tool-use` (the decision
 * stays in one place) and throws the reason of a deny. A child session (a sub-agent started by the
 * task tool) is sent with its parent's session id, so it counts as its parent's sub-agent.
 */
export function opencodePlugin(command: string): string {
  const [program, ...args] = command.split(' ');
  const postArgs = args.map((arg) => arg.replace(/-pre-tool-use$/, '-post-tool-use'));
  return `// agent-lock: refuses edits of files other agents hold. Written by \`alock hooks install --for opencode\`;
// \`alock hooks uninstall --for opencode\` removes it. The decision is made by: ${command}
import { spawnSync } from 'node:child_process';

const CHECKED = new Set(['edit', 'write', 'multiedit', 'patch', 'apply_patch', 'bash']);

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
  return {
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
      const program = process.env.AGENT_LOCK_BIN || ${JSON.stringify(program)};
      const run = spawnSync(program, ${JSON.stringify(args)}, { input: JSON.stringify(payload), encoding: 'utf8' });
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
      const program = process.env.AGENT_LOCK_BIN || ${JSON.stringify(program)};
      const run = spawnSync(program, ${JSON.stringify(postArgs)}, { input: JSON.stringify(payload), encoding: 'utf8' });
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
`;
}
