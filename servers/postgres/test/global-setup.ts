import type { TestProject } from 'vitest/node'
import { startPostgres } from './harness/postgres.js'
import { seedSampleSchema } from './harness/seed.js'
import type { SharedPostgres } from './harness/shared.js'

const bulkRows = 1_000_000

/** Starts ONE throwaway cluster for the whole run, seeds it, and hands its URLs to the test files. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const started = performance.now()
  const postgres = await startPostgres()
  try {
    const seed = await seedSampleSchema(postgres.superuserUrl, {
      bulkRows,
      readerRole: postgres.roleName('keel_reader'),
    })
    const shared: SharedPostgres = {
      source: postgres.source,
      url: postgres.url,
      superuserUrl: postgres.superuserUrl,
      appRole: postgres.appRole,
      readerRole: seed.readerRole,
      passwordRole: postgres.passwordRole,
      bulkRows: seed.bulkRows,
      extensions: postgres.extensions,
    }
    project.provide('postgres', shared)
  } catch (error) {
    await postgres.stop()
    throw error
  }
  process.stderr.write(
    `[postgres] ${postgres.source} cluster on port ${postgres.port} ready and seeded in ${Math.round(performance.now() - started)} ms\n`,
  )
  return () => postgres.stop()
}
