/**
 * Loopback pages for the browser server's entry: ordinary pages for the mixed calls, a page that
 * never finishes loading, and pages that carry credentials (a session cookie, a password field,
 * HTTP Basic auth) for the secrets suite.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

/** The session cookie `/sign-in` sets (HttpOnly: the page never shows it). */
export const BROWSER_COOKIE = 'keelfake-cookie-Q8mZ2vR7nW4xT1pL'
/** What the secrets suite types into the password field of `/login`. */
export const BROWSER_PASSWORD = 'keelfake-typed-Pw9!hJ3kS6dF'
/** The user and password `/private` asks for with HTTP Basic auth (sent as URL userinfo). */
export const BASIC_USER = 'keeluser'
export const BASIC_PASSWORD = 'keelfake-basic-Xc4Vb7Nm2Lq5'

export interface BrowserPages {
  url: string
  port: number
  close(): Promise<void>
}

const page = (title: string, body: string) =>
  `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title></head><body>${body}</body></html>`

const PAGES: Record<string, string> = {
  '/': page('Home', '<h1>Hardening home</h1><nav><a href="/counter">Counter</a></nav><p>Plain text.</p>'),
  '/counter': page(
    'Counter',
    `<h1>Counter</h1><p id="out">Count: 0</p><button id="inc" onclick="document.getElementById('out').textContent='Count: '+(++window.n)">Increment</button><script>window.n=0</script>`,
  ),
  '/console': page(
    'Console',
    `<h1>Console</h1><script>console.log('log line');console.warn('warn line');console.error('error line')</script>`,
  ),
  '/login': page(
    'Login',
    `<h1>Log in</h1><form action="/login-done" method="post" onsubmit="return false">
      <label>User <input name="user" type="text" autocomplete="off"></label>
      <label>Password <input name="password" type="password" autocomplete="off"></label>
      <button type="submit">Log in</button></form>`,
  ),
}

/** Starts the pages on 127.0.0.1. Also: `/slow` (never finishes), `/sign-in`, `/whoami`, `/private`. */
export async function startBrowserPages(): Promise<BrowserPages> {
  const hanging = new Set<ServerResponse>()
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const url = new URL(request.url ?? '/', 'http://pages')
    const html = (body: string, headers: Record<string, string> = {}, status = 200) => {
      response.writeHead(status, { 'content-type': 'text/html; charset=utf-8', ...headers })
      response.end(body)
    }
    if (url.pathname === '/slow') {
      // Headers and part of the page, then nothing: the load event never fires.
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
      response.write('<!doctype html><html><head><title>Slow</title></head><body><h1>Slow page</h1>')
      hanging.add(response)
      response.on('close', () => hanging.delete(response))
      return
    }
    if (url.pathname === '/sign-in')
      return html(page('Signed in', '<h1>Signed in</h1>'), {
        'set-cookie': `session=${BROWSER_COOKIE}; Path=/; HttpOnly; SameSite=Strict`,
      })
    if (url.pathname === '/whoami') {
      // Says whether the cookie came back, never its value.
      const has = (request.headers.cookie ?? '').includes(`session=${BROWSER_COOKIE}`)
      return html(page('Who am I', `<h1>${has ? 'Session cookie present' : 'No session'}</h1>`))
    }
    if (url.pathname === '/private') {
      const expected = `Basic ${Buffer.from(`${BASIC_USER}:${BASIC_PASSWORD}`).toString('base64')}`
      if (request.headers.authorization !== expected)
        return html(page('Denied', '<h1>Denied</h1>'), { 'www-authenticate': 'Basic realm="keel"' }, 401)
      return html(page('Private', '<h1>Private area</h1>'))
    }
    const body = PAGES[url.pathname]
    if (body) return html(body)
    html(page('Not found', '<h1>Not found</h1>'), {}, 404)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    async close() {
      for (const response of hanging) response.destroy()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
