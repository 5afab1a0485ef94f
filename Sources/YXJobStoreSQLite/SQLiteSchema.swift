import GRDB
import YXJobStore

/// The versioned schema of the SQLite store: each migration moves the database one version up, in a
/// write transaction, and records the version in `store_meta`.
enum SQLiteSchema {
    /// The newest version this library writes.
    static let latestVersion = 3

    /// Statements of each version, from 1.
    static let migrations: [[String]] = [
        // 1: jobs, their dependencies, the concurrency limits.
        [
            """
            CREATE TABLE jobs (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                name TEXT NOT NULL,
                payload BLOB NOT NULL,
                state TEXT NOT NULL,
                concurrency_key TEXT NOT NULL,
                priority INTEGER NOT NULL DEFAULT 0,
                run_at INTEGER NOT NULL,
                created_at INTEGER NOT NULL,
                started_at INTEGER,
                finished_at INTEGER,
                attempt INTEGER NOT NULL DEFAULT 0,
                failures INTEGER NOT NULL DEFAULT 0,
                lease_expiries INTEGER NOT NULL DEFAULT 0,
                max_attempts INTEGER NOT NULL,
                retry_initial_ms INTEGER NOT NULL,
                retry_max_ms INTEGER NOT NULL,
                retry_jitter REAL NOT NULL,
                timeout_ms INTEGER,
                unique_key TEXT,
                has_dependents INTEGER NOT NULL DEFAULT 0,
                owner TEXT,
                lease_until INTEGER,
                cancel_requested INTEGER NOT NULL DEFAULT 0,
                progress REAL,
                units_done INTEGER,
                units_total INTEGER,
                message TEXT
            )
            """,
            // Claims walk ready jobs in priority order, by name or by concurrency key.
            "CREATE INDEX jobs_ready ON jobs (name, priority DESC, run_at, id) WHERE state = 'available'",
            "CREATE INDEX jobs_ready_key ON jobs (concurrency_key, priority DESC, run_at, id) WHERE state = 'available'",
            // Lease recovery and the running count of each limited key (merged into one in version 3).
            "CREATE INDEX jobs_running ON jobs (lease_until) WHERE state = 'running'",
            "CREATE INDEX jobs_running_key ON jobs (concurrency_key) WHERE state = 'running'",
            "CREATE INDEX jobs_waiting ON jobs (id) WHERE state = 'waiting'",
            "CREATE INDEX jobs_finished ON jobs (finished_at) WHERE finished_at IS NOT NULL",
            // A unique key is unique among live jobs only: the database refuses the second one.
            """
            CREATE UNIQUE INDEX jobs_unique_live ON jobs (unique_key)
                WHERE unique_key IS NOT NULL AND state IN ('waiting', 'available', 'running')
            """,
            """
            CREATE TABLE job_dependencies (
                job_id INTEGER NOT NULL,
                depends_on INTEGER NOT NULL,
                PRIMARY KEY (job_id, depends_on)
            ) WITHOUT ROWID
            """,
            "CREATE INDEX job_dependencies_on ON job_dependencies (depends_on, job_id)",
            """
            CREATE TABLE job_limits (
                key TEXT PRIMARY KEY,
                max_running INTEGER NOT NULL
            ) WITHOUT ROWID
            """,
        ],
        // 2: the rest of YXQueue's RetryPolicy (the longest Retry-After waited for, which errors are
        // retried), and the result a succeeded job returned. Older rows keep what the store did before:
        // every error retried.
        [
            "ALTER TABLE jobs ADD COLUMN retry_max_after_ms INTEGER NOT NULL DEFAULT 3600000",
            "ALTER TABLE jobs ADD COLUMN retry_scope TEXT NOT NULL DEFAULT 'all_errors'",
            "ALTER TABLE jobs ADD COLUMN result BLOB",
        ],
        // 3: one index of running jobs instead of two. Every claim and every outcome moves a job into or
        // out of the running ones, and each index it is in is one more page written to the WAL per
        // commit: with Python's sqlite3 on this schema, a claim plus an outcome of one job went from
        // 8.7–9.2k to 10.0–11.2k a second. Lease recovery now reads all running jobs (as many as the
        // workers' slots) instead of the expired ones only.
        [
            "DROP INDEX jobs_running",
            "DROP INDEX jobs_running_key",
            "CREATE INDEX jobs_running ON jobs (concurrency_key, lease_until) WHERE state = 'running'",
        ],
    ]

    /// Throws ``JobStoreError/invalidLocation(_:)`` when the database holds other tables and no store:
    /// it is someone else's, and is not written to.
    static func refuseForeign(_ db: Database) throws {
        guard try db.rows("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'store_meta'").isEmpty else { return }
        let others = try db.rows(
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%' ORDER BY name LIMIT 4"
        ).map { try $0.string("name") }
        guard others.isEmpty else {
            throw JobStoreError.invalidLocation(
                "the database holds other tables (\(others.joined(separator: ", "))) and no job store; it is left as it was")
        }
    }

    /// Brings the database to ``latestVersion``; creates it when empty.
    ///
    /// A store already at that version is only read: opening it (a worker, `status`) does not wait for
    /// another process's write transaction, which a long enqueue holds for seconds.
    ///
    /// - Throws: ``JobStoreError/schemaTooNew(found:supported:)`` for a database of a newer library;
    ///   ``JobStoreError/invalidLocation(_:)`` for a database that holds other tables and no store.
    static func migrate(_ db: Database) throws {
        try refuseForeign(db)  // again: a file made between the first look and the store's connection
        let hasMeta = try !db.rows("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'store_meta'").isEmpty
        if hasMeta, let found = try db.rows("SELECT value FROM store_meta WHERE key = 'schema_version'").first?.int("value") {
            if found == latestVersion { return }
            if found > latestVersion { throw JobStoreError.schemaTooNew(found: found, supported: latestVersion) }
        }
        try db.run("CREATE TABLE IF NOT EXISTS store_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID")
        try db.run("BEGIN IMMEDIATE")
        do {
            let rows = try db.rows("SELECT value FROM store_meta WHERE key = 'schema_version'")
            let current = try rows.first?.int("value") ?? 0
            guard current <= latestVersion else {
                throw JobStoreError.schemaTooNew(found: current, supported: latestVersion)
            }
            for version in (current + 1)..<(latestVersion + 1) {
                for statement in migrations[version - 1] {
                    try db.run(statement)
                }
                try db.run(
                    "INSERT INTO store_meta (key, value) VALUES ('schema_version', ?) "
                        + "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    [.integer(version)]
                )
            }
            try db.run("COMMIT")
        } catch {
            try? db.run("ROLLBACK")
            throw error
        }
    }
}
