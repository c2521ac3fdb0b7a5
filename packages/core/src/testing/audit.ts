import { readFile } from 'node:fs/promises'

/**
 * The lines of an audit file (`--audit-log`), parsed, once at least `count` are there: a server
 * gathers lines for up to 50 ms before it writes them (and writes what waits when it exits).
 * Waits at most `timeoutMs`, then returns what is there.
 */
export async function readAuditLines(
  file: string,
  count: number,
  timeoutMs = 5000,
): Promise<Array<Record<string, unknown>>> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const lines = (await readFile(file, 'utf8').catch(() => '')).split('\n').filter(Boolean)
    if (lines.length >= count || Date.now() >= deadline) return lines.map((line) => JSON.parse(line))
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}
