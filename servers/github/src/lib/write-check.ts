import { nodeCrypto } from '@keel-mcp/core'

/**
 * Checks that what GitHub stored is byte for byte what was sent. Git names a blob by the SHA-1 of
 * `blob <size>\0<bytes>`, and GitHub answers every write with that name: comparing it with the
 * name of the bytes sent proves the write without reading it back. When they differ, the stored
 * bytes are compared with the sent ones to name the difference.
 */

/** Git's name for a blob of these bytes. */
export function gitBlobSha(bytes: Uint8Array): string {
  return nodeCrypto().createHash('sha1').update(`blob ${bytes.length}\0`).update(bytes).digest('hex')
}

const count = (text: string, pattern: RegExp) => text.match(pattern)?.length ?? 0

/** What differs between the bytes sent and the bytes stored, in words. */
export function describeDifference(sent: Uint8Array, stored: Uint8Array): string {
  const differences: string[] = []
  if (sent.length !== stored.length) {
    differences.push(`${sent.length} bytes sent, ${stored.length} stored`)
    if (
      stored.length < sent.length &&
      Buffer.from(sent).subarray(0, stored.length).equals(Buffer.from(stored))
    )
      differences.push(`the stored file is cut off after byte ${stored.length}`)
  }
  const sentText = Buffer.from(sent).toString('utf8')
  const storedText = Buffer.from(stored).toString('utf8')
  const sentCrlf = count(sentText, /\r\n/g)
  const storedCrlf = count(storedText, /\r\n/g)
  if (sentCrlf !== storedCrlf)
    differences.push(`line endings changed (${sentCrlf} CRLF sent, ${storedCrlf} stored)`)
  const bom = (bytes: Uint8Array) => bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf
  if (bom(sent) !== bom(stored))
    differences.push(bom(stored) ? 'a byte-order mark was added' : 'the byte-order mark was removed')
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(stored)
  } catch {
    differences.push('the stored bytes are not valid UTF-8 (encoding changed)')
  }
  if (!differences.length) differences.push('same size, different bytes')
  return differences.join('; ')
}
