import { type FSWatcher, watch } from 'node:fs'
import path from 'node:path'
import { FsError } from './errors.js'

/** Options of {@link WatchHub}. */
export interface WatchHubOptions {
  /** Most directories watched at once, process-wide (each costs an inotify watch or a kqueue descriptor). Default 64. */
  maxDirectories?: number
  /** Changes within this window are reported once. Default 100 ms. */
  debounceMs?: number
}

interface Listener {
  notify: () => void
  timer: NodeJS.Timeout | undefined
}

interface WatchedDirectory {
  watcher: FSWatcher
  /** By entry name; `''` holds the listeners of the directory itself (any change of its entries). */
  listeners: Map<string, Set<Listener>>
}

/**
 * Change notifications for files and directories, for resource subscriptions. One `fs.watch` per directory,
 * shared by every listener in it: a file is watched through its parent directory, so a file replaced by an
 * atomic rename (which is how `writeFileAtomic` writes) keeps being watched, which a watch on the file's own
 * inode would not. Bounded in directories, debounced, and never keeping the process alive.
 */
export class WatchHub {
  readonly maxDirectories: number
  readonly debounceMs: number
  readonly #directories = new Map<string, WatchedDirectory>()
  readonly #pending = new Set<Promise<unknown>>()
  #closed = false

  constructor(options: WatchHubOptions = {}) {
    this.maxDirectories = options.maxDirectories ?? 64
    this.debounceMs = options.debounceMs ?? 100
  }

  /** Directories watched right now. */
  get size(): number {
    return this.#directories.size
  }

  /**
   * Calls `onChange` (debounced) when `target` changes: a file's content or its replacement, or any entry of a
   * directory. `target` must be a canonical path the caller has checked. Returns the disposer (idempotent).
   *
   * @throws FsError `unavailable` at the directory limit or after {@link close}; `not_found` when the directory
   * cannot be watched.
   */
  watch(target: string, kind: 'file' | 'directory', onChange: () => void): () => void {
    if (this.#closed) throw new FsError('unavailable', 'The server is shutting down.')
    const directory = kind === 'directory' ? target : path.dirname(target)
    const key = kind === 'directory' ? '' : path.basename(target)
    let watched = this.#directories.get(directory)
    if (!watched) {
      if (this.#directories.size >= this.maxDirectories) {
        throw new FsError(
          'unavailable',
          `Too many watched directories (the limit is ${this.maxDirectories}).`,
          {
            hint: 'Unsubscribe from other resources first.',
          },
        )
      }
      let watcher: FSWatcher
      try {
        watcher = watch(directory, { persistent: false }, (_event, filename) =>
          this.#dispatch(directory, filename === null ? undefined : String(filename)),
        )
      } catch (error) {
        throw new FsError('not_found', `Cannot watch ${target}`, { cause: error })
      }
      watcher.on('error', () => {
        // The directory went away or the watch broke: tell everyone once, then stop watching.
        this.#dispatch(directory, undefined)
        this.#drop(directory)
      })
      watched = { watcher, listeners: new Map() }
      this.#directories.set(directory, watched)
    }
    const listener: Listener = { notify: onChange, timer: undefined }
    let set = watched.listeners.get(key)
    if (!set) {
      set = new Set()
      watched.listeners.set(key, set)
    }
    set.add(listener)
    let disposed = false
    return () => {
      if (disposed) return
      disposed = true
      if (listener.timer) clearTimeout(listener.timer)
      const current = this.#directories.get(directory)
      const listeners = current?.listeners.get(key)
      if (!current || !listeners) return
      listeners.delete(listener)
      if (listeners.size === 0) current.listeners.delete(key)
      if (current.listeners.size === 0) this.#drop(directory)
    }
  }

  /**
   * Registers asynchronous set-up work (resolving a path before watching it), so that {@link settled} can
   * wait for it. Rejections are the caller's to handle; they are not rethrown by `settled`.
   */
  track<T>(work: Promise<T>): Promise<T> {
    const entry = work.finally(() => this.#pending.delete(entry))
    entry.catch(() => {})
    this.#pending.add(entry)
    return work
  }

  /** Resolves when every tracked set-up has finished (tests wait on this instead of sleeping). */
  async settled(): Promise<void> {
    while (this.#pending.size) await Promise.allSettled([...this.#pending])
  }

  /** Stops every watch; later `watch` calls fail. */
  close(): void {
    this.#closed = true
    for (const directory of [...this.#directories.keys()]) this.#drop(directory)
  }

  #dispatch(directory: string, name: string | undefined): void {
    const watched = this.#directories.get(directory)
    if (!watched) return
    for (const [key, listeners] of watched.listeners) {
      if (key !== '' && name !== undefined && key !== name) continue
      for (const listener of listeners) this.#schedule(listener)
    }
  }

  #schedule(listener: Listener): void {
    if (listener.timer) return
    listener.timer = setTimeout(() => {
      listener.timer = undefined
      listener.notify()
    }, this.debounceMs)
    listener.timer.unref()
  }

  #drop(directory: string): void {
    const watched = this.#directories.get(directory)
    if (!watched) return
    this.#directories.delete(directory)
    for (const listeners of watched.listeners.values()) {
      for (const listener of listeners) if (listener.timer) clearTimeout(listener.timer)
    }
    watched.watcher.close()
  }
}
