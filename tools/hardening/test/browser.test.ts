import { readFileSync } from 'node:fs'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import {
  BASIC_PASSWORD,
  BASIC_USER,
  BROWSER_COOKIE,
  BROWSER_PASSWORD,
  type BrowserPages,
  startBrowserPages,
} from '../src/browser-pages.js'
import type { Answer } from '../src/fuzz.js'
import { record } from '../src/report.js'
import { findLeaks } from '../src/secrets.js'
import { browserCommand, HTTP_BEARER } from '../src/servers.js'
import {
  type Command,
  familyOf,
  HttpPeer,
  killAll,
  type ProcessRef,
  running,
  StdioPeer,
} from '../src/wire.js'

// Browser-specific faults and secrets: Chromium killed mid-session, and the credentials a page
// carries (URL userinfo, a session cookie, a typed password) kept out of every output.

const cleanups: Array<() => Promise<unknown>> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})
afterAll(() => {
  expect(killAll()).toBe(0)
})

const isToolError = (answer: Answer) => (answer.result as { isError?: boolean } | undefined)?.isError === true
const textOf = (answer: Answer) =>
  ((answer.result as { content?: Array<{ text?: string }> } | undefined)?.content ?? [])
    .map((block) => block.text ?? '')
    .join('\n')

/** The ref of the first snapshot line matching `pattern`. */
function refOf(text: string, pattern: RegExp): string {
  const line = text.split('\n').find((candidate) => pattern.test(candidate))
  // A line can hold a chain (`h3 #e6 > link "Docs" #e7`): the ref is the one after the match.
  const at = line ? (pattern.exec(line)?.index ?? 0) : 0
  const ref = line ? /#(e\d+)/.exec(line.slice(at))?.[1] : undefined
  if (!ref) throw new Error(`no ref for ${pattern} in:\n${text.slice(0, 2000)}`)
  return ref
}

/** Chromium's main process: the server's direct child (its helpers are Chromium's children). */
function chromiumOf(pid: number): ProcessRef[] {
  return familyOf(pid).filter((ref) => {
    try {
      const stat = readFileSync(`/proc/${ref.pid}/stat`, 'utf8')
      return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid
    } catch {
      return false
    }
  })
}

async function pages(): Promise<BrowserPages> {
  const started = await startBrowserPages()
  cleanups.push(() => started.close())
  return started
}

let nextId = 0
const call = (peer: StdioPeer, name: string, args: Record<string, unknown> = {}) =>
  peer.request(`b${++nextId}`, 'tools/call', { name, arguments: args }, 60_000)

describe('browser: Chromium killed mid-session', () => {
  it('starts Chromium again on the next call, says so, and acts by ref on the new page', async () => {
    const site = await pages()
    const peer = new StdioPeer(browserCommand(site.url))
    cleanups.push(() => peer.end())
    await peer.initialize()
    const opened = await call(peer, 'navigate', { url: `${site.url}/counter` })
    expect(isToolError(opened), textOf(opened)).toBe(false)
    const clicked = await call(peer, 'click', { ref: refOf(textOf(opened), /button "Increment"/) })
    expect(textOf(clicked)).toContain('Count: 1')

    const [chromium, ...others] = chromiumOf(peer.pid)
    expect(others).toEqual([])
    const before = familyOf(peer.pid).length
    process.kill((chromium as ProcessRef).pid, 'SIGKILL')
    // The server notices the disconnect (its log says so) before the next call.
    for (const deadline = Date.now() + 15_000; Date.now() < deadline; ) {
      if (peer.stderr.includes('The browser stopped')) break
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    expect(peer.stderr).toContain('The browser stopped')

    const again = await call(peer, 'navigate', { url: `${site.url}/counter` })
    expect(isToolError(again), textOf(again)).toBe(false)
    expect(textOf(again)).toContain('The browser had stopped (crashed or killed) and was started again')
    // A ref of the new page works; the old Chromium is gone and exactly one new one runs.
    const clickedAgain = await call(peer, 'click', { ref: refOf(textOf(again), /button "Increment"/) })
    expect(textOf(clickedAgain)).toContain('Count: 1')
    expect(running(chromium as ProcessRef)).toBe(false)
    const relaunched = chromiumOf(peer.pid)
    expect(relaunched).toHaveLength(1)
    expect(relaunched[0]).not.toEqual(chromium)
    // A stale ref from before the kill is refused with a clear error, and the process stays up.
    const stale = await call(peer, 'click', { ref: 'e99999999' })
    expect(isToolError(stale)).toBe(true)

    const family = familyOf(peer.pid)
    const ended = await peer.end(15_000)
    record('faults', {
      case: 'Chromium killed mid-session',
      server: 'browser',
      processesBefore: before,
      processesAfterRelaunch: family.length,
      exit: ended,
    })
    expect(ended).toMatchObject({ code: 0, killed: false })
    expect(family.filter(running)).toEqual([])
    expect(peer.impure).toEqual([])
  })
})

const debug = (command: Command, env: Record<string, string> = {}): Command => ({
  ...command,
  args: [...command.args, '--log-level', 'debug'],
  env: { ...command.env, LOG_LEVEL: 'debug', ...env },
})

describe('browser: credentials a page carries', () => {
  it('never shows URL userinfo, a session cookie or a typed password in results, errors or debug logs', async () => {
    const site = await pages()
    const secrets = [BROWSER_COOKIE, BROWSER_PASSWORD, BASIC_PASSWORD, HTTP_BEARER]
    const withUserinfo = (path: string) =>
      `http://${BASIC_USER}:${encodeURIComponent(BASIC_PASSWORD)}@127.0.0.1:${site.port}${path}`
    const transcripts: string[] = []
    const checks: Record<string, boolean> = {}

    const peer = new StdioPeer(debug(browserCommand(site.url)))
    cleanups.push(() => peer.end())
    await peer.initialize()
    await peer.request('level', 'logging/setLevel', { level: 'debug' })

    // 1. URL userinfo: the page loads (Basic auth), the URL shown anywhere has no password.
    const privatePage = await call(peer, 'navigate', { url: withUserinfo('/private') })
    checks['userinfo navigation succeeds'] = !isToolError(privatePage)
    checks['page behind Basic auth shown'] = textOf(privatePage).includes('Private area')
    // Refused with userinfo (a blocked address): the error names the URL without the password.
    const refused = await call(peer, 'navigate', {
      url: `http://${BASIC_USER}:${encodeURIComponent(BASIC_PASSWORD)}@169.254.169.254/`,
    })
    checks['refused userinfo URL is an error'] = isToolError(refused)
    await call(peer, 'list_tabs')
    await call(peer, 'network_requests')

    // 2. A session cookie: set by one page, sent back to the next, never shown.
    await call(peer, 'navigate', { url: `${site.url}/sign-in` })
    const whoami = await call(peer, 'navigate', { url: `${site.url}/whoami` })
    checks['cookie sent back'] = textOf(whoami).includes('Session cookie present')
    await call(peer, 'network_requests')
    await call(peer, 'console_messages')

    // 3. A password typed into a password field: not echoed by the action or any snapshot.
    const login = await call(peer, 'navigate', { url: `${site.url}/login` })
    const password = refOf(textOf(login), /textbox "Password"/)
    const typed = await call(peer, 'type', { ref: password, text: BROWSER_PASSWORD })
    checks['typing succeeds'] = !isToolError(typed)
    await call(peer, 'type', { ref: refOf(textOf(login), /textbox "User"/), text: 'someone' })
    const after = await call(peer, 'snapshot')
    checks['snapshot still shows the user field'] = textOf(after).includes('someone')
    await call(peer, 'snapshot', { ref: password })
    await call(peer, 'fill_form', { fields: [{ ref: password, value: BROWSER_PASSWORD }] })
    await call(peer, 'take_screenshot')
    await call(peer, 'list_tabs')
    await peer.end()
    transcripts.push(peer.stdout, peer.stderr)
    expect(peer.impure).toEqual([])

    // The same over HTTP with a bearer, debug logs on stderr.
    const http = await HttpPeer.start(debug(browserCommand(site.url), { MCP_AUTH_TOKEN: HTTP_BEARER }))
    cleanups.push(() => http.close())
    const authorization = { authorization: `Bearer ${HTTP_BEARER}` }
    await http.initialize(authorization)
    let id = 0
    const post = async (name: string, args: Record<string, unknown>) => {
      const answer = await http.post(
        JSON.stringify({ jsonrpc: '2.0', id: ++id, method: 'tools/call', params: { name, arguments: args } }),
        { headers: authorization },
      )
      transcripts.push(answer.raw)
      return answer.answers[0] as Answer
    }
    await post('navigate', { url: withUserinfo('/private') })
    await post('navigate', { url: `${site.url}/sign-in` })
    const httpLogin = await post('navigate', { url: `${site.url}/login` })
    const httpPassword = refOf(textOf(httpLogin), /textbox "Password"/)
    await post('type', { ref: httpPassword, text: BROWSER_PASSWORD })
    await post('snapshot', {})
    await post('network_requests', {})
    await http.close()
    transcripts.push(http.stdout, http.stderr)

    const text = transcripts.join('\n')
    const leaks = findLeaks(text, secrets)
    record('secrets', {
      server: 'browser',
      case: 'page credentials',
      secrets: secrets.length,
      checks,
      bytesScanned: text.length,
      leaks: leaks.length,
    })
    expect(checks).toEqual({
      'userinfo navigation succeeds': true,
      'page behind Basic auth shown': true,
      'refused userinfo URL is an error': true,
      'cookie sent back': true,
      'typing succeeds': true,
      'snapshot still shows the user field': true,
    })
    expect(leaks).toEqual([])
  })
})
