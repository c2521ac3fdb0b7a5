import { type ChildProcess, spawn } from 'node:child_process'
import { type Connection, connectInMemory } from '@keel-mcp/core/testing'
import { expect } from 'vitest'
import type { BrowserHost } from '../src/lib/browser.js'
import { createServer } from '../src/server.js'

/** Names the tests treat as public sites: the resolver says public, the proxy dials loopback. */
export const PUBLIC_NAME = 'public.keel.test'
export const INTRANET_NAME = 'intranet.keel.test'

/** The browser hosts the test server created, newest last. */
export const hosts: BrowserHost[] = []

export const testServer = createServer({
  onHost: (host) => hosts.push(host),
  resolve: async (host) => {
    if (host === PUBLIC_NAME) return ['93.184.216.34']
    if (host === INTRANET_NAME) return ['127.0.0.1']
    // The machine's own name for itself, as the hosts file says (no query leaves the machine).
    if (host === 'localhost') {
      const { lookup } = await import('node:dns/promises')
      return (await lookup(host, { all: true, verbatim: true })).map((entry) => entry.address)
    }
    throw new Error(`ENOTFOUND ${host}`)
  },
  // The proxy judges PUBLIC_NAME by the resolver above (public), then reaches it on loopback.
  dialOverride: (host) => (host === PUBLIC_NAME ? '127.0.0.1' : undefined),
})

export async function connect(argv: string[] = [], env: Record<string, string> = {}): Promise<Connection> {
  return connectInMemory(testServer, { argv, env })
}

export interface CallResult {
  isError: boolean
  text: string
  structured: Record<string, unknown> | undefined
  raw: Record<string, unknown>
}

/** A call's text (all text blocks joined) and its structured content. */
export async function call(
  connection: Connection,
  name: string,
  args: Record<string, unknown> = {},
): Promise<CallResult> {
  const result = await connection.client.callTool({ name, arguments: args }, { timeout: 60_000 })
  const text = ((result.content ?? []) as Array<{ type: string; text?: string }>)
    .filter((block) => block.type === 'text')
    .map((block) => block.text ?? '')
    .join('\n')
  return {
    isError: result.isError === true,
    text,
    structured: result.structuredContent as Record<string, unknown> | undefined,
    raw: result,
  }
}

/** The ref of the element matched by `pattern` (e.g. /button "Send"/) on the first line it matches. */
export function refOf(text: string, pattern: RegExp): string {
  const line = text.split('\n').find((candidate) => pattern.test(candidate))
  // A line can hold a chain (`h3 #e6 > link "Docs" #e7`): the ref is the one after the match.
  const at = line ? (pattern.exec(line)?.index ?? 0) : 0
  const ref = line ? /#(e\d+)/.exec(line.slice(at))?.[1] : undefined
  if (!ref) throw new Error(`no ref for ${pattern} in:\n${text}`)
  return ref
}

/**
 * Calls `read` until `done` holds (events the page reports a moment after the call that caused
 * them), bounded by `timeoutMs` (a loaded machine can take seconds); returns the last result either
 * way, for the test to assert on.
 */
export async function until<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs = 20_000,
): Promise<T> {
  let value = await read()
  for (const deadline = Date.now() + timeoutMs; !done(value) && Date.now() < deadline; ) {
    await new Promise((resolve) => setTimeout(resolve, 50))
    value = await read()
  }
  return value
}

/** After navigate to /form: snapshot → type → click (form submitted) → new_tab → list_tabs → select_tab → go_back. */
export async function browseFlow(connection: Connection, site: string, session?: string) {
  const withSession = (args: Record<string, unknown>) => (session ? { ...args, session } : args)
  const snapshot = await call(connection, 'snapshot', withSession({}))
  expect(snapshot.isError, snapshot.text).toBe(false)
  expect(snapshot.text).toMatch(/textbox "Name"/)
  const typed = await call(
    connection,
    'type',
    withSession({ ref: refOf(snapshot.text, /textbox "Name"/), text: 'Ada' }),
  )
  expect(typed.isError, typed.text).toBe(false)
  const clicked = await call(connection, 'click', withSession({ ref: refOf(snapshot.text, /button "Send"/) }))
  expect(clicked.isError, clicked.text).toBe(false)
  expect(clicked.text).toContain('name=Ada')
  const opened = await call(connection, 'new_tab', withSession({}))
  expect(opened.structured?.tab).toBe('t2')
  const tabs = await call(connection, 'list_tabs', withSession({}))
  expect(tabs.structured?.tabs).toHaveLength(2)
  expect(tabs.text).toContain('/submitted?name=Ada')
  const selected = await call(connection, 'select_tab', withSession({ tab: 't1' }))
  expect(selected.isError, selected.text).toBe(false)
  const back = await call(connection, 'go_back', withSession({}))
  expect(back.isError, back.text).toBe(false)
  expect(back.structured?.url).toBe(`${site}/form`)
  return { tabs }
}

/** The Chromium the tests run. */
export const CHROMIUM = process.env.PUPPETEER_EXECUTABLE_PATH ?? '/usr/bin/chromium'

/**
 * A Chromium started the way a user starts one for Keel to attach to (`args`: all its flags,
 * DevTools on loopback among them), and the DevTools address it prints on stderr once it listens.
 */
export async function spawnUserChromium(args: string[]): Promise<{ chrome: ChildProcess; endpoint: string }> {
  const chrome = spawn(CHROMIUM, args, { stdio: ['ignore', 'ignore', 'pipe'] })
  const endpoint = await new Promise<string>((resolve, reject) => {
    let seen = ''
    chrome.stderr?.setEncoding('utf8')
    chrome.stderr?.on('data', (chunk: string) => {
      seen += chunk
      const match = /DevTools listening on (ws:\/\/\S+)/.exec(seen)
      if (match?.[1]) resolve(match[1])
    })
    chrome.once('exit', (code) => reject(new Error(`Chromium exited (${code}): ${seen}`)))
  })
  return { chrome, endpoint }
}
