import { PassThrough } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { ListenWatches, narrowListen } from '../src/change-streams.js'
import { type Runtime, ToolError } from '../src/index.js'
import { createLogger } from '../src/logger.js'
import { LineTransport } from '../src/stdio.js'

// What 2026-07-28 listen streams watch: each URI once per process, through the resources'
// own subscribe hooks, released with the last stream; refused URIs are left out of the ack.

function setup() {
  const active = new Map<string, number>()
  const notifiers = new Map<string, () => void>()
  let calls = 0
  const hook = (uri: URL, notify: () => void) => {
    calls++
    if (uri.pathname.includes('secret')) throw new ToolError('permission_denied', 'not yours')
    active.set(uri.href, (active.get(uri.href) ?? 0) + 1)
    notifiers.set(uri.href, notify)
    return () => active.set(uri.href, (active.get(uri.href) ?? 0) - 1)
  }
  const runtime = {
    spec: {
      name: 'watch-test',
      version: '1.0.0',
      tools: [],
      resources: [{ name: 'fixed', uri: 'memo://fixed', read: () => [], subscribe: hook }],
      resourceTemplates: [
        { name: 'notes', uriTemplate: 'memo://notes/{id}', read: () => [], subscribe: hook },
      ],
    },
    deps: {},
    logger: createLogger({ level: 'silent' }, {}),
    shutdownSignal: new AbortController().signal,
  } as unknown as Runtime<object, object>
  const emitted: string[] = []
  const watches = new ListenWatches(runtime, (uri) => emitted.push(uri))
  return { watches, active, notifiers, emitted, calls: () => calls }
}

describe('ListenWatches', () => {
  it('watches each URI once however many streams name it, and stops with the last stream', async () => {
    const { watches, active, notifiers, emitted, calls } = setup()
    const first = await watches.open(['memo://notes/1', 'memo://fixed', 'memo://notes/1'])
    const second = await watches.open(['memo://notes/1'])
    expect(first.watched).toEqual(['memo://notes/1', 'memo://fixed'])
    expect(second.watched).toEqual(['memo://notes/1'])
    expect(calls()).toBe(2)
    notifiers.get('memo://notes/1')?.()
    expect(emitted).toEqual(['memo://notes/1'])
    first.release()
    first.release()
    await Promise.resolve()
    expect(active.get('memo://fixed')).toBe(0)
    expect(active.get('memo://notes/1')).toBe(1)
    second.release()
    await new Promise((resolve) => setImmediate(resolve))
    expect(active.get('memo://notes/1')).toBe(0)
    expect(watches.size).toBe(0)
  })

  it('leaves out URIs no subscribable resource serves and those whose hook refuses', async () => {
    const { watches } = setup()
    const opened = await watches.open(['memo://notes/secret', 'other://x', 'not a uri', 'memo://fixed'])
    expect(opened.watched).toEqual(['memo://fixed'])
    expect(watches.size).toBe(1)
  })

  it('narrows the listen request to the watched URIs and keeps the rest of it', () => {
    const request = {
      jsonrpc: '2.0',
      id: 'listen-1',
      method: 'subscriptions/listen',
      params: {
        _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' },
        notifications: { toolsListChanged: true, resourceSubscriptions: ['a://1', 'a://2'] },
      },
    }
    expect(narrowListen(request, ['a://2']).params).toEqual({
      _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' },
      notifications: { toolsListChanged: true, resourceSubscriptions: ['a://2'] },
    })
    expect(narrowListen(request, []).params.notifications).toEqual({ toolsListChanged: true })
  })
})

describe('LineTransport prepare', () => {
  it('delivers a prepared message as prepared, and the messages after it in order', async () => {
    const input = new PassThrough()
    let release!: () => void
    const transport = new LineTransport({
      input,
      output: new PassThrough(),
      prepare: (message) =>
        (message as { id?: number }).id === 1
          ? new Promise((resolve) => {
              release = () => resolve({ ...message, prepared: true })
            })
          : undefined,
    })
    const seen: unknown[] = []
    transport.onmessage = (message) => void seen.push(message)
    await transport.start()
    input.write('{"jsonrpc":"2.0","id":1,"method":"a"}\n{"jsonrpc":"2.0","id":2,"method":"b"}\n')
    await new Promise((resolve) => setImmediate(resolve))
    expect(seen).toEqual([])
    release()
    await new Promise((resolve) => setImmediate(resolve))
    expect(seen).toEqual([
      { jsonrpc: '2.0', id: 1, method: 'a', prepared: true },
      { jsonrpc: '2.0', id: 2, method: 'b' },
    ])
    await transport.close()
  })
})
