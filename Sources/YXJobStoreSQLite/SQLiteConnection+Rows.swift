import SQLiteNIO
import YXQueue

extension SQLiteConnection {
    /// Runs one statement and returns its rows, collected under a lock.
    ///
    /// sqlite-nio's own `query(_:_:) async -> [SQLiteRow]` appends to an unsynchronized variable on its
    /// thread pool and reads it after the `await`. What orders the two is the continuation's resumption
    /// inside the Swift concurrency runtime, which ThreadSanitizer cannot see (the runtime is not
    /// instrumented), so it reported that read as a race in a `yxdownload worker` under
    /// `swift test --sanitize=thread`. A lock around the rows gives the same result with an order that
    /// ThreadSanitizer sees. Every statement of the store goes through here.
    package func rows(_ sql: String, _ binds: [SQLiteData] = []) async throws -> [SQLiteRow] {
        let rows = Locked<[SQLiteRow]>([])
        try await query(sql, binds) { row in rows.withLock { $0.append(row) } }
        return rows.withLock { $0 }
    }
}
