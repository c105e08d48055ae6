import { defineCommand, describeContract } from '../command.js';
import { plainAnswer, VERSION } from '../context.js';

export const contractCommand = defineCommand({
  name: 'contract',
  args: '',
  summary: 'print this contract as JSON',
  flags: [],
  run: async (cli) => {
    const doc = describeContract(VERSION, cli.commands);
    return plainAnswer('contract', 'contract', [JSON.stringify(doc, null, 2)], { contract: doc }, 'contract');
  },
});
