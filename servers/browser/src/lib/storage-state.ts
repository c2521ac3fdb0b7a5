import { readFileSync } from 'node:fs'
import { z } from '@keel-mcp/core'

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
