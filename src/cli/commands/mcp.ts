import { defineCommand } from '../command.js';

export const mcpCommand = defineCommand({
  name: 'mcp',
  args: '',
  summary: 'run the MCP server for agents over stdio',
  flags: [],
  // Integrations load only when used: the MCP SDK and friends stay out of every other command's start-up.
  run: async (cli) => (await import('../../mcp/server.js')).serveMcp(cli),
});
