import { runProcess } from '@keel-mcp/core/testing'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { generate } from '../src/fuzz.js'
import { record } from '../src/report.js'
import { findLeaks, secretForms } from '../src/secrets.js'
import { HTTP_BEARER, SERVERS } from '../src/servers.js'
import { type Command, HttpPeer, killAll, StdioPeer } from '../src/wire.js'

const cleanups: Array<() => Promise<unknown>> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})
afterAll(() => {
  expect(killAll()).toBe(0)
})

describe('the leak scanner', () => {
  const token = 'ghp_keelfakeSECRET0t0k3n0000000000000001'
  it.each([
    ['as given', `auth ${token}`],
    ['URL-encoded', `u=${encodeURIComponent('p@ss/w0rd+keelfake-secret')}`],
    [
      'inside Basic base64',
      `Authorization: Basic ${Buffer.from(`x-access-token:${token}`).toString('base64')}`,
    ],
    ['base64url', Buffer.from(`a${token}`).toString('base64url')],
    ['partly', `token ${token.slice(0, 14)}…`],
  ])('finds a credential %s', (_how, text) => {
    const secret = text.includes('p%40ss') ? 'p@ss/w0rd+keelfake-secret' : token
    expect(findLeaks(text, [secret])).toHaveLength(1)
  })

  it('does not flag text without the credential', () => {
    expect(findLeaks('ghp_ [redacted] keelfake', [token])).toEqual([])
    expect(secretForms(token).every((form) => form.length >= 8)).toBe(true)
  })
})

const debug = (command: Command, env: Record<string, string> = {}): Command => ({
  ...command,
  args: [...command.args, '--log-level', 'debug'],
  env: { ...command.env, LOG_LEVEL: 'debug', MCP_TOOL_TIMEOUT_MS: '1500', ...env },
})

describe.each(SERVERS.map((entry) => [entry.name, entry] as const))(
  '%s with recognisable fake credentials',
  (name, entry) => {
    it('shows no credential byte in stdout, stderr, results or errors across its error paths', async () => {
      const prepared = await entry.prepare()
      cleanups.push(() => prepared.stop())
      const secrets = [...prepared.secrets, HTTP_BEARER]
      const transcripts: string[] = []
      const paths: string[] = []
      const drive = async (command: Command, label: string, work: (peer: StdioPeer) => Promise<void>) => {
        const peer = new StdioPeer(debug(command))
        try {
          await peer.initialize()
          // Log notifications at debug reach the client too: they are output like any other.
          await peer.request(`${label}-level`, 'logging/setLevel', { level: 'debug' })
          await work(peer)
        } finally {
          await peer.end()
          transcripts.push(peer.stdout, peer.stderr)
          expect(peer.impure).toEqual([])
        }
        paths.push(label)
      }
      let id = 0
      const callAll = async (
        peer: StdioPeer,
        calls: Array<{ name: string; arguments: Record<string, unknown> }>,
      ) => {
        for (const call of calls) await peer.request(`s${++id}`, 'tools/call', call, 60_000)
      }

      await drive(prepared.command, 'calls, error calls, unknown tool, bad input', async (peer) => {
        await callAll(peer, [...prepared.mixedCalls, ...prepared.errorCalls])
        await peer.request(`s${++id}`, 'tools/call', { name: 'no_such_tool', arguments: {} })
        for (const fuzzCase of generate({
          seed: 7,
          count: 300,
          cheapCall: prepared.cheapCall,
          maxGiantBytes: 70_000,
        }))
          await peer.send(fuzzCase.payload)
        await peer.request('after-fuzz', 'ping', undefined, 60_000)
      })
      if (prepared.badAuth) {
        const badAuth = prepared.badAuth
        await drive(badAuth, 'credential refused by the backend', (peer) =>
          callAll(peer, [prepared.cheapCall, ...prepared.mixedCalls]),
        )
      }
      const slow = { ...prepared.command, env: { ...prepared.command.env, ...prepared.slow.env } }
      await drive(slow, 'slow call against a 1.5 s tool timeout', (peer) =>
        callAll(peer, [prepared.slow.call]),
      )

      // HTTP with a bearer: refused with a wrong one, then served with the right one.
      const http = await HttpPeer.start(debug(prepared.command, { MCP_AUTH_TOKEN: HTTP_BEARER }))
      try {
        const refused = await http.post('{"jsonrpc":"2.0","id":1,"method":"ping"}', {
          session: false,
          headers: { authorization: `Bearer ${HTTP_BEARER}-wrong` },
        })
        expect(refused.status).toBe(401)
        transcripts.push(refused.raw)
        const authorization = { authorization: `Bearer ${HTTP_BEARER}` }
        await http.initialize(authorization)
        for (const call of [...prepared.errorCalls, { name: 'no_such_tool', arguments: {} }]) {
          const answer = await http.post(
            JSON.stringify({ jsonrpc: '2.0', id: ++id, method: 'tools/call', params: call }),
            {
              headers: authorization,
            },
          )
          transcripts.push(answer.raw)
        }
        paths.push('HTTP: wrong bearer, error calls')
      } finally {
        await http.close()
        transcripts.push(http.stdout, http.stderr)
      }

      // Bad configuration: the process refuses to start; its message must not echo the credentials.
      const badConfig = await runProcess(
        prepared.command.command,
        [...prepared.command.args, '--log-level', 'nonsense'],
        {
          env: prepared.command.env,
        },
      )
      expect(badConfig.code).not.toBe(0)
      transcripts.push(badConfig.stdout, badConfig.stderr)
      paths.push('bad configuration')

      const text = transcripts.join('\n')
      const leaks = findLeaks(text, secrets)
      record('secrets', {
        server: name,
        secrets: secrets.length,
        paths,
        bytesScanned: text.length,
        leaks: leaks.length,
      })
      expect(leaks).toEqual([])
    })
  },
)
