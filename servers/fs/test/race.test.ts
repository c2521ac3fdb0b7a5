import { type ChildProcess, spawn } from 'node:child_process'
import { readdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { call, connect, useConnections } from './helpers.js'
import { makeTree, snapshot, useTempDirectories } from './temp-tree.js'

/**
 * Races between the path check and the operation (TOCTOU), as an attacker on the same machine
 * would run them: a process swaps `allowed/dir` for a symbolic link to `outside` and back in a
 * tight loop while the server serves calls that name paths under `allowed/dir`. Before anchoring,
 * such a pass got a few percent of moves and most writes through. Now every call must either act
 * inside the real directory or be refused, and `outside` must be byte-for-byte unchanged.
 * Bounded: 300 calls per attack, 40 s per attack at most.
 */
const tempDirectory = useTempDirectories()
useConnections()

const CALLS = 300
const swappers: ChildProcess[] = []
afterEach(() => {
  for (const swapper of swappers.splice(0)) swapper.kill('SIGKILL')
})

async function setup() {
  const base = await tempDirectory()
  const allowed = path.join(base, 'allowed')
  const outside = path.join(base, 'outside')
  const inside: Record<string, string> = {}
  const outsideFiles: Record<string, string> = { 'victim.txt': 'OUTSIDE victim\n' }
  for (let index = 0; index < CALLS; index++) {
    inside[`in-${index}.txt`] = `inside ${index}\n`
    outsideFiles[`in-${index}.txt`] = `OUTSIDE ${index}\n`
  }
  await makeTree(base, {
    allowed: { dir: { ...inside, 'victim.txt': 'inside victim\n' } },
    outside: outsideFiles,
  })
  return { base, allowed, outside }
}

/** Swaps allowed/dir for a link to outside and back, as fast as it can, until killed (or 60 s). */
function startSwapper(allowed: string, outside: string): ChildProcess {
  const script = `
    const fs = require('node:fs')
    const dir = ${JSON.stringify(path.join(allowed, 'dir'))}
    const real = ${JSON.stringify(path.join(allowed, 'dir-real'))}
    const outside = ${JSON.stringify(outside)}
    const end = Date.now() + 60000
    while (Date.now() < end) {
      try { fs.renameSync(dir, real); fs.symlinkSync(outside, dir) } catch {}
      try { fs.unlinkSync(dir); fs.renameSync(real, dir) } catch {}
    }`
  const child = spawn(process.execPath, ['-e', script], { stdio: 'ignore' })
  swappers.push(child)
  return child
}

/** Puts allowed/dir back as the real directory once the swapper is gone. */
async function restore(allowed: string): Promise<void> {
  for (const swapper of swappers.splice(0)) {
    swapper.kill('SIGKILL')
    await new Promise((resolve) => swapper.once('exit', resolve))
  }
  const entries = await readdir(allowed)
  if (entries.includes('dir-real')) {
    await rm(path.join(allowed, 'dir'), { force: true })
    await rename(path.join(allowed, 'dir-real'), path.join(allowed, 'dir'))
  }
}

async function race(
  setupResult: Awaited<ReturnType<typeof setup>>,
  attempt: (index: number, connection: Awaited<ReturnType<typeof connect>>) => Promise<unknown>,
) {
  const { allowed, outside } = setupResult
  const connection = await connect([allowed])
  startSwapper(allowed, outside)
  const deadline = Date.now() + 40_000
  let made = 0
  for (let index = 0; index < CALLS && Date.now() < deadline; index++) {
    await attempt(index, connection)
    made++
  }
  await restore(allowed)
  return made
}

describe('races between the path check and the operation (a directory swapped for a link)', () => {
  it('never pulls an outside file into the root with move_file', async () => {
    const context = await setup()
    const before = await snapshot(context.outside)
    const made = await race(context, (index, connection) =>
      call(connection, 'move_file', { source: `dir/in-${index}.txt`, destination: `pulled-${index}.txt` }),
    )
    expect(made).toBeGreaterThan(0)
    const pulled = (await readdir(context.allowed)).filter((name) => name.startsWith('pulled-'))
    const contents = await Promise.all(
      pulled.map((name) => readFile(path.join(context.allowed, name), 'utf8')),
    )
    expect(contents.filter((text) => text.startsWith('OUTSIDE'))).toEqual([])
    expect(await snapshot(context.outside)).toEqual(before)
  }, 90_000)

  it('never plants a file outside with move_file', async () => {
    const context = await setup()
    for (let index = 0; index < CALLS; index++) {
      await writeFile(path.join(context.allowed, `plant-${index}.txt`), `planted ${index}\n`)
    }
    const before = await snapshot(context.outside)
    await race(context, (index, connection) =>
      call(connection, 'move_file', { source: `plant-${index}.txt`, destination: `dir/plant-${index}.txt` }),
    )
    expect(await snapshot(context.outside)).toEqual(before)
  }, 90_000)

  it('never replaces an outside file with move_file and overwrite', async () => {
    const context = await setup()
    for (let index = 0; index < CALLS; index++) {
      await writeFile(path.join(context.allowed, `repl-${index}.txt`), `replacement ${index}\n`)
    }
    const before = await snapshot(context.outside)
    await race(context, (index, connection) =>
      call(connection, 'move_file', {
        source: `repl-${index}.txt`,
        destination: 'dir/victim.txt',
        overwrite: true,
      }),
    )
    expect(await snapshot(context.outside)).toEqual(before)
  }, 90_000)

  it('never reads an outside file with read_text_file', async () => {
    const context = await setup()
    const texts: string[] = []
    const made = await race(context, async (index, connection) => {
      const result = await call(connection, 'read_text_file', { path: `dir/in-${index}.txt` })
      if (!result.isError) texts.push(result.text)
    })
    expect(made).toBeGreaterThan(0)
    // Every answer is the inside file or a refusal; none is the outside file of the same name.
    expect(texts.filter((text) => !/^inside \d+\n$/.test(text))).toEqual([])
  }, 90_000)

  it('never writes, or leaves a temporary file, outside with write_file', async () => {
    const context = await setup()
    const before = await snapshot(context.outside)
    await race(context, (index, connection) =>
      call(connection, 'write_file', { path: `dir/w-${index}.txt`, content: `written ${index}\n` }),
    )
    expect(await snapshot(context.outside)).toEqual(before)
    const leftovers = (await readdir(path.join(context.allowed, 'dir'))).filter((name) =>
      name.endsWith('.tmp'),
    )
    expect(leftovers).toEqual([])
  }, 90_000)
})
