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
 * An audit line not made yet: its text is made when the log is written, with the other lines of the
 * same write, rather than one at a time at the end of each call.
 */
export interface PendingLine {
  text(): string
}

/** What a line not made yet counts for against {@link AUDIT_FLUSH_BYTES}: a typical line's length. */
const PENDING_LINE_CHARS = 256

const lineText = (line: string | PendingLine): string => (typeof line === 'string' ? line : line.text())

/**
 * The audit log's writer: lines are gathered and written in one synchronous append (file) or write
 * (stderr) at most {@link AUDIT_FLUSH_MS} after the first of them, or on the next turn of the event
 * loop once {@link AUDIT_FLUSH_BYTES} wait (by then the responses of the calls in it are written,
 * and with them their results' sizes); what is left when the process exits is written before it
 * does. One write for many calls instead of a stream write (a buffer, a callback, a thread-pool
 * round trip) for each. Only a process killed outright (SIGKILL) can lose the last lines.
 */
export class AuditSink {
  #lines: Array<string | PendingLine> = []
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

  write(line: string | PendingLine): void {
    this.#lines.push(line)
    this.#length += typeof line === 'string' ? line.length : PENDING_LINE_CHARS
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
    for (const line of this.#lines) {
      try {
        data += lineText(line)
      } catch (error) {
        // A line that cannot be made (a result that cannot be serialized to be measured) is
        // reported, and the others are written: the log, and the process, go on.
        this.#onError(error as Error)
      }
    }
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
