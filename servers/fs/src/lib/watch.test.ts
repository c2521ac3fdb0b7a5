import { rename, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { makeTree, useTempDirectories } from '../../test/temp-tree.js'
import { WatchHub } from './watch.js'

const tempDirectory = useTempDirectories()
const hubs: WatchHub[] = []
afterEach(() => {
  for (const hub of hubs.splice(0)) hub.close()
})

function hub(options?: ConstructorParameters<typeof WatchHub>[0]): WatchHub {
  const created = new WatchHub({ debounceMs: 10, ...options })
  hubs.push(created)
  return created
}

/** A promise that resolves on the next call of the returned callback. */
function nextCall(): { promise: Promise<void>; callback: () => void } {
  let callback!: () => void
  const promise = new Promise<void>((resolve) => {
    callback = resolve
  })
  return { promise, callback }
}

describe('WatchHub', () => {
  it('reports a change to a watched file', async () => {
    const base = await tempDirectory()
    await makeTree(base, { 'a.txt': 'one' })
    const watches = hub()
    const changed = nextCall()
    watches.watch(path.join(base, 'a.txt'), 'file', changed.callback)
    await writeFile(path.join(base, 'a.txt'), 'two')
    await changed.promise
    expect(watches.size).toBe(1)
  })

  it('keeps reporting a file that was replaced by an atomic rename', async () => {
    const base = await tempDirectory()
    await makeTree(base, { 'a.txt': 'one' })
    const watches = hub()
    let calls = 0
    let wake: () => void = () => {}
    watches.watch(path.join(base, 'a.txt'), 'file', () => {
      calls++
      wake()
    })
    for (const content of ['two', 'three']) {
      const seen = new Promise<void>((resolve) => {
        wake = resolve
      })
      await writeFile(path.join(base, '.a.tmp'), content)
      await rename(path.join(base, '.a.tmp'), path.join(base, 'a.txt'))
      await seen
    }
    expect(calls).toBe(2)
  })

  it('reports any entry change of a watched directory', async () => {
    const base = await tempDirectory()
    const watches = hub()
    const changed = nextCall()
    watches.watch(base, 'directory', changed.callback)
    await writeFile(path.join(base, 'new.txt'), 'x')
    await changed.promise
    expect(watches.size).toBe(1)
  })

  it('shares one watch per directory and releases it with the last listener', async () => {
    const base = await tempDirectory()
    await makeTree(base, { 'a.txt': 'a', 'b.txt': 'b' })
    const watches = hub()
    const first = watches.watch(path.join(base, 'a.txt'), 'file', () => {})
    const second = watches.watch(path.join(base, 'b.txt'), 'file', () => {})
    expect(watches.size).toBe(1)
    first()
    first()
    expect(watches.size).toBe(1)
    second()
    expect(watches.size).toBe(0)
  })

  it('refuses more directories than its limit, and everything after close', async () => {
    const base = await tempDirectory()
    await makeTree(base, { one: {}, two: {} })
    const watches = hub({ maxDirectories: 1 })
    watches.watch(path.join(base, 'one'), 'directory', () => {})
    expect(() => watches.watch(path.join(base, 'two'), 'directory', () => {})).toThrow(
      expect.objectContaining({ code: 'unavailable' }),
    )
    watches.close()
    expect(watches.size).toBe(0)
    expect(() => watches.watch(path.join(base, 'one'), 'directory', () => {})).toThrow(
      expect.objectContaining({ code: 'unavailable' }),
    )
  })

  it('waits for tracked set-up work in settled()', async () => {
    const watches = hub()
    let finished = false
    void watches
      .track(
        (async () => {
          await new Promise((resolve) => setImmediate(resolve))
          finished = true
        })(),
      )
      .catch(() => {})
    void watches.track(Promise.reject(new Error('ignored by settled'))).catch(() => {})
    await watches.settled()
    expect(finished).toBe(true)
  })
})
