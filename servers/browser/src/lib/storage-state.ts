import { readFileSync } from 'node:fs'
import { z } from '@keel-mcp/core'
import type { BrowserContext } from 'puppeteer-core'
import { interceptRequests } from './intercept.js'
import { bounded } from './tab.js'

/** Cookies and each origin's localStorage, in the shape Playwright's storage-state files use. */
export const storageStateShape = z.object({
  cookies: z
    .array(
      z
        .object({
          name: z.string(),
          value: z.string(),
          domain: z.string(),
          path: z.string().default('/'),
          expires: z.number().optional(),
          httpOnly: z.boolean().optional(),
          secure: z.boolean().optional(),
          sameSite: z.enum(['Strict', 'Lax', 'None']).optional(),
        })
        .loose(),
    )
    .max(10_000)
    .default([]),
  origins: z
    .array(
      z.object({
        origin: z.string(),
        localStorage: z
          .array(z.object({ name: z.string(), value: z.string() }))
          .max(10_000)
          .default([]),
      }),
    )
    .max(1000)
    .default([]),
})
export type StorageState = z.infer<typeof storageStateShape>

/** Reads a storage-state file, or throws an error that names what is wrong with it. */
export function readStorageState(path: string): StorageState {
  let raw: unknown
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'))
  } catch (error) {
    throw new Error(`cannot read ${path}: ${(error as Error).message}`)
  }
  const parsed = storageStateShape.safeParse(raw)
  if (!parsed.success)
    throw new Error(`${path} is not a storage state: ${parsed.error.issues[0]?.message ?? 'invalid'}`)
  return parsed.data
}

/**
 * The script that restores an origin's localStorage in every new document of a tab (in an
 * isolated world: the storage is the origin's, the script is invisible to the page). An item the
 * page already has is left as it is.
 */
export function restoreScript(state: StorageState): string | undefined {
  if (!state.origins.length) return undefined
  return `(() => {
  const origins = ${JSON.stringify(state.origins)}
  const mine = origins.find((entry) => entry.origin === location.origin)
  if (!mine) return
  try {
    for (const item of mine.localStorage) if (localStorage.getItem(item.name) === null) localStorage.setItem(item.name, item.value)
  } catch {}
})()`
}

/** One origin's localStorage items. */
export type StorageItems = Array<{ name: string; value: string }>

/**
 * The localStorage of `origins` in a browser context, read without a tab of theirs open and
 * without the network: a blank page of the context (never one of the session's tabs) is shown each
 * origin's address, answered inside the browser with an empty document, and reads its storage.
 * Service workers are bypassed, so no page or worker code of the site runs. `restore` (the
 * --storage-state script) runs first in each document, so an origin restored from a file but not
 * visited since reads back what was restored. Origins that cannot be read are left out.
 */
export async function localStorageOf(
  context: BrowserContext,
  origins: string[],
  restore: string | undefined,
): Promise<Map<string, StorageItems>> {
  const found = new Map<string, StorageItems>()
  if (!origins.length) return found
  const page = await context.newPage()
  try {
    const cdp = await page.createCDPSession()
    await cdp.send('Network.setBypassServiceWorker', { bypass: true }).catch(() => undefined)
    if (restore) {
      // Scripts for new documents run only for a session with the Page domain on.
      await cdp.send('Page.enable')
      await cdp.send('Page.addScriptToEvaluateOnNewDocument', { source: restore, worldName: 'keel-storage' })
    }
    // Every request is answered here, none reaches a site: the main frame's documents with an empty
    // page (an origin to read from), everything else refused.
    const tree = (await cdp.send('Page.getFrameTree')) as { frameTree: { frame: { id: string } } }
    const mainFrameId = tree.frameTree.frame.id
    await interceptRequests(cdp, async (request) =>
      request.resourceType === 'Document' && request.frameId === mainFrameId
        ? { action: 'fulfill', status: 200, contentType: 'text/html', body: '<!doctype html><title></title>' }
        : { action: 'fail' },
    )
    for (const origin of origins) {
      try {
        await bounded(page.goto(`${origin}/`, { waitUntil: 'domcontentloaded' }), 5000)
        const items = (await bounded(
          page.evaluate(
            "Object.keys(localStorage).map((name) => ({ name, value: localStorage.getItem(name) ?? '' }))",
          ),
          5000,
        )) as StorageItems
        if (items.length) found.set(origin, items)
      } catch {
        // An origin that cannot be shown (or has no storage to read) is left out of the file.
      }
    }
  } finally {
    await bounded(page.close({ runBeforeUnload: false }), 5000).catch(() => undefined)
  }
  return found
}
