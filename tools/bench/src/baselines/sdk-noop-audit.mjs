// The SDK's plain server (sdk-noop.mjs, v2) with one audit line written for each tool call the way a
// Node service commonly writes one: the record JSON.stringify'd and appended through an fs write
// stream, with the fields of Keel's audit line (time, tool, outcome, duration, transport, the sizes
// of the arguments and of the result, the argument values) and nothing Keel adds (no redaction, no
// cut of long values). What it costs over sdk-noop.mjs is the cost of a line a call written that
// way, measured in a serving process: the yardstick for Keel's `--audit-log`.
//   node sdk-noop-audit.mjs <audit file>      stdio

import { createWriteStream } from 'node:fs'
import { McpServer } from '@modelcontextprotocol/server'
import { serveStdio } from '@modelcontextprotocol/server/stdio'
import { noopResult, registerNoop } from './sdk-noop-tool.mjs'

const file = process.argv[2]
if (!file) throw new Error('usage: node sdk-noop-audit.mjs <audit file>')
const audit = createWriteStream(file, { flags: 'a', mode: 0o600 })

function factory() {
  const server = new McpServer({ name: 'sdk-noop', version: '0.0.0' })
  registerNoop(server, (args) => {
    const began = performance.now()
    const result = noopResult(args)
    audit.write(
      `${JSON.stringify({
        time: new Date().toISOString(),
        tool: 'noop',
        outcome: 'ok',
        duration_ms: Math.round((performance.now() - began) * 100) / 100,
        transport: 'stdio',
        arguments_bytes: Buffer.byteLength(JSON.stringify(args)),
        result_bytes: Buffer.byteLength(JSON.stringify(result)),
        arguments: args,
      })}\n`,
    )
    return result
  })
  return server
}

serveStdio(factory)
process.stdin.on('end', () => audit.end())
