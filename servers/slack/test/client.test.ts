import { describe, expect, it } from 'vitest'
import { createSlackApi } from '../src/lib/slack.js'
import { BOT_TOKEN } from './fake-slack.js'
import { fake, useCleanup } from './helpers.js'

useCleanup()

describe('the Web API client', () => {
  it("hands its debug lines to the server's log with the text joined only when read, and no token in it", async () => {
    const slack = await fake()
    const records: Array<{ message: string; fields: Record<string, unknown> | undefined }> = []
    const api = createSlackApi(BOT_TOKEN, {
      apiUrl: slack.url,
      log: (message, fields) => records.push({ message, fields }),
    })
    expect((await api.apiCall('auth.test')).ok).toBe(true)
    const lines = records.filter((record) => record.message === 'slack client')
    expect(lines.length).toBeGreaterThan(0)
    // A getter: the logger reads it only for a record someone takes (core's logger spreads fields then).
    for (const line of lines)
      expect(Object.getOwnPropertyDescriptor(line.fields, 'detail')?.get).toBeTypeOf('function')
    const texts = lines.map((line) => String(line.fields?.detail))
    expect(texts.some((text) => text.includes(`${slack.url}auth.test`))).toBe(true)
    expect(texts.every((text) => text.length <= 300 && !text.includes(BOT_TOKEN))).toBe(true)
  })
})
