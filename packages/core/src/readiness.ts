import type { ServerResponse } from 'node:http'
import type { ServerSpec } from './define.js'

// `/readyz`: whether the server can do its work now, as opposed to `/healthz` (the process
// answers). Each check is one upstream the server depends on — the database, the browser, the
// API token, Redis — and gets five seconds; the answer names each check and what is wrong.

/** Resolves when the part is usable; rejects (or resolves to a message) when it is not. */
export type ReadinessCheck = () => Promise<unknown>

const CHECK_TIMEOUT_MS = 5000

/** The server's own check (`spec.ready`), named after the server; none when it has none. */
export function serverReadiness<D, C>(spec: ServerSpec<D, C>, deps: D): Record<string, ReadinessCheck> {
  return spec.ready ? { [spec.name]: async () => spec.ready?.(deps) } : {}
}

export async function runReadiness(
  checks: Record<string, ReadinessCheck>,
): Promise<{ ready: boolean; checks: Record<string, string> }> {
  const results: Record<string, string> = {}
  await Promise.all(
    Object.entries(checks).map(async ([name, check]) => {
      let timer: NodeJS.Timeout | undefined
      try {
        const outcome = await Promise.race([
          check(),
          new Promise((_, reject) => {
            timer = setTimeout(
              () => reject(new Error(`no answer within ${CHECK_TIMEOUT_MS / 1000} s`)),
              CHECK_TIMEOUT_MS,
            )
          }),
        ])
        results[name] = typeof outcome === 'string' && outcome ? outcome : 'ok'
      } catch (error) {
        results[name] = (error as Error)?.message || 'failed'
      } finally {
        clearTimeout(timer)
      }
    }),
  )
  return { ready: Object.values(results).every((value) => value === 'ok'), checks: results }
}

/** Answers `/readyz`: 200 when every check passed, 503 naming what failed. */
export async function answerReadiness(
  res: ServerResponse,
  checks: Record<string, ReadinessCheck>,
): Promise<void> {
  const { ready, checks: results } = await runReadiness(checks)
  const body = JSON.stringify({ status: ready ? 'ready' : 'not ready', checks: results })
  res.writeHead(ready ? 200 : 503, {
    'content-type': 'application/json',
    'cache-control': 'no-store',
    'content-length': Buffer.byteLength(body),
  })
  res.end(body)
}
