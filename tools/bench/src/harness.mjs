// The measurements every server gets, ours and its reference side by side, alternated round by
// round in one run (this machine is shared and noisy: only figures taken in the same run compare):
//
//   cold start      spawn → initialize answered, and → tools/list answered
//   catalogue       tools/list: JSON bytes of the tools, ≈ tokens (bytes ÷ 4), per tool; and per
//                   tool as a model sees it (name, description and input schema only)
//   warm call       p50 / p99 of one cheap call, sequential, over a raw JSON-RPC client (the
//                   contenders take turns every 20 calls)
//   server CPU      utime + stime of the server (and its child processes) per warm call
//   8 in flight     calls/s, error rate and server CPU per call with 8 requests outstanding at all times
//   peak RSS        VmHWM after all of the above (summed over the process tree)
//   exit            stdin closed → process gone (killed after 5 s: "hangs"), idle (after the
//                   cold start) and after the warm calls (pools and clients open); child
//                   processes still running once the server is gone (a browser it left behind)
//                   are counted and killed
//
// Each figure is the median over rounds, with the spread (min–max over rounds) beside it. Cold
// starts take BENCH_COLD_ROUNDS rounds (11), the other figures BENCH_ROUNDS (5).
//
// Plugging in a server: give `compareServers` one contender per server (see `Contender`):
//
//   await compareServers('browser', [
//     { label: 'keel browser', command: process.execPath, args: [bin], call: { name: 'click', arguments: {} },
//       prepare: async (client) => ({ ref: refOf(await client.callTool('navigate', { url })) }) },
//     { label: 'reference puppeteer', command: process.execPath, args: [ref], call: {...}, reference: true },
//   ])
import { readFileSync } from 'node:fs'
import { median, processTree, quantile, RawClient, ratio, table } from './rpc.mjs'

/**
 * @typedef {object} Contender
 * @property {string} label            how the row is named ("keel fs", "reference 2026.8.31")
 * @property {string} command          what to spawn (usually process.execPath)
 * @property {string[]} args
 * @property {Record<string,string>} [env]
 * @property {{ name: string, arguments: object }} call   the cheap call measured warm
 * @property {boolean} [reference]     the row the ratios are taken against (default: the last contender)
 * @property {(client: RawClient) => Promise<object | undefined>} [prepare]
 *   run once on each long-lived process after `initialize`, before the warm-up (load a page, open a
 *   connection); when it returns an object, that object is the call's arguments for this process
 */

export const defaults = {
  rounds: Number(process.env.BENCH_ROUNDS ?? 5),
  // A cold start costs a fraction of a second and varies most with the machine's load: more rounds.
  coldRounds: Number(process.env.BENCH_COLD_ROUNDS ?? 11),
  calls: Number(process.env.BENCH_CALLS ?? 300),
  inflight: 8,
  inflightCalls: Number(process.env.BENCH_INFLIGHT_CALLS ?? 400),
  warmup: 100,
  slice: 20,
}

/** Every comparison of this run, for the summary at the top of the results file. */
export const summary = []

const ms = (value) =>
  value === undefined ? 'n/a' : `${value.toFixed(value < 1 ? 3 : value < 10 ? 2 : 0)} ms`
const spread = (values, format) =>
  values.length > 1 ? `${format(Math.min(...values))}–${format(Math.max(...values))}` : ''
const withSpread = (values, format) => {
  const range = spread(values, format)
  return range ? `${format(median(values))} (${range})` : format(median(values))
}

function failed(message) {
  return message.error !== undefined || message.result?.isError === true
}

function describe(message) {
  return JSON.stringify(message.error ?? message.result?.content ?? message).slice(0, 300)
}

function running(pid) {
  try {
    // Field 3 of /proc/<pid>/stat is the state; a zombie has ended and waits to be reaped.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z'
  } catch {
    return false
  }
}

/**
 * Closes stdin and times the exit (see RawClient.closeTimed); whatever the server started and left
 * running once it is gone (a browser) is killed and counted in `orphans`.
 */
async function closeTree(client, deadlineMs) {
  const children = processTree(client.pid).slice(1)
  const exitMs = await client.closeTimed(deadlineMs)
  if (!children.length) return { exitMs, orphans: 0 }
  await new Promise((resolve) => setTimeout(resolve, 200))
  const left = children.filter(running)
  for (const pid of left) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // already gone
    }
  }
  return { exitMs, orphans: left.length }
}

/** One cold start: spawn → initialize → tools/list, then stdin closed → exit. */
async function coldRound(contender) {
  const started = performance.now()
  const client = new RawClient(contender.command, contender.args, { env: contender.env, era: contender.era })
  try {
    await client.initialize()
    const initialized = performance.now() - started
    const list = await client.request('tools/list')
    const listed = performance.now() - started
    const { exitMs } = await closeTree(client, 5000)
    return { initialized, listed, exitMs, list }
  } catch (error) {
    await client.close()
    throw error
  }
}

async function sequential(client, call, count) {
  const samples = []
  for (let index = 0; index < count; index++) {
    const { message, ms: took } = await client.callTool(call.name, call.arguments)
    if (failed(message)) throw new Error(`${call.name} failed: ${describe(message)}`)
    samples.push(took)
  }
  return samples
}

/**
 * `total` calls with `inflight` outstanding at all times: calls/s and the share that failed.
 * `call` is one call, or a function from the worker's index (0 to inflight - 1) to its call.
 */
export async function concurrent(client, call, total, inflight) {
  let next = 0
  let errors = 0
  const started = performance.now()
  const worker = async (_, index) => {
    const { name, arguments: args } = typeof call === 'function' ? call(index) : call
    while (next < total) {
      next++
      try {
        const { message } = await client.callTool(name, args, 60_000)
        if (failed(message)) errors++
      } catch {
        errors++
      }
    }
  }
  await Promise.all(Array.from({ length: inflight }, worker))
  const seconds = (performance.now() - started) / 1000
  return { perSecond: total / seconds, errorRate: errors / total }
}

/** Calls/s with `inflight` calls outstanding at all times; any failed call fails the run (`what` names it). */
export async function callsPerSecond(client, call, total, inflight, what) {
  const { perSecond, errorRate } = await concurrent(client, call, total, inflight)
  if (errorRate > 0) throw new Error(`${what}: ${Math.round(errorRate * total)} of ${total} calls failed`)
  return perSecond
}

/**
 * `BENCH_FAST_PATH_AB=1`: every Keel contender (label "keel …") runs a second time with core's
 * stdio fast path off (`KEEL_FAST_PATH=0`), added after the given ones so a suite's own indices
 * stay as they are; the reference stays the one the suite chose.
 */
function withFastPathOff(contenders) {
  // A suite that runs its own A/B (core) is left as it is.
  if (process.env.BENCH_FAST_PATH_AB !== '1' || contenders.some((contender) => contender.env?.KEEL_FAST_PATH))
    return contenders
  const marked = contenders.some((contender) => contender.reference)
  const given = marked
    ? contenders
    : contenders.map((contender, index) =>
        index === contenders.length - 1 ? { ...contender, reference: true } : contender,
      )
  const off = given
    .filter((contender) => contender.label.startsWith('keel ') && !contender.env?.KEEL_FAST_PATH)
    .map((contender) => ({
      ...contender,
      label: `${contender.label}, fast path off`,
      env: { ...contender.env, KEEL_FAST_PATH: '0' },
      reference: false,
    }))
  return [...given, ...off]
}

/**
 * Measures each contender with the figures above, alternating between them in every round, and
 * prints one Markdown table (contenders as columns, plus ratios against the reference).
 * Returns the medians per contender.
 */
export async function compareServers(title, given, options = {}) {
  const { rounds, coldRounds, calls, inflight, inflightCalls, warmup, slice } = { ...defaults, ...options }
  const contenders = withFastPathOff(given)
  const reference = contenders.find((contender) => contender.reference) ?? contenders.at(-1)
  const data = contenders.map(() => ({
    initialized: [],
    listed: [],
    exit: [],
    hangs: 0,
    p50: [],
    p99: [],
    cpu: [],
    rate: [],
    cpuInflight: [],
    errors: [],
    peakKiB: 0,
    exitAfterCalls: [],
    hangsAfterCalls: 0,
    orphans: 0,
    catalogue: undefined,
  }))

  // Cold starts and exits, alternated. One unmeasured start first fills caches (V8 code cache, disk).
  for (const contender of contenders) await coldRound(contender)
  for (let round = 0; round < coldRounds; round++) {
    for (const [index, contender] of contenders.entries()) {
      const { initialized, listed, exitMs, list } = await coldRound(contender)
      const entry = data[index]
      entry.initialized.push(initialized)
      entry.listed.push(listed)
      if (exitMs === undefined) entry.hangs++
      else entry.exit.push(exitMs)
      if (!entry.catalogue) {
        const tools = list.message.result.tools
        const bytes = Buffer.byteLength(JSON.stringify(tools))
        // What a host hands the model of each tool: its name, description and input schema (the
        // function-calling formats of the model APIs). The output schema, title, annotations and
        // execution are for the client.
        const modelBytes = Buffer.byteLength(
          JSON.stringify(
            tools.map((tool) => ({
              name: tool.name,
              description: tool.description,
              input_schema: tool.inputSchema,
            })),
          ),
        )
        entry.catalogue = { tools: tools.length, bytes, tokens: bytes / 4, modelTokens: modelBytes / 4 }
      }
    }
  }

  // Warm calls. Each round starts a fresh process per contender (a process's own JIT and heap
  // history varies from one start to the next; a median over processes takes that out), warms it
  // up, and then the contenders take turns in slices of `slice` calls, the order reversed every
  // other turn, so a burst of load from elsewhere lands on all of them alike.
  for (let round = 0; round < rounds; round++) {
    const clients = []
    const measured = []
    try {
      for (const contender of contenders) {
        const client = new RawClient(contender.command, contender.args, {
          env: contender.env,
          era: contender.era,
        })
        clients.push(client)
        await client.initialize()
        const prepared = await contender.prepare?.(client)
        const call = prepared ? { name: contender.call.name, arguments: prepared } : contender.call
        measured.push(call)
        await sequential(client, call, warmup)
      }
      const samples = contenders.map(() => [])
      const cpu = contenders.map(() => 0)
      for (let done = 0, turn = 0; done < calls; done += slice, turn++) {
        const count = Math.min(slice, calls - done)
        const order = [...contenders.keys()]
        if (turn % 2 === 1) order.reverse()
        for (const index of order) {
          const client = clients[index]
          const cpuBefore = client.cpuMs()
          samples[index].push(...(await sequential(client, measured[index], count)))
          cpu[index] += client.cpuMs() - cpuBefore
        }
      }
      for (const index of contenders.keys()) {
        data[index].cpu.push(cpu[index] / calls)
        data[index].p50.push(quantile(samples[index], 0.5))
        data[index].p99.push(quantile(samples[index], 0.99))
      }
      // 8 in flight, one contender after the other: the first of a round meets what the slices left
      // behind (a burst of background work, a pool still opening its connections elsewhere), so
      // the order is reversed every other round, as the slices' is every other turn.
      const inflightOrder = [...contenders.keys()]
      if (round % 2 === 1) inflightOrder.reverse()
      for (const index of inflightOrder) {
        const cpuBefore = clients[index].cpuMs()
        const { perSecond, errorRate } = await concurrent(
          clients[index],
          measured[index],
          inflightCalls,
          inflight,
        )
        data[index].cpuInflight.push((clients[index].cpuMs() - cpuBefore) / inflightCalls)
        data[index].rate.push(perSecond)
        data[index].errors.push(errorRate)
      }
      for (const [index, client] of clients.entries()) {
        data[index].peakKiB = Math.max(data[index].peakKiB, client.treePeakRssKiB())
      }
      // Exit once the server has done work (pools, clients and timers opened by calls): what a
      // user's client meets when it quits. One at a time, so neither waits for CPU behind the other.
      for (const [index, client] of clients.entries()) {
        const { exitMs, orphans } = await closeTree(client, 5000)
        if (exitMs === undefined) data[index].hangsAfterCalls++
        else data[index].exitAfterCalls.push(exitMs)
        data[index].orphans = Math.max(data[index].orphans, orphans)
      }
    } finally {
      await Promise.all(clients.map((client) => closeTree(client, 3000)))
    }
  }

  const refIndex = contenders.indexOf(reference)
  const ratioOf = (pick, index, lowerIsBetter = true) => {
    const mine = pick(data[index])
    const theirs = pick(data[refIndex])
    if (!mine || !theirs || index === refIndex) return ''
    return `${(mine / theirs).toFixed(2)}×${lowerIsBetter ? '' : ' (higher is better)'}`
  }
  const figures = [
    [
      `cold start → initialize (${coldRounds} starts)`,
      (entry) => withSpread(entry.initialized, ms),
      (entry) => median(entry.initialized),
    ],
    ['cold start → tools/list', (entry) => withSpread(entry.listed, ms), (entry) => median(entry.listed)],
    [
      'catalogue (tools/list)',
      ({ catalogue: c }) =>
        `${c.tools} tools, ${(c.bytes / 1024).toFixed(1)} KiB ≈ ${Math.round(c.tokens).toLocaleString('en')} tokens`,
      (entry) => entry.catalogue.tokens,
    ],
    [
      '  ≈ tokens a tool',
      ({ catalogue: c }) => String(Math.round(c.tokens / c.tools)),
      (entry) => entry.catalogue.tokens / entry.catalogue.tools,
    ],
    [
      '  ≈ tokens a tool, as a model sees it',
      ({ catalogue: c }) => String(Math.round(c.modelTokens / c.tools)),
      (entry) => entry.catalogue.modelTokens / entry.catalogue.tools,
    ],
    [
      `warm call p50 (${calls} calls × ${rounds})`,
      (entry) => withSpread(entry.p50, ms),
      (entry) => median(entry.p50),
    ],
    ['warm call p99', (entry) => withSpread(entry.p99, ms), (entry) => median(entry.p99)],
    ['server CPU per call', (entry) => withSpread(entry.cpu, ms), (entry) => median(entry.cpu)],
    [
      `${inflight} in flight: calls/s`,
      (entry) => withSpread(entry.rate, (value) => value.toFixed(0)),
      (entry) => median(entry.rate),
      false,
    ],
    [
      `${inflight} in flight: server CPU per call`,
      (entry) => withSpread(entry.cpuInflight, ms),
      (entry) => median(entry.cpuInflight),
    ],
    [
      `${inflight} in flight: errors`,
      (entry) => `${(100 * Math.max(...entry.errors)).toFixed(1)} %`,
      () => undefined,
    ],
    [
      'peak RSS (process tree)',
      (entry) => `${(entry.peakKiB / 1024).toFixed(0)} MiB`,
      (entry) => entry.peakKiB,
    ],
    [
      'exit after stdin close, idle',
      (entry) =>
        entry.hangs === coldRounds
          ? 'hangs (killed after 5 s)'
          : `${withSpread(entry.exit, ms)}${entry.hangs ? `, ${entry.hangs}/${coldRounds} hang` : ''}`,
      (entry) => (entry.hangs ? undefined : median(entry.exit)),
    ],
    [
      '  after warm calls',
      (entry) =>
        `${
          entry.hangsAfterCalls === rounds
            ? 'hangs (killed after 5 s)'
            : `${withSpread(entry.exitAfterCalls, ms)}${entry.hangsAfterCalls ? `, ${entry.hangsAfterCalls}/${rounds} hang` : ''}`
        }${entry.orphans ? `, left ${entry.orphans} child processes running` : ''}`,
      (entry) => (entry.hangsAfterCalls ? undefined : median(entry.exitAfterCalls)),
    ],
  ]
  const others = contenders
    .map((contender, index) => [contender, index])
    .filter(([, index]) => index !== refIndex)
  console.log(
    `\n#### ${title}: per-server figures (median of ${rounds} alternated rounds, spread in brackets)\n`,
  )
  console.log(
    `Warm call: ${contenders.map((contender) => `${contender.label} \`${contender.call.name}\``).join(', ')}.\n`,
  )
  table(
    [
      'measure',
      ...contenders.map((contender) => contender.label),
      ...others.map(([contender]) => `${contender.label} ÷ ${reference.label}`),
    ],
    figures.map(([name, show, pick, lowerIsBetter = true]) => [
      name,
      ...data.map((entry) => show(entry)),
      ...others.map(([, index]) => ratioOf(pick, index, lowerIsBetter)),
    ]),
  )
  const result = contenders.map((contender, index) => ({
    label: contender.label,
    call: contender.call.name,
    listed: median(data[index].listed),
    tools: data[index].catalogue.tools,
    tokensPerTool: data[index].catalogue.tokens / data[index].catalogue.tools,
    p50: median(data[index].p50),
    p99: median(data[index].p99),
    cpu: median(data[index].cpu),
    rate: median(data[index].rate),
    cpuInflight: median(data[index].cpuInflight),
    errorRate: Math.max(...data[index].errors),
    peakMiB: data[index].peakKiB / 1024,
    exit: data[index].hangsAfterCalls ? undefined : median(data[index].exitAfterCalls),
    orphans: data[index].orphans,
  }))
  summary.push({ title, reference: reference.label, rows: result })
  return result
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * A call after `idleMs` of silence (past the idle timeouts of the servers' connections to their
 * backends, as a model that thinks between calls leaves them) against one after 1 s, on the same
 * process: `warm` calls first. Each contender is `{ label, command, args, env, call }`, `call` a tool
 * call or a function from a running count to one (a new text each time); the last is the
 * reference. `rounds` processes each, alternated. Prints the table under `title`.
 */
export async function afterPause(title, contenders, { idleMs = 12_000, warm = 30, rounds = 3 } = {}) {
  const samples = contenders.map(() => ({ paused: [], idle: [] }))
  let count = 0
  const timed = async (client, call) => {
    const { name, arguments: args } = typeof call === 'function' ? call(count++) : call
    const { message, ms } = await client.callTool(name, args)
    if (!message.result || message.result.isError) {
      throw new Error(`${title}: ${JSON.stringify(message).slice(0, 500)}`)
    }
    return ms
  }
  for (let round = 0; round < rounds; round++) {
    const order = [...contenders.keys()]
    if (round % 2 === 1) order.reverse()
    for (const index of order) {
      const { command, args, env, call } = contenders[index]
      const client = new RawClient(command, args, { env })
      try {
        await client.initialize()
        await client.request('tools/list')
        for (let done = 0; done < warm; done++) await timed(client, call)
        await sleep(1000)
        samples[index].paused.push(await timed(client, call))
        await sleep(idleMs)
        samples[index].idle.push(await timed(client, call))
      } finally {
        await client.close()
      }
    }
  }
  const referenceIdle = median(samples[samples.length - 1].idle)
  const fine = (value) => `${value.toFixed(value < 10 ? 2 : 0)} ms`
  const seconds = `${idleMs / 1000} s`
  console.log(`\n#### ${title}\n`)
  table(
    ['', 'after 1 s', `after ${seconds}`, `${seconds} ÷ 1 s`, `after ${seconds} ÷ reference`],
    contenders.map(({ label }, index) => {
      const paused = median(samples[index].paused)
      const idle = median(samples[index].idle)
      return [label, fine(paused), fine(idle), ratio(idle, paused), ratio(idle, referenceIdle)]
    }),
  )
}

/**
 * {@link afterPause} against an API fake served over TLS, as the real API is reached: a call that
 * finds no kept connection first connects and negotiates TLS. The certificate is made for the run
 * and trusted by the contenders through NODE_EXTRA_CA_CERTS. `startFake(tls)` starts the fake with
 * `{ key, cert }` and returns it (with `close()`); `contendersFor(fake, trusted)` gives
 * afterPause's contenders, `trusted` being the env to add to each.
 */
export async function afterPauseOverTls(title, startFake, contendersFor, options = {}) {
  const { selfSignedCertificate } = await import('@keel-mcp/core/testing')
  const tls = await selfSignedCertificate()
  let fake
  try {
    fake = await startFake({ key: tls.key, cert: tls.cert })
    await afterPause(title, contendersFor(fake, { NODE_EXTRA_CA_CERTS: tls.certFile }), options)
  } finally {
    await fake?.close()
    await tls.close()
  }
}
