import { fileURLToPath } from 'node:url'
import {
  type Connection,
  connectHttp,
  connectStdio,
  initializeRequest,
  listToolsAndExit,
  runProcess,
  spawnHttp,
  spawnRaw,
} from '@keel-mcp/core/testing'
import { afterEach, describe, expect, it } from 'vitest'

const BIN = fileURLToPath(new URL('../dist/index.js', import.meta.url))
const open: Array<{ close(): Promise<unknown> }> = []
afterEach(async () => {
  await Promise.all(open.splice(0).map((item) => item.close()))
})

/** Every stdout line of a session must be a JSON-RPC message: stdout belongs to the protocol. */
function expectOnlyJsonRpc(lines: string[]) {
  expect(lines.length).toBeGreaterThan(0)
  for (const line of lines) {
    const message = JSON.parse(line)
    expect(message.jsonrpc).toBe('2.0')
  }
}

describe.each(['v2', 'v1'] as const)('the built bin over stdio with the %s client', (generation) => {
  it('lists tools, calls one, reads a resource and gets a prompt', async () => {
    const connection: Connection = await connectStdio({ command: process.execPath, args: [BIN], generation })
    open.push(connection)
    const { client } = connection
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual([
      'add_note',
      'search_notes',
      'count_slowly',
    ])
    const added = await client.callTool({
      name: 'add_note',
      arguments: { title: 'Groceries', body: 'milk', tags: ['home'] },
    })
    expect(added.structuredContent).toMatchObject({ id: '1', title: 'Groceries', tags: ['home'] })
    const found = await client.callTool({ name: 'search_notes', arguments: { query: 'milk' } })
    expect(found.structuredContent.notes).toHaveLength(1)
    const read = await client.readResource({ uri: 'note://notes/1' })
    expect(read.contents[0].text).toBe('# Groceries\n\nmilk\n')
    const prompt = await client.getPrompt({ name: 'summarize_notes', arguments: { topic: 'home' } })
    expect(prompt.messages[0].content.text).toContain('Groceries: milk')
  })
})

describe.each(['v2', 'v1'] as const)('the built bin over HTTP with the %s client', (generation) => {
  it('serves tools over Streamable HTTP', async () => {
    const server = await spawnHttp(process.execPath, [BIN])
    open.push(server)
    const connection = await connectHttp(server.url, { generation })
    open.unshift(connection)
    const added = await connection.client.callTool({ name: 'add_note', arguments: { title: 'a', body: 'b' } })
    expect(added.isError).toBeFalsy()
  })
})

describe('the wire, raw', () => {
  it('answers bad input with the right JSON-RPC codes and keeps serving', async () => {
    const raw = spawnRaw(process.execPath, [BIN])
    open.push({ close: async () => void (await raw.end()) })
    await raw.initialize()
    raw.send('{"jsonrpc":"2.0","id":1,"method":')
    expect(await raw.next((message) => message.error?.code === -32700)).toMatchObject({ id: null })
    raw.send('{"id":2,"method":"tools/list"}')
    expect(await raw.next((message) => message.id === 2)).toMatchObject({ error: { code: -32600 } })
    expect(await raw.request('no/such/method', {}, 3)).toMatchObject({ error: { code: -32601 } })
    const wrongTypes = await raw.request(
      'tools/call',
      { name: 'add_note', arguments: { title: 7, body: 'x' } },
      4,
    )
    // SEP-1303: a schema violation is a tool error the model can read, not a protocol error.
    expect(wrongTypes.result.isError).toBe(true)
    expect(wrongTypes.result.content[0].text).toMatch(/^invalid_argument: .*title: .*expected string/)
    const missingName = await raw.request('tools/call', { arguments: {} }, 5)
    expect(missingName.error.code).toBe(-32602)
    const ok = await raw.request('tools/call', { name: 'search_notes', arguments: {} }, 6)
    expect(ok.result.content[0].text).toBe('No notes match.')
    const { code } = await raw.end()
    expect(code).toBe(0)
    expectOnlyJsonRpc(raw.lines)
  })

  it('exits with 0 within a second when stdin closes', async () => {
    const raw = spawnRaw(process.execPath, [BIN])
    await raw.initialize()
    const { code, ms } = await raw.end()
    expect(code).toBe(0)
    expect(ms).toBeLessThan(1000)
  })

  it.each(['SIGTERM', 'SIGINT'] as const)('exits with 0 on %s', async (signal) => {
    const raw = spawnRaw(process.execPath, [BIN])
    await raw.initialize()
    const exited = new Promise<number | null>((resolve) => raw.child.once('exit', (code) => resolve(code)))
    raw.child.kill(signal)
    expect(await exited).toBe(0)
  })

  it('stops a running call when the client cancels it', async () => {
    const raw = spawnRaw(process.execPath, [BIN])
    open.push({ close: async () => void (await raw.end()) })
    await raw.initialize()
    raw.sendJson({
      jsonrpc: '2.0',
      id: 9,
      method: 'tools/call',
      params: {
        name: 'count_slowly',
        arguments: { n: 1000, interval_ms: 100 },
        _meta: { progressToken: 't' },
      },
    })
    await raw.next((message) => message.method === 'notifications/progress')
    raw.sendJson({
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: 9, reason: 'test' },
    })
    expect(await raw.request('ping', {}, 10)).toMatchObject({ result: {} })
    await expect(raw.next((message) => message.id === 9, 500)).rejects.toThrow(/no matching message/)
  })
})

describe('the command line', () => {
  const runBin = (args: string[], env: Record<string, string> = {}) =>
    runProcess(process.execPath, [BIN, ...args], { env })

  it('prints help and exits 0', async () => {
    const { code, stdout } = await runBin(['--help'])
    expect(code).toBe(0)
    expect(stdout).toContain('Usage: mcp-server-example [options]')
    expect(stdout).toContain('--max-notes <n>')
  })

  it('prints the version from package.json', async () => {
    const { code, stdout } = await runBin(['--version'])
    expect(code).toBe(0)
    expect(stdout.trim()).toMatch(/^\d+\.\d+\.\d+/)
  })

  it('refuses bad config with one clear line on stderr and exit 1', async () => {
    const { code, stdout, stderr } = await runBin([], { EXAMPLE_MAX_NOTES: 'lots' })
    expect(code).toBe(1)
    expect(stdout).toBe('')
    expect(stderr.trim()).toBe('mcp-server-example: Invalid env EXAMPLE_MAX_NOTES: must be a number')
  })
})

describe('the compile cache', () => {
  // Core changes V8 flags as the server starts (heap.ts). A code cache made under other flags than
  // the next start's is rejected by V8, and every start would compile the whole bundle again.
  it('is written by the first start of the built bin and used by the next ones', async () => {
    const { mkdtemp, rm } = await import('node:fs/promises')
    const { tmpdir } = await import('node:os')
    const { join } = await import('node:path')
    const { spawnSync } = await import('node:child_process')
    const directory = await mkdtemp(join(tmpdir(), 'keel-cache-'))
    try {
      const start = () =>
        spawnSync(process.execPath, [BIN], {
          input: '',
          encoding: 'utf8',
          timeout: 30_000,
          env: { ...process.env, KEEL_COMPILE_CACHE_DIR: directory, KEEL_COMPILE_CACHE_DEBUG: '1' },
        }).stderr
      expect(start()).toContain('keel compile cache: miss')
      expect(start()).toContain('keel compile cache: hit')
      expect(start()).toContain('keel compile cache: hit')
    } finally {
      await rm(directory, { recursive: true, force: true })
    }
  })

  // A code cache holds what its writer had compiled by its exit: core tells the launcher how far a
  // process got, and a start that gets further replaces a cache made by one that did not.
  it('is replaced by the first start that lists tools, then by the first that answers a call', async () => {
    const { mkdtemp, readdir, readFile, rm } = await import('node:fs/promises')
    const { tmpdir } = await import('node:os')
    const { join } = await import('node:path')
    const directory = await mkdtemp(join(tmpdir(), 'keel-cache-'))
    const env = { KEEL_COMPILE_CACHE_DIR: directory }
    const mark = async () => {
      const names = await readdir(directory)
      const thin = names.find((name) => name.endsWith('.bin.thin'))
      return thin === undefined ? 'complete' : await readFile(join(directory, thin), 'utf8')
    }
    const start = async (work: (raw: ReturnType<typeof spawnRaw>) => Promise<unknown>) => {
      const raw = spawnRaw(process.execPath, [BIN], { env })
      await raw.initialize()
      expect(await work(raw)).toMatchObject({ result: {} })
      expect((await raw.end()).code).toBe(0)
    }
    try {
      await start((raw) => raw.request('ping', {}, 1))
      expect(await mark()).toBe('0')
      await start((raw) => raw.request('tools/list', {}, 2))
      expect(await mark()).toBe('1')
      await start((raw) => raw.request('tools/call', { name: 'search_notes', arguments: { query: 'x' } }, 3))
      expect(await mark()).toBe('complete')
    } finally {
      await rm(directory, { recursive: true, force: true })
    }
  })

  it('keeps the listed tool schemas, and lists from them exactly what a start without them lists', async () => {
    const { mkdtemp, rm, readdir } = await import('node:fs/promises')
    const { tmpdir } = await import('node:os')
    const { join } = await import('node:path')
    const directory = await mkdtemp(join(tmpdir(), 'keel-cache-'))
    // stdin ends right after tools/list: the cache is still written (at exit). Every start is the
    // server's own (no handshake answered from a record, which would answer this one whole).
    const list = async (env: Record<string, string>, args: string[] = []) => {
      const { tools, stderr } = await listToolsAndExit(process.execPath, [BIN, ...args], {
        env: {
          KEEL_COMPILE_CACHE_DIR: directory,
          KEEL_COMPILE_CACHE_DEBUG: '1',
          KEEL_HANDSHAKE_REPLAY: '0',
          ...env,
        },
      })
      return { tools, schemaCache: /keel schema cache: (\w+)/.exec(stderr)?.[1] }
    }
    try {
      for (const args of [[], ['--read-only']]) {
        const converted = await list({ KEEL_COMPILE_CACHE: '0' }, args)
        expect(converted.schemaCache).toBeUndefined()
        expect(converted.tools?.length).toBeGreaterThan(0)
        expect(converted.tools?.every((tool) => tool.inputSchema)).toBe(true)
        const first = await list({}, args)
        expect(first.schemaCache, args.join(' ')).toBe('miss')
        expect(first.tools).toEqual(converted.tools)
        const second = await list({}, args)
        expect(second.schemaCache, args.join(' ')).toBe('hit')
        expect(second.tools).toEqual(converted.tools)
      }
      // One file per configuration, readable by this user only.
      const files = (await readdir(directory)).filter((file) => file.endsWith('.tools.json'))
      expect(files).toHaveLength(2)
      const { statSync } = await import('node:fs')
      for (const file of files) expect(statSync(join(directory, file)).mode & 0o077).toBe(0)
    } finally {
      await rm(directory, { recursive: true, force: true })
    }
  })
})

describe('the handshake from the record of an identical start', () => {
  /** Starts the bin, asks what a client asks at start, then calls a tool; every stdout line, parsed. */
  const session = async (
    directory: string,
    env: Record<string, string> = {},
    args: string[] = [],
    client = 'replay-test',
  ) => {
    const raw = spawnRaw(process.execPath, [BIN, ...args], {
      env: { KEEL_COMPILE_CACHE_DIR: directory, KEEL_COMPILE_CACHE_DEBUG: '1', ...env },
    })
    raw.send(JSON.stringify(initializeRequest(client)))
    await raw.next((message) => message.id === 1)
    raw.send('{"jsonrpc":"2.0","method":"notifications/initialized"}')
    const listed = await raw.request('tools/list', {}, 2)
    const called = await raw.request(
      'tools/call',
      { name: 'add_note', arguments: { title: 't', body: 'b' } },
      3,
    )
    const { code } = await raw.end()
    return {
      code,
      listed,
      called,
      messages: raw.lines.map((line) => JSON.parse(line)),
      // How many requests the launcher answered from a record (undefined for none: no record of
      // these inputs, or one whose requests this client did not send).
      replayed: /keel handshake replay: answered ([1-9]\d*)/.exec(raw.stderr.join(''))?.[1],
    }
  }
  /** The records a cache directory holds, as paths. */
  const recordFiles = async (directory: string) => {
    const { readdir } = await import('node:fs/promises')
    const { join } = await import('node:path')
    return (await readdir(directory))
      .filter((name) => name.endsWith('.replay.json'))
      .map((name) => join(directory, name))
  }
  /** Runs `work` with a cache directory of its own, removed afterwards. */
  const inDirectory = async (work: (directory: string) => Promise<void>) => {
    const { mkdtemp, rm } = await import('node:fs/promises')
    const { tmpdir } = await import('node:os')
    const { join } = await import('node:path')
    const directory = await mkdtemp(join(tmpdir(), 'keel-replay-'))
    try {
      await work(directory)
    } finally {
      await rm(directory, { recursive: true, force: true })
    }
  }

  it('answers initialize and tools/list at the next start with the same inputs, each once, as the server would', async () => {
    const { stat } = await import('node:fs/promises')
    await inDirectory(async (directory) => {
      const first = await session(directory)
      expect(first.replayed).toBeUndefined()
      const files = await recordFiles(directory)
      expect(files).toHaveLength(1)
      expect((await stat(files[0] as string)).mode & 0o077).toBe(0)
      for (let start = 0; start < 2; start++) {
        const next = await session(directory)
        expect(next.replayed).toBe('2')
        expect(next.code).toBe(0)
        // The same answers, one per request, and the server serves the call after them.
        expect(next.messages.filter((message) => message.id === 1)).toHaveLength(1)
        expect(next.messages.filter((message) => message.id === 2)).toHaveLength(1)
        expect(next.messages.find((message) => message.id === 1).result).toEqual(
          first.messages.find((message) => message.id === 1).result,
        )
        expect(next.listed.result).toEqual(first.listed.result)
        expect(next.called.result.structuredContent).toMatchObject({ id: '1', title: 't' })
        expect(next.messages.some((message) => message.method?.endsWith('list_changed'))).toBe(false)
      }
    })
  })

  it.each(['v2', 'v1'] as const)(
    'serves the SDK %s client the same from a record as from the server',
    async (generation) => {
      await inDirectory(async (directory) => {
        const run = async () => {
          let stderr = ''
          const connection = await connectStdio({
            command: process.execPath,
            args: [BIN],
            generation,
            env: { KEEL_COMPILE_CACHE_DIR: directory, KEEL_COMPILE_CACHE_DEBUG: '1' },
            onStderr: (chunk) => {
              stderr += chunk
            },
          })
          try {
            const { tools } = await connection.client.listTools()
            const added = await connection.client.callTool({
              name: 'add_note',
              arguments: { title: 'a', body: 'b' },
            })
            return {
              tools,
              added: added.structuredContent,
              instructions: connection.client.getInstructions(),
              stderr,
            }
          } finally {
            await connection.close()
          }
        }
        const first = await run()
        const second = await run()
        expect(first.stderr).not.toMatch(/keel handshake replay: answered [1-9]/)
        expect(second.stderr).toMatch(/keel handshake replay: answered [1-9]/)
        expect(second.tools).toEqual(first.tools)
        expect(second.instructions).toEqual(first.instructions)
        expect(second.added).toMatchObject({ id: '1', title: 'a', body: 'b' })
      })
    },
  )

  it('answers from no record when the command line or the environment differ', async () => {
    await inDirectory(async (directory) => {
      await session(directory)
      expect((await session(directory, {}, ['--read-only'])).replayed).toBeUndefined()
      expect((await session(directory, { MCP_TOOL_TIMEOUT_MS: '5000' })).replayed).toBeUndefined()
      expect((await session(directory, {}, ['--read-only'])).replayed).toBe('2')
      expect((await session(directory)).replayed).toBe('2')
      // Another client with the same configuration: a record of its own, the first kept.
      expect((await session(directory, {}, [], 'other-client')).replayed).toBeUndefined()
      expect((await session(directory, {}, [], 'other-client')).replayed).toBe('2')
      expect((await session(directory)).replayed).toBe('2')
    })
  })

  it('keeps what a record held when a later start of the same client asks less', async () => {
    await inDirectory(async (directory) => {
      await session(directory)
      // The same client, straight from initialize to a call: nothing new to record.
      const raw = spawnRaw(process.execPath, [BIN], { env: { KEEL_COMPILE_CACHE_DIR: directory } })
      raw.send(JSON.stringify(initializeRequest('replay-test')))
      await raw.next((message) => message.id === 1)
      await raw.request('tools/call', { name: 'search_notes', arguments: { query: 'x' } }, 3)
      expect((await raw.end()).code).toBe(0)
      expect((await session(directory)).replayed).toBe('2')
    })
  })

  it('answers nothing from a record that is not what core writes, and the server serves as always', async () => {
    const { readFile, writeFile } = await import('node:fs/promises')
    await inDirectory(async (directory) => {
      const first = await session(directory)
      const [file] = (await recordFiles(directory)) as [string]
      const stored = JSON.parse(await readFile(file, 'utf8'))
      // An answer that would break the framing, one that is not JSON, one that is not an object.
      const broken = ['{"tools":[]}\n{"jsonrpc":"2.0","id":9,"result":{}}', '{"tools":', '[1]']
      for (const result of broken) {
        for (const exchange of stored.records[0].exchanges) exchange.result = result
        await writeFile(file, JSON.stringify(stored))
        const next = await session(directory)
        expect(next.replayed).toBeUndefined()
        expect(next.listed.result).toEqual(first.listed.result)
        expect(next.messages.every((message) => message.id !== 9)).toBe(true)
      }
      await writeFile(file, 'not json')
      expect((await session(directory)).listed.result).toEqual(first.listed.result)
    })
  })

  it('keeps secrets out of the record, and matches a start whatever the secret', async () => {
    const { readFile } = await import('node:fs/promises')
    await inDirectory(async (directory) => {
      await session(directory, { MCP_AUTH_TOKEN: 'first-secret-value-1234' })
      const [file] = (await recordFiles(directory)) as [string]
      const text = await readFile(file, 'utf8')
      expect(text).not.toContain('first-secret-value-1234')
      expect(text).toContain('"MCP_AUTH_TOKEN"')
      expect((await session(directory, { MCP_AUTH_TOKEN: 'second-secret-value-5678' })).replayed).toBe('2')
      // Set or not is part of the inputs.
      expect((await session(directory)).replayed).toBeUndefined()
    })
  })

  it('follows a recorded listing that differs from the server’s with list_changed, and records the server’s', async () => {
    const { readFile, writeFile } = await import('node:fs/promises')
    await inDirectory(async (directory) => {
      const first = await session(directory)
      const [file] = (await recordFiles(directory)) as [string]
      await writeFile(file, (await readFile(file, 'utf8')).replaceAll('Store a note', 'Keep a note'))
      const altered = await session(directory)
      expect(altered.replayed).toBe('2')
      expect(altered.listed.result.tools[0].description).toContain('Keep a note')
      expect(
        altered.messages.filter((message) => message.method === 'notifications/tools/list_changed'),
      ).toHaveLength(1)
      // The capability that promises it.
      expect(altered.messages.find((message) => message.id === 1).result.capabilities.tools.listChanged).toBe(
        true,
      )
      const next = await session(directory)
      expect(next.replayed).toBe('2')
      expect(next.listed.result).toEqual(first.listed.result)
      expect(next.messages.some((message) => message.method?.endsWith('list_changed'))).toBe(false)
    })
  })

  it('answers a client that lists and leaves, and exits 0 without starting the server', async () => {
    await inDirectory(async (directory) => {
      const env = { KEEL_COMPILE_CACHE_DIR: directory, KEEL_COMPILE_CACHE_DEBUG: '1' }
      const first = await listToolsAndExit(process.execPath, [BIN], { env })
      expect(first.stderr).toContain('keel schema cache:')
      const next = await listToolsAndExit(process.execPath, [BIN], { env })
      expect(next.code).toBe(0)
      expect(next.tools).toEqual(first.tools)
      expect(next.stderr).toContain('keel handshake replay: answered 2, then stdin ended')
      // The server never started: it would have opened its schema cache.
      expect(next.stderr).not.toContain('keel schema cache:')
    })
  })

  it('exits 0 on SIGTERM while the launcher holds the client’s answers, and serves a start without it the same', async () => {
    await inDirectory(async (directory) => {
      await session(directory)
      const raw = spawnRaw(process.execPath, [BIN], { env: { KEEL_COMPILE_CACHE_DIR: directory } })
      raw.send(JSON.stringify(initializeRequest('replay-test')))
      await raw.next((message) => message.id === 1)
      const exited = new Promise<number | null>((resolve) => raw.child.once('exit', (code) => resolve(code)))
      raw.child.kill('SIGTERM')
      expect(await exited).toBe(0)
      const off = await session(directory, { KEEL_HANDSHAKE_REPLAY: '0' })
      expect(off.replayed).toBeUndefined()
      expect(off.called.result.structuredContent).toMatchObject({ id: '1' })
    })
  })
})
