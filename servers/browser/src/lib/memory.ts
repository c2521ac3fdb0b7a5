import { promises as fs } from 'node:fs'
// node:fs/promises loads on first use through the getter, not at start.

/**
 * The memory of a process and all its descendants, in bytes: the sum of their proportional set
 * sizes (a page shared by n processes counts 1/n in each, so the sum is what they hold together).
 * Read from /proc, so Linux only: `undefined` elsewhere or when the process is gone.
 */
export async function treeResidentBytes(rootPid: number): Promise<number | undefined> {
  if (process.platform !== 'linux') return undefined
  let entries: string[]
  try {
    entries = await fs.readdir('/proc')
  } catch {
    return undefined
  }
  const children = new Map<number, number[]>()
  const resident = new Map<number, number>()
  await Promise.all(
    entries
      .filter((name) => /^\d+$/.test(name))
      .map(async (name) => {
        const status = await fs.readFile(`/proc/${name}/status`, 'utf8').catch(() => '')
        const parent = /^PPid:\s+(\d+)/m.exec(status)?.[1]
        const rss = /^VmRSS:\s+(\d+) kB/m.exec(status)?.[1]
        if (parent === undefined) return
        const pid = Number(name)
        resident.set(pid, Number(rss ?? 0) * 1024)
        const siblings = children.get(Number(parent)) ?? []
        siblings.push(pid)
        children.set(Number(parent), siblings)
      }),
  )
  if (!resident.has(rootPid)) return undefined
  const family: number[] = []
  const pending = [rootPid]
  while (pending.length) {
    const pid = pending.pop() as number
    if (family.includes(pid)) continue
    family.push(pid)
    pending.push(...(children.get(pid) ?? []))
  }
  const sizes = await Promise.all(
    family.map(async (pid) => {
      // Pss where the kernel has it (4.14+); the resident size (shared pages in full) otherwise.
      const rollup = await fs.readFile(`/proc/${pid}/smaps_rollup`, 'utf8').catch(() => '')
      const pss = /^Pss:\s+(\d+) kB/m.exec(rollup)?.[1]
      return pss !== undefined ? Number(pss) * 1024 : (resident.get(pid) ?? 0)
    }),
  )
  return sizes.reduce((sum, size) => sum + size, 0)
}
