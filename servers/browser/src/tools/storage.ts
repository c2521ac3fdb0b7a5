import { z } from '@keel-mcp/core'
import { evaluateIsolated } from '../lib/changes.js'
import { writeOutput } from '../lib/output.js'
import { localStorageOf, restoreScript, type StorageItems, type StorageState } from '../lib/storage-state.js'
import { defineTool, outputDirOf, sessionOf } from './shared.js'

export const saveStorageState = defineTool({
  name: 'save_storage_state',
  title: 'Save storage state',
  description:
    "The session's cookies and the localStorage of every origin it has shown (open now or not), to a file in --output-dir (for --storage-state).",
  input: {},
  output: { path: z.string(), cookies: z.number(), origins: z.number() },
  // Writes a file of credentials the user keeps: not read-only, not destructive.
  annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: false },
  async run(_input, context) {
    const dir = outputDirOf(context.deps.settings)
    const { session } = await sessionOf(context)
    const cookies = await session.context.cookies()
    const origins = new Map<string, StorageItems>()
    const read = new Set<string>()
    for (const tab of session.tabs.values()) {
      if (tab.closed || tab.crashed || tab.dialog) continue
      const origin = (await evaluateIsolated(tab, 'location.origin', true).catch(() => undefined)) as
        | string
        | undefined
      if (!origin || origin === 'null' || read.has(origin)) continue
      read.add(origin)
      const items = (await evaluateIsolated(
        tab,
        'Object.keys(localStorage).map((name) => ({ name, value: localStorage.getItem(name) }))',
        true,
      ).catch(() => undefined)) as Array<{ name: string; value: string }> | undefined
      if (items?.length) origins.set(origin, items)
    }
    // Every other origin the session's tabs have shown (or its --storage-state holds), read with no
    // tab of its open.
    const { storageState } = context.deps.host.settings
    const others = await localStorageOf(
      session.context,
      [...session.origins].filter((origin) => !read.has(origin)),
      storageState && restoreScript(storageState),
    )
    for (const [origin, items] of others) origins.set(origin, items)
    const state: StorageState = {
      cookies: cookies.map((cookie) => ({
        name: cookie.name,
        value: cookie.value,
        domain: cookie.domain,
        path: cookie.path,
        expires: cookie.expires,
        httpOnly: cookie.httpOnly,
        secure: cookie.secure,
        ...(cookie.sameSite && cookie.sameSite !== 'Default' ? { sameSite: cookie.sameSite } : {}),
      })),
      origins: [...origins].map(([origin, localStorage]) => ({ origin, localStorage })),
    }
    const file = await writeOutput(dir, 'storage-state', 'all', 'json', JSON.stringify(state, null, 1))
    return {
      data: { path: file.path, cookies: state.cookies.length, origins: state.origins.length },
      text: `Saved ${state.cookies.length} cookies and the localStorage of ${state.origins.length} origins to ${file.path} (${file.bytes} bytes). Start with --storage-state ${file.path} to restore them.`,
    }
  },
})
