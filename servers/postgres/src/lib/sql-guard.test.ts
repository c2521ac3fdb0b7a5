import { describe, expect, it } from 'vitest'
import {
  cachedSqlMaxLength,
  cachedVerdicts,
  checkReadOnlySql,
  deniedFunctionReason,
  type SqlRefusalCode,
  verdictCacheEntries,
} from './sql-guard.js'

const accepted: ReadonlyArray<readonly [label: string, sql: string]> = [
  ['plain select', 'SELECT 1'],
  ['select with trailing semicolon', 'SELECT id, email FROM shop.customers;'],
  ['select with comments', '-- the customers\nSELECT /* all */ * FROM shop.customers'],
  [
    'where / order / limit / offset',
    'SELECT * FROM shop.orders WHERE status = $1 ORDER BY ordered_at DESC LIMIT 10 OFFSET 5',
  ],
  ['joins', 'SELECT c.full_name, o.id FROM shop.customers c JOIN shop.orders o ON o.customer_id = c.id'],
  [
    'left join with aggregates',
    'SELECT c.id, count(o.id) FROM shop.customers c LEFT JOIN shop.orders o ON o.customer_id = c.id GROUP BY c.id HAVING count(o.id) > 1',
  ],
  ['CTE', "WITH paid AS (SELECT * FROM shop.orders WHERE status = 'paid') SELECT count(*) FROM paid"],
  [
    'recursive CTE',
    'WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10) SELECT sum(i) FROM n',
  ],
  ['materialized CTE', 'WITH x AS MATERIALIZED (SELECT 1 AS a) SELECT a FROM x'],
  [
    'window function',
    'SELECT id, row_number() OVER (PARTITION BY customer_id ORDER BY ordered_at) FROM shop.orders',
  ],
  [
    'window with frame',
    'SELECT avg(price) OVER (ORDER BY id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) FROM shop.products',
  ],
  [
    'percentile_cont within group',
    'SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY price) FROM shop.products',
  ],
  ['ordered-set mode()', 'SELECT mode() WITHIN GROUP (ORDER BY status) FROM shop.orders'],
  ['filter clause', "SELECT count(*) FILTER (WHERE status = 'paid') FROM shop.orders"],
  [
    'lateral join',
    'SELECT c.id, last.id FROM shop.customers c CROSS JOIN LATERAL (SELECT id FROM shop.orders o WHERE o.customer_id = c.id ORDER BY ordered_at DESC LIMIT 1) last',
  ],
  [
    'jsonb operators',
    "SELECT attributes->>'layout', attributes @> '{\"wireless\": true}', attributes ? 'dpi' FROM shop.products",
  ],
  ['jsonb functions', "SELECT jsonb_path_query(attributes, '$.inches') FROM shop.products"],
  ['jsonb_each in FROM', 'SELECT p.id, kv.key FROM shop.products p, jsonb_each(p.attributes) kv'],
  ['union', 'SELECT 1 UNION SELECT 2'],
  ['union all + order by', 'SELECT id FROM shop.orders UNION ALL SELECT id FROM shop.products ORDER BY 1'],
  ['intersect', 'SELECT customer_id FROM shop.orders INTERSECT SELECT id FROM shop.customers'],
  ['except', 'SELECT id FROM shop.customers EXCEPT SELECT customer_id FROM shop.orders'],
  ['scalar subquery', 'SELECT (SELECT max(price) FROM shop.products) AS top'],
  [
    'exists subquery',
    'SELECT * FROM shop.customers c WHERE EXISTS (SELECT 1 FROM shop.orders o WHERE o.customer_id = c.id)',
  ],
  ['in subquery', 'SELECT * FROM shop.products WHERE id IN (SELECT product_id FROM shop.order_items)'],
  [
    'derived table',
    'SELECT * FROM (SELECT id, price * 2 AS double FROM shop.products) AS t WHERE double > 10',
  ],
  ['VALUES', "VALUES (1, 'a'), (2, 'b')"],
  ['TABLE t', 'TABLE shop.customers'],
  ['generate_series', 'SELECT * FROM generate_series(1, 10) AS g'],
  [
    'CASE / COALESCE / NULLIF',
    "SELECT CASE WHEN price > 50 THEN 'high' ELSE 'low' END, coalesce(note, '-'), nullif(1, 1) FROM shop.products, shop.orders",
  ],
  ['casts', "SELECT '2024-01-01'::date + 1, CAST(price AS int), id::text FROM shop.products"],
  [
    'date functions',
    "SELECT date_trunc('month', ordered_at), extract(year FROM ordered_at), now() - ordered_at FROM shop.orders",
  ],
  [
    'string functions',
    "SELECT lower(email), split_part(email, '@', 2), regexp_replace(full_name, '\\s+', ' ') FROM shop.customers",
  ],
  ['array functions', 'SELECT unnest(tags), array_length(tags, 1), tags[1] FROM shop.products'],
  [
    'distinct on',
    'SELECT DISTINCT ON (customer_id) customer_id, id FROM shop.orders ORDER BY customer_id, ordered_at DESC',
  ],
  [
    'grouping sets',
    'SELECT status, customer_id, count(*) FROM shop.orders GROUP BY GROUPING SETS ((status), (customer_id), ())',
  ],
  ['rollup', 'SELECT status, count(*) FROM shop.orders GROUP BY ROLLUP (status)'],
  ['tablesample', 'SELECT * FROM shop.orders TABLESAMPLE SYSTEM (50)'],
  ['catalog read', "SELECT relname FROM pg_catalog.pg_class WHERE relkind = 'r'"],
  ['information_schema', "SELECT table_name FROM information_schema.tables WHERE table_schema = 'shop'"],
  ['current_setting', "SELECT current_setting('search_path')"],
  ['pg_size_pretty', "SELECT pg_size_pretty(pg_total_relation_size('shop.orders'))"],
  ['currval-free sequence read', 'SELECT last_value FROM shop.invoice_number_seq'],
  ['identifier that looks like a banned function', 'SELECT 1 AS pg_sleep, 2 AS nextval'],
  ['string that mentions DROP', "SELECT 'DROP TABLE x; COMMIT' AS text"],
  ['dollar-quoted string', 'SELECT $$ DELETE FROM x $$'],
  ['quoted mixed-case identifiers', 'SELECT "Id", "Value" FROM public."Mixed Case"'],
  ['EXPLAIN of a select', 'EXPLAIN SELECT * FROM shop.orders'],
  ['EXPLAIN ANALYZE of a select', 'EXPLAIN ANALYZE SELECT * FROM shop.orders WHERE id = 1'],
  [
    'EXPLAIN (options) of a CTE',
    'EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) WITH x AS (SELECT 1) SELECT * FROM x',
  ],
  ['SHOW', 'SHOW work_mem'],
  ['SHOW ALL', 'SHOW ALL'],
  ['FOR UPDATE inside a string literal', "SELECT 'x FOR UPDATE'"],
  ['unicode', "SELECT 'Zoë' AS naam, length('日本語')"],
]

const refused: ReadonlyArray<readonly [label: string, sql: string, code: SqlRefusalCode]> = [
  ['the published exploit', 'SELECT 1; COMMIT; DROP TABLE x', 'multiple_statements'],
  ['two selects', 'SELECT 1; SELECT 2', 'multiple_statements'],
  ['empty', '', 'empty'],
  ['whitespace', '  \n\t ', 'empty'],
  ['only a comment', '-- nothing here', 'empty'],
  ['only semicolons', ';;', 'empty'],
  ['syntax error', 'SELEC 1', 'syntax_error'],
  ['unterminated string', "SELECT 'abc", 'syntax_error'],
  ['BEGIN', 'BEGIN', 'not_read_only'],
  ['START TRANSACTION', 'START TRANSACTION READ WRITE', 'not_read_only'],
  ['COMMIT', 'COMMIT', 'not_read_only'],
  ['ROLLBACK', 'ROLLBACK', 'not_read_only'],
  ['SAVEPOINT', 'SAVEPOINT a', 'not_read_only'],
  ['RELEASE', 'RELEASE SAVEPOINT a', 'not_read_only'],
  ['PREPARE TRANSACTION', "PREPARE TRANSACTION 'x'", 'not_read_only'],
  ['COMMIT PREPARED', "COMMIT PREPARED 'x'", 'not_read_only'],
  ['SET', 'SET statement_timeout = 0', 'not_read_only'],
  ['SET LOCAL', 'SET LOCAL transaction_read_only = off', 'not_read_only'],
  ['SET TRANSACTION', 'SET TRANSACTION READ WRITE', 'not_read_only'],
  ['RESET', 'RESET ALL', 'not_read_only'],
  ['SET ROLE', 'SET ROLE postgres', 'not_read_only'],
  ['SET SESSION AUTHORIZATION', 'SET SESSION AUTHORIZATION postgres', 'not_read_only'],
  ['COPY TO PROGRAM', "COPY (SELECT 1) TO PROGRAM 'touch /tmp/pwned'", 'not_read_only'],
  ['COPY FROM file', "COPY shop.customers FROM '/etc/passwd'", 'not_read_only'],
  ['DO', 'DO $$ BEGIN PERFORM 1; END $$', 'not_read_only'],
  ['CALL', 'CALL some_procedure()', 'not_read_only'],
  ['LOCK', 'LOCK TABLE shop.orders', 'not_read_only'],
  ['LISTEN', 'LISTEN channel', 'not_read_only'],
  ['NOTIFY', 'NOTIFY channel', 'not_read_only'],
  ['UNLISTEN', 'UNLISTEN *', 'not_read_only'],
  ['VACUUM', 'VACUUM shop.orders', 'not_read_only'],
  ['ANALYZE', 'ANALYZE shop.orders', 'not_read_only'],
  ['CLUSTER', 'CLUSTER shop.orders', 'not_read_only'],
  ['REINDEX', 'REINDEX TABLE shop.orders', 'not_read_only'],
  ['CHECKPOINT', 'CHECKPOINT', 'not_read_only'],
  ['DISCARD', 'DISCARD ALL', 'not_read_only'],
  ['LOAD', "LOAD 'auto_explain'", 'not_read_only'],
  ['PREPARE', 'PREPARE q AS SELECT 1', 'not_read_only'],
  ['EXECUTE', 'EXECUTE q', 'not_read_only'],
  ['DEALLOCATE', 'DEALLOCATE ALL', 'not_read_only'],
  ['DECLARE CURSOR', 'DECLARE c CURSOR FOR SELECT 1', 'not_read_only'],
  ['FETCH', 'FETCH NEXT FROM c', 'not_read_only'],
  ['INSERT', "INSERT INTO shop.customers (email, full_name) VALUES ('a', 'b')", 'not_read_only'],
  ['UPDATE', 'UPDATE shop.products SET price = 0', 'not_read_only'],
  ['DELETE', 'DELETE FROM shop.orders', 'not_read_only'],
  [
    'MERGE',
    'MERGE INTO shop.products p USING (SELECT 1 AS id) s ON p.id = s.id WHEN MATCHED THEN DELETE',
    'not_read_only',
  ],
  ['TRUNCATE', 'TRUNCATE shop.orders', 'not_read_only'],
  ['DROP TABLE', 'DROP TABLE shop.orders', 'not_read_only'],
  ['CREATE TABLE', 'CREATE TABLE x (id int)', 'not_read_only'],
  ['CREATE TABLE AS', 'CREATE TABLE x AS SELECT 1', 'not_read_only'],
  ['ALTER TABLE', 'ALTER TABLE shop.orders ADD COLUMN y int', 'not_read_only'],
  ['GRANT', 'GRANT ALL ON shop.orders TO PUBLIC', 'not_read_only'],
  ['CREATE FUNCTION', 'CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$', 'not_read_only'],
  ['ALTER SYSTEM', "ALTER SYSTEM SET log_statement = 'none'", 'not_read_only'],
  ['CREATE EXTENSION', 'CREATE EXTENSION dblink', 'not_read_only'],
  ['COMMENT ON', "COMMENT ON TABLE shop.orders IS 'x'", 'not_read_only'],
  ['REFRESH MATERIALIZED VIEW', 'REFRESH MATERIALIZED VIEW analytics.daily_revenue', 'not_read_only'],
  [
    'data-modifying CTE: DELETE',
    'WITH x AS (DELETE FROM shop.orders RETURNING *) SELECT * FROM x',
    'not_read_only',
  ],
  [
    'data-modifying CTE: INSERT',
    "WITH x AS (INSERT INTO shop.customers (email, full_name) VALUES ('a', 'b') RETURNING id) SELECT * FROM x",
    'not_read_only',
  ],
  [
    'data-modifying CTE: UPDATE nested in a CTE',
    'WITH a AS (SELECT 1), b AS (UPDATE shop.products SET price = 0 RETURNING id) SELECT * FROM a',
    'not_read_only',
  ],
  ['SELECT INTO', 'SELECT * INTO new_table FROM shop.customers', 'not_read_only'],
  ['SELECT FOR UPDATE', 'SELECT * FROM shop.orders FOR UPDATE', 'not_read_only'],
  ['SELECT FOR SHARE', 'SELECT * FROM shop.orders FOR SHARE', 'not_read_only'],
  ['SELECT FOR NO KEY UPDATE', 'SELECT * FROM shop.orders FOR NO KEY UPDATE', 'not_read_only'],
  ['SELECT FOR KEY SHARE', 'SELECT * FROM shop.orders FOR KEY SHARE SKIP LOCKED', 'not_read_only'],
  ['FOR UPDATE in a subquery', 'SELECT * FROM (SELECT * FROM shop.orders FOR UPDATE) AS o', 'not_read_only'],
  [
    'FOR UPDATE in a CTE',
    'WITH o AS (SELECT * FROM shop.orders FOR UPDATE) SELECT * FROM o',
    'not_read_only',
  ],
  ['EXPLAIN ANALYZE DELETE', 'EXPLAIN ANALYZE DELETE FROM shop.orders', 'not_read_only'],
  [
    'EXPLAIN of an INSERT',
    "EXPLAIN INSERT INTO shop.customers (email, full_name) VALUES ('a', 'b')",
    'not_read_only',
  ],
  ['EXPLAIN ANALYZE CREATE TABLE AS', 'EXPLAIN ANALYZE CREATE TABLE x AS SELECT 1', 'not_read_only'],
  [
    'EXPLAIN ANALYZE of a data-modifying CTE',
    'EXPLAIN ANALYZE WITH x AS (DELETE FROM shop.orders RETURNING 1) SELECT * FROM x',
    'not_read_only',
  ],
  ['EXPLAIN ANALYZE calling pg_sleep', 'EXPLAIN ANALYZE SELECT pg_sleep(100)', 'not_read_only'],
  ['EXPLAIN EXECUTE', 'EXPLAIN EXECUTE q', 'not_read_only'],
  ['pg_read_file', "SELECT pg_read_file('/etc/passwd')", 'not_read_only'],
  ['pg_catalog.pg_read_file', "SELECT pg_catalog.pg_read_file('postgresql.conf')", 'not_read_only'],
  ['quoted "pg_read_file"', `SELECT "pg_read_file"('/etc/passwd')`, 'not_read_only'],
  ['upper-case quoted name', `SELECT "PG_READ_FILE"('/etc/passwd')`, 'not_read_only'],
  ['pg_read_binary_file', "SELECT pg_read_binary_file('/etc/passwd')", 'not_read_only'],
  ['pg_ls_dir', "SELECT * FROM pg_ls_dir('.')", 'not_read_only'],
  ['pg_ls_waldir', 'SELECT * FROM pg_ls_waldir()', 'not_read_only'],
  ['pg_stat_file', "SELECT pg_stat_file('postgresql.conf')", 'not_read_only'],
  ['lo_import', "SELECT lo_import('/etc/passwd')", 'not_read_only'],
  ['lo_export', "SELECT lo_export(16384, '/tmp/x')", 'not_read_only'],
  ['lo_open', 'SELECT lo_open(16384, 262144)', 'not_read_only'],
  ['lowrite', "SELECT lowrite(0, 'x')", 'not_read_only'],
  ['dblink', "SELECT * FROM dblink('dbname=postgres', 'DROP TABLE x') AS t(a text)", 'not_read_only'],
  ['dblink_exec', "SELECT dblink_exec('dbname=postgres', 'DROP TABLE x')", 'not_read_only'],
  ['pg_terminate_backend', 'SELECT pg_terminate_backend(pid) FROM pg_stat_activity', 'not_read_only'],
  ['pg_cancel_backend', 'SELECT pg_cancel_backend(1)', 'not_read_only'],
  ['pg_reload_conf', 'SELECT pg_reload_conf()', 'not_read_only'],
  ['pg_rotate_logfile', 'SELECT pg_rotate_logfile()', 'not_read_only'],
  ['set_config', "SELECT set_config('default_transaction_read_only', 'off', false)", 'not_read_only'],
  ['set_config schema-qualified', "SELECT pg_catalog.set_config('role', 'postgres', false)", 'not_read_only'],
  ['nextval', "SELECT nextval('shop.invoice_number_seq')", 'not_read_only'],
  ['setval', "SELECT setval('shop.invoice_number_seq', 1)", 'not_read_only'],
  ['pg_advisory_lock', 'SELECT pg_advisory_lock(1)', 'not_read_only'],
  ['pg_try_advisory_lock', 'SELECT pg_try_advisory_lock(1)', 'not_read_only'],
  ['pg_advisory_xact_lock', 'SELECT pg_advisory_xact_lock(1)', 'not_read_only'],
  ['pg_notify', "SELECT pg_notify('channel', 'payload')", 'not_read_only'],
  ['pg_sleep', 'SELECT pg_sleep(1)', 'not_read_only'],
  ['pg_sleep_for', "SELECT pg_sleep_for('1 minute')", 'not_read_only'],
  ['txid_current', 'SELECT txid_current()', 'not_read_only'],
  ['pg_current_xact_id', 'SELECT pg_current_xact_id()', 'not_read_only'],
  [
    'pg_create_logical_replication_slot',
    "SELECT pg_create_logical_replication_slot('s', 'pgoutput')",
    'not_read_only',
  ],
  ['pg_create_physical_replication_slot', "SELECT pg_create_physical_replication_slot('s')", 'not_read_only'],
  ['pg_switch_wal', 'SELECT pg_switch_wal()', 'not_read_only'],
  [
    'query_to_xml',
    "SELECT query_to_xml('DELETE FROM shop.orders RETURNING 1', true, false, '')",
    'not_read_only',
  ],
  [
    'query_to_xml_and_xmlschema',
    "SELECT query_to_xml_and_xmlschema('SELECT 1', true, false, '')",
    'not_read_only',
  ],
  ['cursor_to_xml', "SELECT cursor_to_xml('c', 1, true, false, '')", 'not_read_only'],
  [
    'ts_stat (runs an SQL string)',
    "SELECT * FROM ts_stat('SELECT to_tsvector(pg_read_file(''/etc/passwd''))')",
    'not_read_only',
  ],
  [
    'crosstab (runs an SQL string)',
    "SELECT * FROM crosstab('SELECT nextval(''s''), 1, 2') AS t(a int, b int)",
    'not_read_only',
  ],
  [
    'pg_background_launch (own transaction)',
    "SELECT pg_background_launch('DELETE FROM shop.orders')",
    'not_read_only',
  ],
  ['http_get (network)', "SELECT http_get('http://169.254.169.254/')", 'not_read_only'],
  ['pg_logical_emit_message', "SELECT pg_logical_emit_message(true, 'p', 'x')", 'not_read_only'],
  [
    'denied call in a subquery',
    'SELECT * FROM shop.orders WHERE id = (SELECT pg_sleep(10)::text::int)',
    'not_read_only',
  ],
  [
    'denied call in a CTE',
    "WITH x AS (SELECT nextval('shop.invoice_number_seq')) SELECT * FROM x",
    'not_read_only',
  ],
  ['denied call as a function argument', "SELECT length(pg_read_file('/etc/passwd'))", 'not_read_only'],
  ['denied call in ORDER BY', 'SELECT id FROM shop.orders ORDER BY pg_advisory_lock(id)', 'not_read_only'],
  [
    'denied call in a lateral subquery',
    "SELECT * FROM shop.customers c, LATERAL (SELECT set_config('role', 'x', false)) s",
    'not_read_only',
  ],
  [
    'denied call in a window definition',
    "SELECT sum(1) OVER (ORDER BY nextval('s')) FROM shop.orders",
    'not_read_only',
  ],
  ['denied call in ROWS FROM', "SELECT * FROM ROWS FROM (pg_ls_dir('.'))", 'not_read_only'],
  ['denied call in a union arm', 'SELECT 1 UNION SELECT pg_sleep(5)::text::int', 'not_read_only'],
  ['denied call in VALUES', "VALUES (pg_read_file('/etc/passwd'))", 'not_read_only'],
  ['denied call in a CASE', 'SELECT CASE WHEN true THEN pg_terminate_backend(1) END', 'not_read_only'],
  ['denied call inside EXPLAIN', "EXPLAIN SELECT pg_read_file('/etc/passwd')", 'not_read_only'],
  [
    'denied call in a default expression (DDL anyway)',
    "CREATE TABLE x (id int DEFAULT nextval('s'))",
    'not_read_only',
  ],
]

describe('checkReadOnlySql', () => {
  it.each(accepted)('accepts %s', async (_label, sql) => {
    const result = await checkReadOnlySql(sql)
    expect(result).toMatchObject({ ok: true })
  })

  it.each(refused)('refuses %s', async (_label, sql, code) => {
    const result = await checkReadOnlySql(sql)
    expect(result).toMatchObject({ ok: false, code })
    if (!result.ok) expect(result.message.length).toBeGreaterThan(10)
  })

  it('has at least 60 cases each way', () => {
    expect(accepted.length).toBeGreaterThanOrEqual(50)
    expect(refused.length).toBeGreaterThanOrEqual(60)
    expect(accepted.length + refused.length).toBeGreaterThanOrEqual(120)
  })

  it('tells which statement kind it accepted', async () => {
    expect(await checkReadOnlySql('SELECT 1')).toMatchObject({
      ok: true,
      statement: 'select',
      analyze: false,
    })
    expect(await checkReadOnlySql('SHOW work_mem')).toMatchObject({
      ok: true,
      statement: 'show',
      analyze: false,
    })
    expect(await checkReadOnlySql('EXPLAIN SELECT 1')).toMatchObject({
      ok: true,
      statement: 'explain',
      analyze: false,
    })
    expect(await checkReadOnlySql('EXPLAIN ANALYZE SELECT 1')).toMatchObject({
      ok: true,
      statement: 'explain',
      analyze: true,
    })
    expect(await checkReadOnlySql('EXPLAIN (ANALYZE false) SELECT 1')).toMatchObject({
      ok: true,
      statement: 'explain',
      analyze: false,
    })
  })

  it('reports the position of the second statement of the exploit', async () => {
    const sql = 'SELECT 1; COMMIT; DROP TABLE x'
    const result = await checkReadOnlySql(sql)
    expect(result).toMatchObject({
      ok: false,
      code: 'multiple_statements',
      position: sql.indexOf('COMMIT') + 1,
    })
    if (!result.ok) expect(result.message).toContain('found 3')
  })

  it('reports syntax errors with a 1-based position', async () => {
    const result = await checkReadOnlySql('SELECT * FROM shop.orders WHERE')
    expect(result).toMatchObject({ ok: false, code: 'syntax_error', position: 32 })
  })

  it('reports the character position of a denied call after multi-byte text', async () => {
    const sql = "SELECT 'ëëë', pg_sleep(1)"
    const result = await checkReadOnlySql(sql)
    expect(result).toMatchObject({ ok: false, code: 'not_read_only', position: sql.indexOf('pg_sleep') + 1 })
    if (!result.ok) expect(result.message).toContain('pg_sleep')
  })

  it('names the nested write it found', async () => {
    const result = await checkReadOnlySql('WITH x AS (DELETE FROM shop.orders RETURNING *) SELECT * FROM x')
    expect(result.ok).toBe(false)
    if (!result.ok) expect(result.message).toContain('DELETE')
  })

  it('survives very deeply nested expressions without overflowing the stack', async () => {
    const depth = 1_000
    const sql = `SELECT ${'('.repeat(depth)}1${')'.repeat(depth)}`
    const result = await checkReadOnlySql(sql)
    // Either accepted or refused by the parser's own depth limit, but never a thrown error.
    expect(typeof result.ok).toBe('boolean')
    const hidden = `SELECT ${'coalesce('.repeat(200)}pg_sleep(1)${')'.repeat(200)}`
    expect(await checkReadOnlySql(hidden)).toMatchObject({ ok: false, code: 'not_read_only' })
  })
})

describe('verdict cache', () => {
  it('gives a repeated text the verdict it gave the first time, refusals included', async () => {
    const accepted = 'SELECT lower(name) FROM shop.products WHERE price > $1'
    const first = await checkReadOnlySql(accepted)
    expect(first).toMatchObject({ ok: true, statement: 'select' })
    expect(await checkReadOnlySql(accepted)).toBe(first)
    const refused = 'SELECT 1; COMMIT; DROP TABLE shop.orders'
    const refusal = await checkReadOnlySql(refused)
    expect(refusal).toMatchObject({ ok: false, code: 'multiple_statements' })
    expect(await checkReadOnlySql(refused)).toBe(refusal)
    // A text that differs by one character is judged on its own.
    expect(await checkReadOnlySql('SELECT 1; COMMIT; DROP TABLE shop.orders;')).not.toBe(refusal)
  })

  it('stays bounded, keeps the most recently used texts, and never keeps long texts', async () => {
    const kept = 'SELECT 42 AS answer'
    const verdict = await checkReadOnlySql(kept)
    for (let index = 0; index < verdictCacheEntries + 50; index++) {
      await checkReadOnlySql(`SELECT ${index} AS n`)
      // Used again and again: it stays while older, unused texts are dropped.
      expect(await checkReadOnlySql(kept)).toBe(verdict)
    }
    expect(cachedVerdicts()).toBe(verdictCacheEntries)
    const long = `SELECT '${'x'.repeat(cachedSqlMaxLength)}' AS long`
    const first = await checkReadOnlySql(long)
    expect(first).toMatchObject({ ok: true })
    expect(await checkReadOnlySql(long)).not.toBe(first)
    expect(await checkReadOnlySql(long)).toEqual(first)
  })
})

describe('deniedFunctionReason', () => {
  it.each([
    ['pg_ls_logdir'],
    ['pg_ls_tmpdir'],
    ['lo_unlink'],
    ['lo_from_bytea'],
    ['dblink_connect'],
    ['pg_try_advisory_xact_lock_shared'],
    ['pg_drop_replication_slot'],
    ['table_to_xml'],
    ['pg_stat_reset'],
    ['txid_current_if_assigned'],
    ['pg_file_write'],
    ['pg_log_standby_snapshot'],
    ['heap_force_kill'],
    ['query_export_to_s3'],
    ['connectby'],
  ])('denies %s', (name) => {
    expect(deniedFunctionReason(name)).toBeTypeOf('string')
  })

  it.each([
    ['count'],
    ['pg_size_pretty'],
    ['current_setting'],
    ['currval'],
    ['pg_get_viewdef'],
    ['lower'],
    ['pg_last_wal_replay_lsn'],
    ['to_tsvector'],
    ['pg_is_in_recovery'],
  ])('allows %s', (name) => {
    expect(deniedFunctionReason(name)).toBeUndefined()
  })
})
