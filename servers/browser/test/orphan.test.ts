import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

// A client that dies leaves its server with a closed stdin and a stderr nobody reads (EPIPE on
// every log line). The server must still end: the lost log lines are not errors of their own.
const BIN = fileURLToPath(new URL('../dist/index.js', import.meta.url))

describe('a server whose client died', () => {
  it('exits when stdin closes even though its stderr is gone, logging at debug', async () => {
    const child = spawn(process.execPath, [BIN], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, LOG_LEVEL: 'debug' },
    })
    const exited = once(child, 'exit')
    try {
      child.stdout.setEncoding('utf8')
      const answered = new Promise<string>((resolve) => {
        let seen = ''
        child.stdout.on('data', (chunk: string) => {
          seen += chunk
          if (seen.includes('"id":1')) resolve(seen)
        })
      })
      child.stdin.write(
        `${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } })}\n`,
      )
      expect(await answered).toContain('"serverInfo"')
      // The client's end of stderr goes away first, then its end of stdin: as when it is killed.
      child.stderr.destroy()
      child.stdin.end()
      const [code, signal] = await exited
      expect({ code, signal }).toEqual({ code: 0, signal: null })
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    }
  }, 20_000)
})
