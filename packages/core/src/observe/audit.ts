import { closeSync, fstatSync, openSync, statSync, writeSync } from 'node:fs'

// The audit log's writer and the parts of a line that are cheaper made once: the time's date and
// second. The line itself is the observer's (observer.ts, #writeAudit).

/** The second {@link isoNow} last formatted, and its text up to the milliseconds. */
let isoSecond = Number.NaN
let isoPrefix = ''

/**
 * `new Date().toISOString()`, formatting the date once a second: within one, only the
 * milliseconds change.
 */
export function isoNow(now = Date.now()): string {
  const second = Math.floor(now / 1000)
  if (second !== isoSecond) {
    isoSecond = second
    isoPrefix = new Date(second * 1000).toISOString().slice(0, -4)
  }
  const ms = now - second * 1000
  return `${isoPrefix}${ms < 10 ? '00' : ms < 100 ? '0' : ''}${ms}Z`
}

/** How long an audit line may wait for others before it is written, and how much may wait. */
const AUDIT_FLUSH_MS = 50
const AUDIT_FLUSH_BYTES = 16 * 1024

/**
 * An audit line whose result size is not known yet: the transport gives it when it writes the
 * response (stdio), else it is measured when the line is written.
 */
export interface UnsizedLine {
  head: string
  tail: string
  result: unknown
  bytes: number | undefined
}

const lineText = (line: string | UnsizedLine): string =>
  typeof line === 'string'
    ? line
    : `${line.head}${line.bytes ?? Buffer.byteLength(JSON.stringify(line.result) ?? '')}${line.tail}`

/**
 * The audit log's writer: lines are gathered and written in one synchronous append (file) or write
 * (stderr) at most {@link AUDIT_FLUSH_MS} after the first of them, or on the next turn of the event
 * loop once {@link AUDIT_FLUSH_BYTES} wait (by then the responses of the calls in it are written,
 * and with them their results' sizes); what is left when the process exits is written before it
 * does. One write for many calls instead of a stream write (a buffer, a callback, a thread-pool
 * round trip) for each. Only a process killed outright (SIGKILL) can lose the last lines.
 */
export class AuditSink {
  #lines: Array<string | UnsizedLine> = []
  #length = 0
  #timer: NodeJS.Timeout | undefined
  #soon: NodeJS.Immediate | undefined
  #fd: number | undefined
  /** The open file's device and inode: when the path names another file, it was rotated. */
  #file: { dev: number; ino: number } | undefined
  readonly #path: string | undefined
  readonly #stream: NodeJS.WriteStream | undefined
  readonly #onError: (error: Error) => void

  constructor(target: string, onError: (error: Error) => void) {
    this.#onError = onError
    if (target === '-' || target === 'stderr') this.#stream = process.stderr
    else {
      this.#path = target
      this.#open()
    }
    process.on('exit', this.flush)
  }

  #open(): void {
    try {
      this.#fd = openSync(this.#path as string, 'a', 0o600)
      const { dev, ino } = fstatSync(this.#fd)
      this.#file = { dev, ino }
    } catch (error) {
      this.#fd = undefined
      this.#onError(error as Error)
    }
  }

  /**
   * Reopens the path when it no longer names the open file: moved away or deleted by log rotation
   * (logrotate's default `create`, or a plain `mv`), with no signal and no restart. One `stat` a
   * write of many lines; the lines before it went to the old file, the ones after to the new.
   */
  #followRotation(): void {
    if (this.#path === undefined || this.#fd === undefined || this.#file === undefined) return
    let same = false
    try {
      const { dev, ino } = statSync(this.#path)
      same = dev === this.#file.dev && ino === this.#file.ino
    } catch {
      // No file at the path any more: a new one is made.
    }
    if (same) return
    closeSync(this.#fd)
    this.#open()
  }

  write(line: string | UnsizedLine): void {
    this.#lines.push(line)
    this.#length += typeof line === 'string' ? line.length : line.head.length + line.tail.length
    if (this.#length >= AUDIT_FLUSH_BYTES) {
      this.#soon ??= setImmediate(this.flush)
    } else if (!this.#timer) {
      this.#timer = setTimeout(this.flush, AUDIT_FLUSH_MS)
      this.#timer.unref()
    }
  }

  readonly flush = (): void => {
    if (this.#timer) clearTimeout(this.#timer)
    if (this.#soon) clearImmediate(this.#soon)
    this.#timer = undefined
    this.#soon = undefined
    if (!this.#lines.length) return
    let data = ''
    for (const line of this.#lines) data += lineText(line)
    this.#lines = []
    this.#length = 0
    if (this.#stream) {
      this.#stream.write(data)
      return
    }
    this.#followRotation()
    if (this.#fd === undefined) return
    try {
      const bytes = Buffer.from(data)
      let written = 0
      while (written < bytes.length) written += writeSync(this.#fd, bytes, written)
    } catch (error) {
      this.#onError(error as Error)
    }
  }

  close(): void {
    this.flush()
    process.off('exit', this.flush)
    if (this.#fd !== undefined) closeSync(this.#fd)
    this.#fd = undefined
  }
}
