import { connectHttp } from '@keel-mcp/core/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { startNginx, startReplicas, stopAll } from '../src/harness.js'

// 2026-07-28 requests need no session, but a multi-round call carries signed requestState from one
// round to the next: behind a round-robin balancer each retry lands on another replica, which must
// be able to verify what the previous one signed.

afterEach(stopAll)

const SECRET = 'a-state-secret-shared-by-every-replica-0123456789'

function answers() {
  const asked: string[] = []
  return {
    asked,
    onElicit: (params: Record<string, any>) => {
      asked.push(params.message)
      return params.message === 'Your name?'
        ? { action: 'accept', content: { name: 'Ada' } }
        : { action: 'accept', content: { colour: 'teal' } }
    },
  }
}

describe('--state-secret across replicas (2026-07-28 input_required rounds)', () => {
  it('completes a two-question call whose rounds land on different replicas when they share the secret', async () => {
    const replicas = await startReplicas(2, { stateSecret: SECRET })
    const nginx = await startNginx(replicas.map((replica) => replica.port))
    const { asked, onElicit } = answers()
    const connection = await connectHttp(nginx.url, { era: 'modern', onElicit })
    try {
      const before = (await nginx.accessLog()).split('\n').length
      const result = await connection.client.callTool({ name: 'ask_name' })
      expect(result.isError).toBeFalsy()
      expect(result.content[0].text).toMatch(/^Ada likes teal \(asked by \d+\)$/)
      expect(asked).toEqual(['Your name?', 'Your colour?'])
      // The three rounds of the call were served by both replicas.
      const rounds = (await nginx.accessLog())
        .split('\n')
        .slice(before - 1)
        .filter(Boolean)
      const upstreams = new Set(rounds.map((line) => line.split(' ')[2]))
      expect(rounds.length).toBeGreaterThanOrEqual(3)
      expect(upstreams.size).toBe(2)
    } finally {
      await connection.close()
    }
  })

  it('refuses the retry on another replica when each replica has its own random key', async () => {
    const replicas = await startReplicas(2)
    const nginx = await startNginx(replicas.map((replica) => replica.port))
    const { onElicit } = answers()
    const connection = await connectHttp(nginx.url, { era: 'modern', onElicit })
    try {
      await expect(connection.client.callTool({ name: 'ask_name' })).rejects.toThrow(/requestState|state/i)
    } finally {
      await connection.close()
    }
  })

  it('reads the secret from --state-secret-file on every replica', async () => {
    const { mkdtemp, writeFile } = await import('node:fs/promises')
    const { tmpdir } = await import('node:os')
    const { join } = await import('node:path')
    const file = join(await mkdtemp(join(tmpdir(), 'keel-secret-')), 'state-secret')
    await writeFile(file, `${SECRET}\n`, { mode: 0o600 })
    const replicas = await startReplicas(2, { args: ['--state-secret-file', file] })
    const nginx = await startNginx(replicas.map((replica) => replica.port))
    const { onElicit } = answers()
    const connection = await connectHttp(nginx.url, { era: 'modern', onElicit })
    try {
      const result = await connection.client.callTool({ name: 'ask_name' })
      expect(result.content[0].text).toMatch(/^Ada likes teal/)
      for (const replica of replicas) expect(replica.stderr()).not.toContain(SECRET)
    } finally {
      await connection.close()
    }
  })
})
