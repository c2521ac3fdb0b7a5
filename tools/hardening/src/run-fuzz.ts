/**
 * Drives generated fuzz cases through a live server, over stdio (pipelined in chunks) or over
 * HTTP (concurrent POSTs in one session), and judges every answer.
 */
import { type Answer, checkAnswer, type FuzzCase } from './fuzz.js'
import { type HttpPeer, idKey, pool, rssOf, type StdioPeer } from './wire.js'

export interface FuzzReport {
  sent: number
  /** Failures, each naming its input; empty when the server behaved. */
  failures: string[]
  /** Answers per error code, for the report. */
  codes: Record<string, number>
  rssBefore: number
  rssAfter: number
  ms: number
}

const MAX_FAILURES = 25

function countCode(codes: Record<string, number>, answer: Answer | undefined) {
  const key = answer === undefined ? 'none' : answer.error ? String(answer.error.code) : 'result'
  codes[key] = (codes[key] ?? 0) + 1
}

/** Expected id key of a case's answer, or undefined when it must have none or answers with id null. */
function answerKey(fuzzCase: FuzzCase): string | undefined {
  const { expected } = fuzzCase
  if (expected.kind === 'answer' || expected.kind === 'tool error') return idKey(expected.id)
  if (expected.kind === 'error' && expected.id !== null) return idKey(expected.id)
  return undefined
}

/** Ids a case carries that must never be answered (silent cases with an id: client responses). */
function silentKey(fuzzCase: FuzzCase): string | undefined {
  if (fuzzCase.expected.kind !== 'silent') return undefined
  try {
    const parsed = JSON.parse(fuzzCase.payload) as { id?: unknown }
    return 'id' in parsed ? idKey(parsed.id) : undefined
  } catch {
    return undefined
  }
}

/**
 * Over stdio: writes `chunk` cases at a time without waiting, then a sentinel ping, and waits for
 * the sentinel and every answer the chunk must get. Answers with `id: null` come from the framing
 * layer, in input order: the k-th such answer belongs to the k-th case that expects one.
 */
export async function fuzzStdio(
  peer: StdioPeer,
  cases: FuzzCase[],
  seed: number,
  { chunk = 250, answerWaitMs = 10_000 } = {},
): Promise<FuzzReport> {
  const started = performance.now()
  const rssBefore = rssOf(peer.pid)
  const failures: string[] = []
  const codes: Record<string, number> = {}
  const nullExpected: FuzzCase[] = []
  for (let offset = 0; offset < cases.length && failures.length < MAX_FAILURES; offset += chunk) {
    const slice = cases.slice(offset, offset + chunk)
    for (const fuzzCase of slice) {
      await peer.send(fuzzCase.payload)
      if (fuzzCase.expected.kind === 'error' && fuzzCase.expected.id === null) nullExpected.push(fuzzCase)
    }
    const sentinel = `sentinel-${offset}`
    await peer.request(sentinel, 'ping', undefined, 60_000)
    // Slower handlers (a tool call) may answer after the sentinel: wait for the missing ones
    // together, with one deadline, so a server that never answers costs seconds, not hours.
    const missing = slice
      .map((fuzzCase) => answerKey(fuzzCase))
      .filter((key): key is string => key !== undefined && !peer.answers.has(key))
    await Promise.all(
      missing.map((key) =>
        peer.waitFor(JSON.parse(key) as string | number, answerWaitMs).catch(() => undefined),
      ),
    )
    for (const fuzzCase of slice) {
      const key = answerKey(fuzzCase)
      if (key === undefined) continue
      const answer = peer.answers.get(key)?.[0]
      const failure = checkAnswer(fuzzCase, answer, seed)
      countCode(codes, answer)
      if (failure) failures.push(failure)
      if ((peer.answers.get(key)?.length ?? 0) > 1)
        failures.push(`seed ${seed} case #${fuzzCase.index}: answered ${peer.answers.get(key)?.length} times`)
    }
  }
  for (const fuzzCase of cases) {
    const key = silentKey(fuzzCase)
    if (key !== undefined && peer.answers.has(key))
      failures.push(
        checkAnswer(fuzzCase, peer.answers.get(key)?.[0], seed) ?? `case #${fuzzCase.index} answered`,
      )
  }
  nullExpected.forEach((fuzzCase, index) => {
    const answer = peer.nullAnswers[index]
    countCode(codes, answer)
    const failure = checkAnswer(fuzzCase, answer, seed)
    if (failure && failures.length < MAX_FAILURES * 2) failures.push(failure)
  })
  if (peer.nullAnswers.length > nullExpected.length)
    failures.push(
      `seed ${seed}: ${peer.nullAnswers.length - nullExpected.length} unexpected answers with id null, e.g. ${JSON.stringify(peer.nullAnswers[nullExpected.length]).slice(0, 300)}`,
    )
  return {
    sent: cases.length,
    failures,
    codes,
    rssBefore,
    rssAfter: rssOf(peer.pid),
    ms: performance.now() - started,
  }
}

/** Over HTTP: every case is one POST in one session, `concurrency` in flight. */
export async function fuzzHttp(
  peer: HttpPeer,
  cases: FuzzCase[],
  seed: number,
  { concurrency = 8, answerWaitMs = 10_000 } = {},
): Promise<FuzzReport> {
  const started = performance.now()
  const rssBefore = rssOf(peer.pid)
  const failures: string[] = []
  const codes: Record<string, number> = {}
  await pool(cases, concurrency, async (fuzzCase) => {
    if (failures.length >= MAX_FAILURES) return
    let answers: Answer[]
    let status: number
    try {
      ;({ answers, status } = await peer.post(fuzzCase.payload, {
        signal: AbortSignal.timeout(answerWaitMs),
      }))
    } catch (error) {
      const timedOut = (error as Error).name === 'TimeoutError'
      failures.push(
        `seed ${seed} case #${fuzzCase.index} (${fuzzCase.category}): ${timedOut ? `no answer within ${answerWaitMs} ms` : `the POST failed: ${String(error)}`}: ${fuzzCase.payload.slice(0, 300)}`,
      )
      return
    }
    if (answers.length > 1) {
      failures.push(`seed ${seed} case #${fuzzCase.index}: ${answers.length} answers to one message`)
      return
    }
    const answer = answers[0]
    countCode(codes, answer)
    const failure = checkAnswer(fuzzCase, answer, seed)
    if (failure) failures.push(`${failure} (HTTP ${status})`)
    else if (answer?.error && status >= 500)
      failures.push(`seed ${seed} case #${fuzzCase.index}: HTTP ${status}`)
  })
  return {
    sent: cases.length,
    failures,
    codes,
    rssBefore,
    rssAfter: rssOf(peer.pid),
    ms: performance.now() - started,
  }
}
