import type { McpServer } from '@modelcontextprotocol/server'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { type Session, SessionTable } from '../src/http/sessions.js'
import type { Logger } from '../src/logger.js'

// The table's eviction order: the least recently used idle session gives way, whatever the clock's
// resolution says.

const quiet = { debug() {}, info() {}, warn() {}, error() {} } as unknown as Logger

function session(client: string, closed: string[], name: string): Session {
  const server = { close: async () => void closed.push(name) } as unknown as McpServer
  return {
    transport: { handleRequest: async () => {} },
    server,
    lastSeen: Date.now(),
    lastUse: 0,
    client,
    active: 0,
  }
}

describe('SessionTable', () => {
  afterEach(() => vi.restoreAllMocks())

  it('evicts by the order of uses when every use falls in one millisecond', async () => {
    vi.spyOn(Date, 'now').mockReturnValue(1_700_000_000_000)
    const closed: string[] = []
    const table = new SessionTable({ maxSessions: 3, maxSessionsPerClient: 3, sessionIdleMs: 60_000 }, quiet)
    const a = session('one', closed, 'a')
    table.add('a', a)
    table.add('b', session('two', closed, 'b'))
    table.add('c', session('three', closed, 'c'))
    await table.busy(a, async () => {})
    expect(table.makeRoom('four')).toBe(true)
    expect(closed).toEqual(['b'])
    expect(table.get('a')).toBe(a)
    expect(table.get('b')).toBeUndefined()
  })

  it('gives way within a client at its own cap, never a busy session, and refuses when all are busy', async () => {
    vi.spyOn(Date, 'now').mockReturnValue(1_700_000_000_000)
    const closed: string[] = []
    const table = new SessionTable({ maxSessions: 10, maxSessionsPerClient: 2, sessionIdleMs: 60_000 }, quiet)
    const a = session('one', closed, 'a')
    const b = session('one', closed, 'b')
    table.add('a', a)
    table.add('b', b)
    table.add('x', session('other', closed, 'x'))
    let release: () => void = () => {}
    const running = table.busy(a, () => new Promise<void>((resolve) => (release = resolve)))
    // a is busy, so b gives way even though a was added first; the other client's x is untouched.
    expect(table.makeRoom('one')).toBe(true)
    expect(closed).toEqual(['b'])
    table.add('c', session('one', closed, 'c'))
    await table.busy(table.get('c') as Session, async () => {})
    // Now c is idle and a busy: c gives way.
    expect(table.makeRoom('one')).toBe(true)
    expect(closed).toEqual(['b', 'c'])
    table.add('d', session('one', closed, 'd'))
    const d = table.get('d') as Session
    let releaseD: () => void = () => {}
    const runningD = table.busy(d, () => new Promise<void>((resolve) => (releaseD = resolve)))
    expect(table.makeRoom('one')).toBe(false)
    release()
    releaseD()
    await Promise.all([running, runningD])
    // a's call ended before d's: a is the least recently used now.
    expect(table.makeRoom('one')).toBe(true)
    expect(closed).toEqual(['b', 'c', 'a'])
  })
})
