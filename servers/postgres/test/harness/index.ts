export { type DatabaseChecksum, databaseChecksum } from './checksum.js'
export {
  type PostgresInstance,
  type PostgresSource,
  postgresUrl,
  type StartPostgresOptions,
  startPostgres,
} from './postgres.js'
export { createScratchDatabase, type SeedInfo, seedSampleSchema } from './seed.js'
export { type SharedPostgres, sharedPostgres } from './shared.js'
export { adminQuery, waitFor } from './wait.js'
