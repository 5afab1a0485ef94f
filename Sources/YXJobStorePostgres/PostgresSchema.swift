import Logging
import PostgresNIO
import YXJobStore

/// The versioned schema of the PostgreSQL store, in a schema (namespace) of its own: each migration
/// moves the database one version up, in one transaction, under an advisory lock so that processes
/// starting together migrate once.
enum PostgresSchema {
    /// The newest version this library writes.
    static let latestVersion = 2

    /// Statements of each version, from 1; `{s}` stands for the quoted schema name.
    static let migrations: [[String]] = [
        // 1: jobs, their dependencies, the concurrency limits.
        [
            """
            CREATE TABLE {s}.jobs (
                id bigserial PRIMARY KEY,
                name text NOT NULL,
                payload bytea NOT NULL,
                state text NOT NULL,
                concurrency_key text NOT NULL,
                priority integer NOT NULL DEFAULT 0,
                run_at timestamptz NOT NULL,
                created_at timestamptz NOT NULL DEFAULT now(),
                started_at timestamptz,
                finished_at timestamptz,
                attempt integer NOT NULL DEFAULT 0,
                failures integer NOT NULL DEFAULT 0,
                lease_expiries integer NOT NULL DEFAULT 0,
                max_attempts integer NOT NULL,
                retry_initial_ms bigint NOT NULL,
                retry_max_ms bigint NOT NULL,
                retry_jitter double precision NOT NULL,
                timeout_ms bigint,
                unique_key text,
                has_dependents boolean NOT NULL DEFAULT false,
                owner text,
                lease_until timestamptz,
                cancel_requested boolean NOT NULL DEFAULT false,
                progress double precision,
                units_done bigint,
                units_total bigint,
                message text
            )
            """,
            "CREATE INDEX jobs_ready ON {s}.jobs (name, priority DESC, run_at, id) WHERE state = 'available'",
            """
            CREATE INDEX jobs_ready_key ON {s}.jobs (concurrency_key, priority DESC, run_at, id)
                WHERE state = 'available'
            """,
            "CREATE INDEX jobs_running ON {s}.jobs (lease_until) WHERE state = 'running'",
            "CREATE INDEX jobs_running_key ON {s}.jobs (concurrency_key) WHERE state = 'running'",
            "CREATE INDEX jobs_waiting ON {s}.jobs (id) WHERE state = 'waiting'",
            "CREATE INDEX jobs_finished ON {s}.jobs (finished_at) WHERE finished_at IS NOT NULL",
            """
            CREATE UNIQUE INDEX jobs_unique_live ON {s}.jobs (unique_key)
                WHERE unique_key IS NOT NULL AND state IN ('waiting', 'available', 'running')
            """,
            """
            CREATE TABLE {s}.job_dependencies (
                job_id bigint NOT NULL,
                depends_on bigint NOT NULL,
                PRIMARY KEY (job_id, depends_on)
            )
            """,
            "CREATE INDEX job_dependencies_on ON {s}.job_dependencies (depends_on, job_id)",
            "CREATE TABLE {s}.job_limits (key text PRIMARY KEY, max_running integer NOT NULL)",
        ],
        // 2: the rest of YXQueue's RetryPolicy (the longest Retry-After waited for, which errors are
        // retried), and the result a succeeded job returned. Older rows keep what the store did before:
        // every error retried. Constant defaults: no table rewrite.
        [
            "ALTER TABLE {s}.jobs ADD COLUMN retry_max_after_ms bigint NOT NULL DEFAULT 3600000",
            "ALTER TABLE {s}.jobs ADD COLUMN retry_scope text NOT NULL DEFAULT 'all_errors'",
            "ALTER TABLE {s}.jobs ADD COLUMN result bytea",
        ],
    ]

    /// Brings the schema to ``latestVersion``; creates it when missing.
    ///
    /// - Throws: ``JobStoreError/schemaTooNew(found:supported:)`` for a database of a newer library.
    static func migrate(_ connection: PostgresConnection, schema: String, logger: Logger) async throws {
        let quoted = PostgresJobStore.quote(schema)
        try await connection.query("BEGIN", logger: logger)
        do {
            var lockBinds = PostgresBindings()
            lockBinds.append("yxjobstore.migrate.\(schema)")
            try await connection.query(
                PostgresQuery(unsafeSQL: "SELECT pg_advisory_xact_lock(hashtext($1))", binds: lockBinds),
                logger: logger
            )
            try await connection.query(PostgresQuery(unsafeSQL: "CREATE SCHEMA IF NOT EXISTS \(quoted)"), logger: logger)
            try await connection.query(
                PostgresQuery(
                    unsafeSQL: "CREATE TABLE IF NOT EXISTS \(quoted).store_meta (key text PRIMARY KEY, value integer NOT NULL)"
                ),
                logger: logger
            )
            let rows = try await connection.query(
                PostgresQuery(unsafeSQL: "SELECT value FROM \(quoted).store_meta WHERE key = 'schema_version'"),
                logger: logger
            ).collect()
            let current = try rows.first.map { try $0.makeRandomAccess()[0].decode(Int.self) } ?? 0
            guard current <= latestVersion else {
                throw JobStoreError.schemaTooNew(found: current, supported: latestVersion)
            }
            for version in (current + 1)..<(latestVersion + 1) {
                for statement in migrations[version - 1] {
                    let sql = statement.replacingOccurrences(of: "{s}", with: quoted)
                    try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger)
                }
                var binds = PostgresBindings()
                binds.append(version)
                try await connection.query(
                    PostgresQuery(
                        unsafeSQL: """
                            INSERT INTO \(quoted).store_meta (key, value) VALUES ('schema_version', $1)
                            ON CONFLICT (key) DO UPDATE SET value = excluded.value
                            """,
                        binds: binds
                    ),
                    logger: logger
                )
            }
            try await connection.query("COMMIT", logger: logger)
        } catch {
            _ = try? await connection.query("ROLLBACK", logger: logger)
            throw error
        }
    }
}
