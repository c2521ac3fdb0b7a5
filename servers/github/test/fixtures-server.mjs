// @octokit/fixtures-server's middleware on 127.0.0.1 only (its bin listens on every interface), on
// a port the system picks; prints `port <n>` once it listens. Run as a child process: the
// middleware intercepts HTTP with nock in its own process.
import { createRequire } from 'node:module'
import { pathToFileURL } from 'node:url'

const root = createRequire(import.meta.url)
  .resolve('@octokit/fixtures-server/package.json')
  .replace(/package\.json$/, '')
const load = async (path) => (await import(pathToFileURL(path).href)).default
const express = await load(createRequire(`${root}index.js`).resolve('express'))
const middleware = await load(`${root}index.js`)
const defaults = await load(`${root}lib/defaults.js`)

const app = express()
app.get('/ping', (_request, response) => response.json({ ok: true }))
const server = app.listen(0, '127.0.0.1', () => {
  const { port } = server.address()
  app.use(
    middleware({
      port,
      fixturesUrl: `http://127.0.0.1:${port}`,
      logLevel: 'error',
      ttl: defaults.ttl,
      fixtures: defaults.fixtures,
    }),
  )
  process.stdout.write(`port ${port}\n`)
})
