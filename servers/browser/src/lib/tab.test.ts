import { describe, expect, it } from 'vitest'
import { bounded, CallTimeoutError } from './tab.js'

const never = () => new Promise<never>(() => {})

describe('bounded', () => {
  it('passes on the outcome of work that settles in time', async () => {
    await expect(bounded(Promise.resolve(7), 1000)).resolves.toBe(7)
    await expect(bounded(Promise.reject(new Error('page threw')), 1000)).rejects.toThrow('page threw')
  })

  it('gives up on work that never settles at its limit, with a CallTimeoutError naming it', async () => {
    const outcome = bounded(never(), 20).catch((error: unknown) => error)
    const error = await outcome
    expect(error).toBeInstanceOf(CallTimeoutError)
    expect((error as CallTimeoutError).message).toBe('The page did not answer within 20 ms')
  })

  it('gives up at once when the call is cancelled, with the cancellation as the reason', async () => {
    const controller = new AbortController()
    const outcome = bounded(never(), 60_000, controller.signal).catch((error: unknown) => error)
    controller.abort(new Error('cancelled by the client'))
    expect(((await outcome) as Error).message).toBe('cancelled by the client')
    const already = bounded(never(), 60_000, controller.signal).catch((error: unknown) => error)
    expect(((await already) as Error).message).toBe('cancelled by the client')
  })
})
