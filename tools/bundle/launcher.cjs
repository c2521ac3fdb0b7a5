'use strict'
// The bin of a Keel server: runs the bundled server (./server.js) with a V8 code cache.
//
// Why: compiling the ~0.9 MB bundle is a large share of every start, and clients start servers
// often. The first run compiles normally and, on exit, stores V8's code cache in a per-user cache
// directory; later runs skip most of the compilation. The cache is keyed by the bundle's content
// hash (computed when it was built), its size and modification time, and the V8 version; V8
// itself rejects a cache that does not match, and any problem falls back to a plain require().
// Every version of every server gets files of its own, so a process that writes a new cache also
// removes the files of caches no start has used for RETAIN_DAYS (a start that uses a cache marks
// it used, at most once a day). KEEL_COMPILE_CACHE=0 turns it off; KEEL_COMPILE_CACHE_DIR moves it.
const fs = require('node:fs')
const path = require('node:path')

const bundle = path.join(__dirname, 'server.js')
// The bundle's dynamic imports (lazy dependencies) go through this: see tools/bundle/bundle.mjs.
globalThis.__keelImport = (specifier) => import(specifier)

function cacheDirectory() {
  if (process.env.KEEL_COMPILE_CACHE === '0') return undefined
  if (process.env.KEEL_COMPILE_CACHE_DIR) return process.env.KEEL_COMPILE_CACHE_DIR
  const os = require('node:os')
  const base =
    process.platform === 'win32'
      ? process.env.LOCALAPPDATA || path.join(os.homedir(), 'AppData', 'Local')
      : process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache')
  return path.join(base, 'keel-mcp', 'v8')
}

/**
 * The cache directory when it is usable (made if missing, private), else undefined; checked once
 * per process (the handshake replay and the code cache both ask).
 */
let usable
function usableCacheDirectory() {
  if (usable === undefined) {
    const directory = cacheDirectory()
    usable = directory && privateDirectory(directory) ? directory : null
  }
  return usable ?? undefined
}

// Only a directory that this user owns and no one else can write to may feed code to V8.
function privateDirectory(directory) {
  try {
    fs.mkdirSync(directory, { recursive: true, mode: 0o700 })
    const stat = fs.statSync(directory)
    if (process.platform === 'win32') return stat.isDirectory()
    return stat.isDirectory() && stat.uid === process.getuid() && (stat.mode & 0o022) === 0
  } catch {
    return false
  }
}

// V8 rejects a code cache made under other V8 flags than the running ones. Core's run() sets the
// old generation's growing factor (packages/core/src/heap.ts: --heap-growing-percent=50, unless
// node was given one) once the server starts, after the bundle was compiled: the cache written at
// exit would then carry that flag and be rejected at every next start. So the launcher sets the
// same flag first, and the cache is made and used under the same flags. (The example server's
// tests start its bin twice and require a cache hit.) The same holds for the V8 flags the
// server's package.json asks for (`keel.v8Flags`), written in by the bundler. A flag of the same
// name that node was started with wins, in either polarity (`node --wasm-tier-up …` for
// `--no-wasm-tier-up`).
const HEAP_GROWING_PERCENT = 50
const V8_FLAGS = [] /* __KEEL_V8_FLAGS__ */
const flagName = (flag) =>
  flag
    .replace(/^--(no-)?/, '')
    .replace(/=.*$/, '')
    .replace(/_/g, '-')
for (const flag of [`--heap-growing-percent=${HEAP_GROWING_PERCENT}`, ...V8_FLAGS]) {
  if (process.execArgv.some((argument) => flagName(argument) === flagName(flag))) continue
  try {
    require('node:v8').setFlagsFromString(flag)
  } catch {}
}

// The SHA-256 of server.js, written in by the bundler (tools/bundle/bundle.mjs) when it builds
// this file. With it the launcher needs no node:crypto, which takes about 3 ms to load, at start.
const BUNDLE_SHA256 = '__KEEL_BUNDLE_SHA256__'

/** 32-bit FNV-1a of a short string, in hex. */
function fnv1a(text) {
  let hash = 0x811c9dc5
  for (let index = 0; index < text.length; index++)
    hash = Math.imul(hash ^ text.charCodeAt(index), 0x01000193)
  return (hash >>> 0).toString(16).padStart(8, '0')
}

/**
 * The cache key: the bundle's content hash, V8's version, the architecture, and server.js's size
 * and modification time (a bundle edited after the build gets a key of its own). A launcher that
 * was not given the hash at build time hashes the source itself.
 */
function cacheKey(source) {
  const runtime = `${process.versions.v8}|${process.arch}`
  if (!/^[0-9a-f]{64}$/.test(BUNDLE_SHA256)) {
    return require('node:crypto')
      .createHash('sha256')
      .update(runtime)
      .update(source)
      .digest('hex')
      .slice(0, 32)
  }
  const stat = fs.statSync(bundle)
  const variant = `${runtime}|${stat.size}|${stat.mtimeMs}|${source.length}`
  return `${BUNDLE_SHA256.slice(0, 16)}${fnv1a(variant)}${fnv1a(`${variant}|${BUNDLE_SHA256}`)}`
}

const DAY_MS = 24 * 60 * 60 * 1000
const RETAIN_DAYS = 30

/**
 * The cache file's bytes, or undefined when there is none. A cache last marked used more than a
 * day ago is marked again (its modification time), so that pruning keeps the caches in use.
 */
function readCache(cacheFile) {
  let fd
  try {
    fd = fs.openSync(cacheFile, 'r')
  } catch {
    return undefined
  }
  try {
    const { size, mtimeMs } = fs.fstatSync(fd)
    const bytes = Buffer.allocUnsafe(size)
    let read = 0
    while (read < size) {
      const count = fs.readSync(fd, bytes, read, size - read, read)
      if (count === 0) break
      read += count
    }
    const now = Date.now()
    if (now - mtimeMs > DAY_MS) {
      try {
        fs.futimesSync(fd, now / 1000, now / 1000)
      } catch {}
    }
    return read === size ? bytes : bytes.subarray(0, read)
  } catch {
    return undefined
  } finally {
    fs.closeSync(fd)
  }
}

/**
 * Removes the files of every cache (its code cache, its thin mark, the tool schemas core keeps
 * beside it, all named after its key) that no start has used for RETAIN_DAYS, and temporary files
 * left by a process that died while writing. Run by a process that has just written a new cache:
 * once per version of a server, not at every start.
 */
function prune(directory, ownKey) {
  try {
    const now = Date.now()
    const names = fs.readdirSync(directory)
    const stale = new Set()
    const used = new Set([ownKey])
    const ageOf = (name) => {
      try {
        return now - fs.statSync(path.join(directory, name)).mtimeMs
      } catch {
        return 0
      }
    }
    for (const name of names) {
      const key = /^([0-9a-f]{32})\.bin$/.exec(name)?.[1]
      if (!key || key === ownKey) continue
      if (ageOf(name) > RETAIN_DAYS * DAY_MS) stale.add(key)
      else used.add(key)
    }
    for (const name of names) {
      const key = /^[0-9a-f]{32}/.exec(name)?.[0]
      if (!key) continue
      const temporary = name.endsWith('.tmp')
      // A file whose cache is stale, a temporary file a day old, and a file of no cache at all
      // (its code cache already removed) past the same age.
      const remove =
        stale.has(key) ||
        (temporary && ageOf(name) > DAY_MS) ||
        (!temporary && !used.has(key) && ageOf(name) > RETAIN_DAYS * DAY_MS)
      if (remove) fs.rmSync(path.join(directory, name), { force: true })
    }
  } catch {}
}

/** The stage of a process that answered a tool call: its cache is complete. */
const LAST_STAGE = 2

/** How long after reaching a further stage a process writes its cache (see `prepare`). */
const STAGE_WRITE_DELAY_MS = 50

/**
 * The stage a cache's writer had reached, from the thin mark beside it: none means a complete
 * cache; a mark that is empty (written before stages were kept) or unreadable counts as 0.
 */
function thinStage(thinFile) {
  // The common case, a complete cache, costs one stat and no exception.
  if (!fs.existsSync(thinFile)) return LAST_STAGE
  let text
  try {
    text = fs.readFileSync(thinFile, 'utf8')
  } catch {
    return 0
  }
  const stage = Number.parseInt(text, 10)
  return stage >= 0 && stage < LAST_STAGE ? stage : 0
}

/** Compiles the bundle with the code cache; returns a function that runs it, or undefined. */
function prepare() {
  const vm = require('node:vm')
  const directory = usableCacheDirectory()
  if (!directory) return undefined
  const Module = require('node:module')
  const source = fs.readFileSync(bundle, 'utf8')
  const key = cacheKey(source)
  const cacheFile = path.join(directory, `${key}.bin`)
  // Core keeps the server's tool schemas, as listed, next to the code (packages/core/src/schema-cache.ts).
  globalThis.__keelCache = { directory, key }
  // A cache holds the functions its writer had compiled when it wrote it. How far that process got
  // is its stage (core raises __keelCache.stage: 1 once it has answered `tools/list`, 2 once it has
  // answered a tool call); a cache below the last stage is marked thin by a file beside it that
  // holds its stage. A later start that gets further replaces it, once for each stage: a cache
  // written by a start that answered nothing (a first run stopped by hand, a client that gave up)
  // lacks the handshake and `tools/list`, and every start after it compiled them again (+5 ms, 7 %,
  // for the Slack bin); one written by a start that only listed tools lacks the call path, which
  // every later start compiled on its first call.
  const thinFile = `${cacheFile}.thin`
  const cachedData = readCache(cacheFile)
  const script = new vm.Script(Module.wrap(source), { filename: bundle, cachedData })
  // --help and --version compile little of the server: a cache from them would be a poor one.
  const serving = !process.argv.some((argument) => argument === '--help' || argument === '--version')
  const fresh = cachedData === undefined || script.cachedDataRejected
  const held = fresh ? -1 : thinStage(thinFile)
  if (serving && held < LAST_STAGE) {
    // The stage of the cache on disk as this process knows it: the one it started from, then its own.
    let written = held
    let wrote = false
    const write = (reached) => {
      if (reached <= written) return
      // Another process may have replaced the cache since this one read it (or wrote it): never
      // with less. A process that found no usable cache (missing, or rejected by this V8) has
      // nothing to compare with until it writes its own.
      if ((!fresh || wrote) && reached <= thinStage(thinFile)) return
      written = reached
      try {
        const temporary = `${cacheFile}.${process.pid}.tmp`
        fs.writeFileSync(temporary, script.createCachedData(), { mode: 0o600 })
        // The mark first, so that a cache is never taken for complete when it is not.
        if (reached < LAST_STAGE) fs.writeFileSync(thinFile, String(reached), { mode: 0o600 })
        fs.renameSync(temporary, cacheFile)
        if (reached === LAST_STAGE) fs.rmSync(thinFile, { force: true })
      } catch {}
      if (fresh && !wrote) prune(directory, key)
      wrote = true
    }
    const reachedStage = () =>
      Math.min(LAST_STAGE, Math.max(0, Math.trunc(Number(globalThis.__keelCache.stage) || 0)))
    // Written when the process reaches a stage further than the cache's, shortly after (the answer
    // that got it there goes out first): the cache then holds the start, the handshake, the listing
    // and the first call's way. Not at exit only: a process that serves for hours, or through a
    // burst of memory pressure, has by its exit let V8 flush the bytecode of functions it ran only at
    // start, and a cache written then lacks them while marked complete. Every later start compiled
    // them again: a postgres bin whose first process had run the memory test's large results started
    // in 147 ms instead of 112 ms, from a complete cache of 640 KB instead of 918 KB.
    let stage = 0
    let timer
    Object.defineProperty(globalThis.__keelCache, 'stage', {
      enumerable: true,
      get: () => stage,
      set(value) {
        stage = value
        if (timer === undefined && reachedStage() > written) {
          timer = setTimeout(() => {
            timer = undefined
            write(reachedStage())
          }, STAGE_WRITE_DELAY_MS)
          timer.unref()
        }
      },
    })
    // At exit, what no timer wrote (a start that exits right after a stage, or answered nothing).
    // Not after a failed run (a start refused for its configuration exits non-zero): that compiled
    // little beyond the refusal, and every later start would compile the serving path itself,
    // lazily (the Slack bin started 5.6 ms, 7 %, slower from a cache written by a start refused for
    // an unknown flag).
    process.once('exit', (code) => {
      if (code === 0) write(reachedStage())
    })
  }
  if (process.env.KEEL_COMPILE_CACHE_DEBUG === '1') {
    const state = cachedData === undefined ? 'miss' : script.cachedDataRejected ? 'rejected' : 'hit'
    process.stderr.write(`keel compile cache: ${state}\n`)
  }
  const compiled = script.runInThisContext()
  return () => {
    const module = new Module(bundle, null)
    module.filename = bundle
    module.paths = Module._nodeModulePaths(__dirname)
    compiled.call(module.exports, module.exports, Module.createRequire(bundle), module, bundle, __dirname)
  }
}

// The handshake answered from the record of an identical start (packages/core/src/replay.ts).
// Core, in a server that takes part, records a connection's first requests while they are
// initialize, server/discover, a listing, ping or logging/setLevel, with their answers and what
// the start was built from (the command line, the working directory, the environment variables
// its configuration read, secrets left out as gaps), in a file of this bin's version. A later start whose inputs
// match answers those requests here, before the bundle is compiled: the answers a client waits for
// at start come after node's own start, not after the server's. The bundle then starts and is
// handed every byte read; it serves those lines as usual, writes none of the answers again and
// compares each with what was sent (a listing that differs is followed by list_changed).

/** How long the launcher waits for a client's next request before it starts the server. */
const REPLAY_WINDOW_MS = 25
/** How many requests it answers at most before it starts the server anyway. */
const REPLAY_MAX_ANSWERS = 16
/** The longest unfinished line it holds before it starts the server anyway. */
const REPLAY_MAX_LINE_BYTES = 1024 * 1024

function replayFileName() {
  const stat = fs.statSync(bundle)
  const variant = `${process.versions.v8}|${process.arch}|${stat.size}|${stat.mtimeMs}|replay`
  return `${BUNDLE_SHA256.slice(0, 16)}${fnv1a(variant)}${fnv1a(`${variant}|${BUNDLE_SHA256}`)}.replay.json`
}

/** Whether `value` is what `template` recorded: the same string, or its pieces with a non-empty gap between each two. */
function matches(template, value) {
  if (typeof template === 'string') return value === template
  if (typeof value !== 'string' || !template || !Array.isArray(template.pieces)) return false
  const pieces = template.pieces
  if (pieces.length < 2 || pieces.some((piece) => typeof piece !== 'string')) return false
  const last = pieces[pieces.length - 1]
  if (!value.startsWith(pieces[0]) || !value.endsWith(last)) return false
  let at = pieces[0].length
  for (let index = 1; index < pieces.length - 1; index++) {
    const found = value.indexOf(pieces[index], at + 1)
    if (found === -1) return false
    at = found + pieces[index].length
  }
  return value.length - last.length >= at + 1
}

function inputsMatch(inputs) {
  if (!inputs || !Array.isArray(inputs.argv) || !Array.isArray(inputs.env)) return false
  const argv = process.argv.slice(2)
  if (inputs.argv.length !== argv.length) return false
  if (!inputs.argv.every((template, index) => matches(template, argv[index]))) return false
  if (!matches(inputs.cwd, process.cwd())) return false
  return inputs.env.every(
    (entry) =>
      Array.isArray(entry) &&
      typeof entry[0] === 'string' &&
      (entry[1] === null ? process.env[entry[0]] === undefined : matches(entry[1], process.env[entry[0]])),
  )
}

/** A recorded result as core writes it: one line of JSON holding an object. */
function isResultText(text) {
  if (typeof text !== 'string' || !text.startsWith('{') || /[\n\r]/.test(text)) return false
  try {
    const value = JSON.parse(text)
    return value !== null && typeof value === 'object' && !Array.isArray(value)
  } catch {
    return false
  }
}

/**
 * Answers from a record, when one matches this start, then calls `boot` with what it read; returns
 * false (having called nothing) when there is nothing to answer from.
 */
function replayHandshake(boot) {
  if (!/^[0-9a-f]{64}$/.test(BUNDLE_SHA256) || process.env.KEEL_HANDSHAKE_REPLAY === '0') return false
  if (process.argv.some((argument) => argument === '--help' || argument === '--version')) return false
  const directory = usableCacheDirectory()
  if (!directory) return false
  const file = path.join(directory, replayFileName())
  let records = []
  try {
    const stored = JSON.parse(fs.readFileSync(file, 'utf8'))
    if (stored && stored.version === 1 && Array.isArray(stored.records)) records = stored.records
  } catch {}
  globalThis.__keelReplay = { file, records }
  // Every record of these inputs (one per client that started the server with them): an answer
  // depends only on the request, so they pool. The launcher hands over at the first line no record
  // answers (a tool call: at once), when stdin ends with nothing unanswered (a client that listed
  // and left: the process ends, the server never started), or after REPLAY_WINDOW_MS without a
  // line (a client that waits for its model: the server starts meanwhile).
  const matching = records.filter(
    (candidate) => candidate && inputsMatch(candidate.inputs) && Array.isArray(candidate.exchanges),
  )
  // A terminal (someone typing) is left to the server; a pipe or a socket is a client. (fstat, not
  // node:tty, which a start from a pipe never loads otherwise.)
  if (!matching.length || fs.fstatSync(0).isCharacterDevice()) return false
  const answers = new Map()
  for (const candidate of matching)
    for (const exchange of candidate.exchanges)
      if (exchange && typeof exchange.request === 'string' && isResultText(exchange.result))
        answers.set(exchange.request, exchange.result)
  if (!answers.size) return false
  const stdin = process.stdin
  const chunks = []
  const answered = []
  const ids = new Set()
  let pending = Buffer.alloc(0)
  let ended = false
  let handed = false
  let timer
  const handOff = () => {
    if (handed) return
    handed = true
    clearTimeout(timer)
    stdin.off('data', onData)
    stdin.off('end', onEnd)
    stdin.off('error', onEnd)
    stdin.pause()
    process.stdout.off('error', ignore)
    globalThis.__keelReplay = { file, records, input: Buffer.concat(chunks), answered, ended }
    if (process.env.KEEL_COMPILE_CACHE_DEBUG === '1')
      process.stderr.write(`keel handshake replay: answered ${answered.length}\n`)
    boot()
  }
  // Serves each complete line while it is a request the record answers (or the client's
  // notifications/initialized); anything else, and everything after it, is the server's.
  const onData = (chunk) => {
    try {
      serveLines(chunk)
    } catch {
      handOff()
    }
  }
  const serveLines = (chunk) => {
    const data = typeof chunk === 'string' ? Buffer.from(chunk) : chunk
    chunks.push(data)
    pending = pending.length ? Buffer.concat([pending, data]) : data
    // A line longer than any handshake request: the server, which bounds lines, takes it from here.
    if (pending.length > REPLAY_MAX_LINE_BYTES) return handOff()
    let newline = pending.indexOf(0x0a)
    while (newline !== -1) {
      const line = pending.toString('utf8', 0, newline)
      pending = pending.subarray(newline + 1)
      newline = pending.indexOf(0x0a)
      if (line.trim() === '') continue
      let message
      try {
        message = JSON.parse(line)
      } catch {
        return handOff()
      }
      if (!message || typeof message !== 'object' || Array.isArray(message) || message.jsonrpc !== '2.0')
        return handOff()
      if (message.id === undefined && message.method === 'notifications/initialized') continue
      const id = message.id
      const validId = typeof id === 'string' || Number.isSafeInteger(id)
      const { id: _id, ...rest } = message
      const result = validId ? answers.get(JSON.stringify(rest)) : undefined
      const idText = validId ? JSON.stringify(id) : undefined
      // A second initialize is the server's to refuse.
      const again = message.method === 'initialize' && answered.some((entry) => entry[2] === 'initialize')
      if (result === undefined || ids.has(idText) || again) return handOff()
      ids.add(idText)
      answered.push([idText, result, message.method])
      process.stdout.write(`{"jsonrpc":"2.0","id":${idText},"result":${result}}\n`)
      if (answered.length >= REPLAY_MAX_ANSWERS) return handOff()
    }
    clearTimeout(timer)
    timer = setTimeout(handOff, REPLAY_WINDOW_MS)
  }
  // The client closed stdin with every request it sent answered (a client that lists the tools
  // and goes, as a host probing its servers does): the server has nothing to serve, and a server
  // started now would only exit. Its answers flushed, the process ends as the server would.
  const onEnd = () => {
    ended = true
    if (!handed && pending.toString('utf8').trim() === '') {
      handed = true
      clearTimeout(timer)
      if (process.env.KEEL_COMPILE_CACHE_DEBUG === '1')
        process.stderr.write(`keel handshake replay: answered ${answered.length}, then stdin ended\n`)
      process.stdout.write('', () => process.exit(0))
      return
    }
    handOff()
  }
  // A client gone while the launcher answers (EPIPE) ends stdin too; the server sees that.
  const ignore = () => {}
  process.stdout.on('error', ignore)
  stdin.on('data', onData)
  stdin.on('end', onEnd)
  stdin.on('error', onEnd)
  timer = setTimeout(handOff, REPLAY_WINDOW_MS)
  // The client has its answers before the server has installed its signal handlers: a SIGINT or
  // SIGTERM until then ends the process as the server's own handlers would (exit 0; nothing is
  // open yet). Once the server has its handlers, this one stands aside.
  for (const signal of ['SIGINT', 'SIGTERM'])
    process.on(signal, () => {
      if (process.listenerCount(signal) === 1) process.exit(0)
    })
  // A record in use is marked used, as a code cache is, so that pruning keeps it.
  try {
    const now = Date.now()
    if (now - fs.statSync(file).mtimeMs > DAY_MS) fs.utimesSync(file, now / 1000, now / 1000)
  } catch {}
  return true
}

let booted = false
function boot() {
  if (booted) return
  booted = true
  let start
  try {
    start = prepare()
  } catch {
    // Anything unexpected while preparing the cache: run the bundle the ordinary way.
  }
  if (start) start()
  else {
    if (process.env.KEEL_COMPILE_CACHE_DEBUG === '1') process.stderr.write('keel compile cache: off\n')
    require(bundle)
  }
}

let replaying = false
try {
  replaying = replayHandshake(boot)
} catch {}
if (!replaying) boot()
