import { spawnSync } from 'node:child_process'
import { chmod, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const BUNDLE = fileURLToPath(new URL('../bundle.mjs', import.meta.url))
let work: string
let cacheDir: string

function runBin(env: Record<string, string> = {}, args: string[] = []) {
  const result = spawnSync(process.execPath, [join(work, 'dist/index.js'), ...args], {
    env: { ...process.env, KEEL_COMPILE_CACHE_DIR: cacheDir, KEEL_COMPILE_CACHE_DEBUG: '1', ...env },
    encoding: 'utf8',
  })
  const state = /keel compile cache: (\w+)/.exec(result.stderr)?.[1]
  return { status: result.status, stdout: result.stdout, stderr: result.stderr, state }
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'keel-bundle-test-'))
  cacheDir = join(work, 'cache')
  await mkdir(join(work, 'src'))
  // A tiny "server": ESM source with a hashbang, top-level code, and a lazy dynamic import.
  await writeFile(
    join(work, 'package.json'),
    JSON.stringify({ name: 'fixture', version: '1.0.0', type: 'module', dependencies: {} }),
  )
  await writeFile(
    join(work, 'src/index.ts'),
    [
      '#!/usr/bin/env node',
      'const answer: number = 6 * 7',
      // As core does once it has answered tools/list (1) and a tool call (2).
      'const place = (globalThis as { __keelCache?: { stage?: number } }).__keelCache',
      'if (process.env.FIXTURE_STAGE && place) place.stage = Number(process.env.FIXTURE_STAGE)',
      'if (process.env.FIXTURE_EXIT) process.exit(Number(process.env.FIXTURE_EXIT))',
      // Stays until a file exists (a process that exits after another has replaced the cache).
      'const hold = process.env.FIXTURE_HOLD',
      "if (hold) { const timer = setInterval(() => { if (require('node:fs').existsSync(hold)) clearInterval(timer) }, 10) }",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: this is source code for the fixture
      "void import('node:os').then((os) => process.stdout.write(`answer=${answer} platform=${os.platform()} file=${typeof __filename}\\n`))",
      'export {}',
    ].join('\n'),
  )
  const built = spawnSync(process.execPath, [BUNDLE], { cwd: work, encoding: 'utf8' })
  expect(built.status, built.stderr).toBe(0)
})

afterAll(async () => {
  await rm(work, { recursive: true, force: true })
})

describe('the launcher', () => {
  it('runs the bundle, compiling it on the first start and from the cache afterwards', async () => {
    const first = runBin()
    expect(first.status).toBe(0)
    expect(first.stdout).toBe(`answer=42 platform=${process.platform} file=string\n`)
    expect(first.state).toBe('miss')
    const files = await readdir(cacheDir)
    // The cache, and the mark of a cache made by a process that answered no tool call.
    expect(files.map((file) => file.replace(/^[0-9a-f]+/, 'KEY')).sort()).toEqual(['KEY.bin', 'KEY.bin.thin'])
    const second = runBin()
    expect(second.stdout).toBe(first.stdout)
    expect(second.state).toBe('hit')
    expect(second.stderr).not.toContain('ExperimentalWarning')
  })

  it('replaces a cache once for each further stage a later process reaches: tools/list, then a tool call', async () => {
    const { readFileSync, statSync } = await import('node:fs')
    const isolated = { KEEL_COMPILE_CACHE_DIR: join(work, 'thin-cache') }
    const state = async () => {
      const names = await readdir(isolated.KEEL_COMPILE_CACHE_DIR)
      const file = names.find((name) => name.endsWith('.bin'))
      const thin = names.find((name) => name.endsWith('.bin.thin'))
      return {
        mtime: statSync(join(isolated.KEEL_COMPILE_CACHE_DIR, file ?? '')).mtimeMs,
        stage:
          thin === undefined ? 'complete' : readFileSync(join(isolated.KEEL_COMPILE_CACHE_DIR, thin), 'utf8'),
        files: names.length,
      }
    }
    const tick = () => new Promise((resolve) => setTimeout(resolve, 20))
    // A first start that answered nothing writes a cache marked with its stage.
    expect(runBin(isolated).state).toBe('miss')
    const bare = await state()
    expect(bare).toMatchObject({ stage: '0', files: 2 })
    // Another that gets no further keeps it as it is.
    expect(runBin(isolated).state).toBe('hit')
    expect(await state()).toEqual(bare)
    // One that answered tools/list replaces it, once.
    await tick()
    expect(runBin({ ...isolated, FIXTURE_STAGE: '1' }).state).toBe('hit')
    const listed = await state()
    expect(listed).toMatchObject({ stage: '1', files: 2 })
    expect(listed.mtime).toBeGreaterThan(bare.mtime)
    for (const stage of ['1', '0']) {
      expect(runBin({ ...isolated, FIXTURE_STAGE: stage }).state).toBe('hit')
      expect(await state()).toEqual(listed)
    }
    // One that answered a tool call replaces it and drops the mark; later ones keep the new cache.
    await tick()
    const served = runBin({ ...isolated, FIXTURE_STAGE: '2' })
    expect(served.state).toBe('hit')
    expect(served.stdout).toContain('answer=42')
    const full = await state()
    expect(full).toMatchObject({ stage: 'complete', files: 1 })
    expect(full.mtime).toBeGreaterThan(listed.mtime)
    for (const stage of ['2', '1', '0']) {
      expect(runBin({ ...isolated, FIXTURE_STAGE: stage }).state).toBe('hit')
      expect(await state()).toEqual(full)
    }
  })

  it('is not replaced by a process that got less far than the one that replaced it meanwhile', async () => {
    const { spawn } = await import('node:child_process')
    const { readFileSync, statSync } = await import('node:fs')
    const isolated = { KEEL_COMPILE_CACHE_DIR: join(work, 'race-cache') }
    expect(runBin(isolated).state).toBe('miss')
    const [file] = (await readdir(isolated.KEEL_COMPILE_CACHE_DIR)).filter((name) => name.endsWith('.bin'))
    const cache = join(isolated.KEEL_COMPILE_CACHE_DIR, file!)
    expect(readFileSync(`${cache}.thin`, 'utf8')).toBe('0')
    // A starts from the stage-0 cache and will list tools (stage 1), but exits only later.
    const hold = join(work, 'race-hold')
    const slow = spawn(process.execPath, [join(work, 'dist/index.js')], {
      env: { ...process.env, ...isolated, FIXTURE_STAGE: '1', FIXTURE_HOLD: hold },
      stdio: ['ignore', 'pipe', 'ignore'],
    })
    const exited = new Promise((resolve) => slow.once('exit', resolve))
    await new Promise((resolve) => slow.stdout.once('data', resolve))
    // Meanwhile B answers a call: the cache becomes complete.
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(runBin({ ...isolated, FIXTURE_STAGE: '2' }).state).toBe('hit')
    const complete = statSync(cache).mtimeMs
    expect(await readdir(isolated.KEEL_COMPILE_CACHE_DIR)).toEqual([file])
    // A's exit leaves B's cache as it is.
    await writeFile(hold, '')
    expect(await exited).toBe(0)
    expect(await readdir(isolated.KEEL_COMPILE_CACHE_DIR)).toEqual([file])
    expect(statSync(cache).mtimeMs).toBe(complete)
  })

  it('writes its cache soon after reaching a further stage, while still serving, and not again at exit', async () => {
    const { spawn } = await import('node:child_process')
    const { existsSync, statSync } = await import('node:fs')
    const isolated = { KEEL_COMPILE_CACHE_DIR: join(work, 'stage-write-cache') }
    const hold = join(work, 'stage-write-hold')
    // A first process that answers a call and then keeps serving (a client's long session).
    const serving = spawn(process.execPath, [join(work, 'dist/index.js')], {
      env: { ...process.env, ...isolated, FIXTURE_STAGE: '2', FIXTURE_HOLD: hold },
      stdio: ['ignore', 'pipe', 'ignore'],
    })
    const exited = new Promise((resolve) => serving.once('exit', resolve))
    // Its complete cache appears while it runs: a bounded wait, the write is due 50 ms after the stage.
    let names: string[] = []
    for (let attempt = 0; attempt < 200; attempt++) {
      names = existsSync(isolated.KEEL_COMPILE_CACHE_DIR)
        ? await readdir(isolated.KEEL_COMPILE_CACHE_DIR)
        : []
      if (names.some((name) => name.endsWith('.bin'))) break
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    expect(serving.exitCode).toBeNull()
    const file = names.find((name) => name.endsWith('.bin'))
    expect(file).toBeDefined()
    // Complete: no thin mark beside it.
    expect(names).toEqual([file])
    const cache = join(isolated.KEEL_COMPILE_CACHE_DIR, file as string)
    const written = statSync(cache).mtimeMs
    await new Promise((resolve) => setTimeout(resolve, 20))
    await writeFile(hold, '')
    expect(await exited).toBe(0)
    // The exit had nothing further to write.
    expect(statSync(cache).mtimeMs).toBe(written)
    expect(runBin(isolated).state).toBe('hit')
  })

  it('takes an empty or unreadable thin mark for a cache that answered nothing', async () => {
    const { statSync } = await import('node:fs')
    const isolated = { KEEL_COMPILE_CACHE_DIR: join(work, 'old-mark-cache') }
    expect(runBin({ ...isolated, FIXTURE_STAGE: '2' }).state).toBe('miss')
    const [file] = await readdir(isolated.KEEL_COMPILE_CACHE_DIR)
    const cache = join(isolated.KEEL_COMPILE_CACHE_DIR, file!)
    for (const mark of ['', 'nonsense', '7']) {
      await writeFile(`${cache}.thin`, mark)
      const before = statSync(cache).mtimeMs
      await new Promise((resolve) => setTimeout(resolve, 20))
      expect(runBin({ ...isolated, FIXTURE_STAGE: '1' }).state).toBe('hit')
      expect(statSync(cache).mtimeMs).toBeGreaterThan(before)
      expect(await readdir(isolated.KEEL_COMPILE_CACHE_DIR)).toEqual([file, `${file}.thin`])
    }
  })

  it('recovers from a corrupt cache file', async () => {
    runBin()
    const [file] = (await readdir(cacheDir)).filter((name) => name.endsWith('.bin'))
    await writeFile(join(cacheDir, file!), 'garbage')
    const rejected = runBin()
    expect(rejected.status).toBe(0)
    expect(rejected.stdout).toContain('answer=42')
    expect(rejected.state).toBe('rejected')
    expect(runBin().state).toBe('hit')
  })

  it('does not trust a cache directory that others can write to', async () => {
    const shared = join(work, 'shared-cache')
    await mkdir(shared, { mode: 0o777 })
    await chmod(shared, 0o777)
    const result = runBin({ KEEL_COMPILE_CACHE_DIR: shared })
    expect(result.status).toBe(0)
    expect(result.stdout).toContain('answer=42')
    expect(result.state).toBe('off')
    expect(await readdir(shared)).toEqual([])
  })

  it('can be turned off', () => {
    const result = runBin({ KEEL_COMPILE_CACHE: '0' })
    expect(result.stdout).toContain('answer=42')
    expect(result.state).toBe('off')
  })

  it('writes no cache for --version runs', async () => {
    const isolated = join(work, 'version-cache')
    runBin({ KEEL_COMPILE_CACHE_DIR: isolated }, ['--version'])
    expect(await readdir(isolated)).toEqual([])
  })

  it('writes no cache for a run that fails, and the next run that serves writes it', async () => {
    const isolated = join(work, 'failed-cache')
    const failed = runBin({ KEEL_COMPILE_CACHE_DIR: isolated, FIXTURE_EXIT: '2' })
    expect(failed.status).toBe(2)
    expect(failed.state).toBe('miss')
    expect(await readdir(isolated)).toEqual([])
    const serving = runBin({ KEEL_COMPILE_CACHE_DIR: isolated })
    expect(serving.status).toBe(0)
    expect(serving.state).toBe('miss')
    expect((await readdir(isolated)).filter((name) => name.endsWith('.bin'))).toHaveLength(1)
    expect(runBin({ KEEL_COMPILE_CACHE_DIR: isolated }).state).toBe('hit')
  })

  it('removes the files of caches unused for 30 days when it writes a new one, and marks the cache it uses', async () => {
    const { statSync, utimesSync, writeFileSync, mkdirSync } = await import('node:fs')
    const directory = join(work, 'prune-cache')
    mkdirSync(directory, { recursive: true, mode: 0o700 })
    const isolated = { KEEL_COMPILE_CACHE_DIR: directory }
    const days = (count: number) => new Date(Date.now() - count * 24 * 60 * 60 * 1000)
    const place = (name: string, age: number) => {
      writeFileSync(join(directory, name), 'x', { mode: 0o600 })
      utimesSync(join(directory, name), days(age), days(age))
    }
    const old = 'a'.repeat(32)
    const recent = 'b'.repeat(32)
    const orphan = 'c'.repeat(32)
    // A cache unused for 40 days, with its thin mark and a tool-schema file of core's (newer).
    place(`${old}.bin`, 40)
    place(`${old}.bin.thin`, 40)
    place(`${old}-0123456789abcdef.tools.json`, 2)
    // A cache used 10 days ago, with its tool schemas: kept.
    place(`${recent}.bin`, 10)
    place(`${recent}-0123456789abcdef.tools.json`, 10)
    // Tool schemas whose code cache is gone: removed once 30 days old, kept before.
    place(`${orphan}-0123456789abcdef.tools.json`, 31)
    place(`${orphan}-fedcba9876543210.tools.json`, 5)
    // A temporary file of a process that died writing: removed after a day.
    place(`${recent}.bin.4242.tmp`, 2)
    place(`${recent}.bin.4243.tmp`, 0)
    // Not a cache file: left alone whatever its age.
    place('notes.txt', 400)

    expect(runBin(isolated).state).toBe('miss')
    const left = (await readdir(directory)).sort()
    const own = left.find((name) => /^[0-9a-f]{32}\.bin$/.test(name) && name !== `${recent}.bin`)
    expect(own).toBeDefined()
    expect(left).toEqual(
      [
        own,
        `${own}.thin`,
        `${recent}.bin`,
        `${recent}-0123456789abcdef.tools.json`,
        `${orphan}-fedcba9876543210.tools.json`,
        `${recent}.bin.4243.tmp`,
        'notes.txt',
      ].sort(),
    )

    // A start that uses a cache last marked more than a day ago marks it again…
    const ownPath = join(directory, own as string)
    utimesSync(ownPath, days(3), days(3))
    expect(runBin(isolated).state).toBe('hit')
    expect(Date.now() - statSync(ownPath).mtimeMs).toBeLessThan(60 * 60 * 1000)
    // …and one that uses a cache marked today leaves it as it is (no write at every start).
    const marked = days(0.5)
    utimesSync(ownPath, marked, marked)
    expect(runBin(isolated).state).toBe('hit')
    // (mtimeMs carries nanoseconds as a float: equal to the millisecond.)
    expect(Math.abs(statSync(ownPath).mtimeMs - marked.getTime())).toBeLessThan(1)
  })

  it('is keyed by the content hash written in at build time, and a bundle edited afterwards gets its own', async () => {
    const { createHash } = await import('node:crypto')
    const { readFile, utimes } = await import('node:fs/promises')
    const { statSync } = await import('node:fs')
    const server = await readFile(join(work, 'dist/server.js'), 'utf8')
    const launcher = await readFile(join(work, 'dist/index.js'), 'utf8')
    expect(launcher).toContain(`const BUNDLE_SHA256 = '${createHash('sha256').update(server).digest('hex')}'`)
    const isolated = { KEEL_COMPILE_CACHE_DIR: join(work, 'edit-cache') }
    expect(runBin(isolated).state).toBe('miss')
    expect(runBin(isolated).state).toBe('hit')
    try {
      // Same size, other content, the modification time set back (to the millisecond): its own cache.
      const edited = server.replace('answer=', 'ANSWER=')
      expect(edited).not.toBe(server)
      expect(edited.length).toBe(server.length)
      const { mtime } = statSync(join(work, 'dist/server.js'))
      await writeFile(join(work, 'dist/server.js'), edited)
      await utimes(join(work, 'dist/server.js'), mtime, mtime)
      const changed = runBin(isolated)
      expect(changed.state).toBe('miss')
      expect(changed.stdout).toContain('ANSWER=42')
      expect(runBin(isolated).state).toBe('hit')
    } finally {
      await writeFile(join(work, 'dist/server.js'), server)
    }
  })
})
