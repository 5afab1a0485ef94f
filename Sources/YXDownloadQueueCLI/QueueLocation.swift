import Foundation
import YXDownloadCLI
import Logging
import YXJobStore
import YXJobStorePostgres
import YXJobStoreSQLite
import YXTerminal

/// The `--queue STORE` of `enqueue`, `worker` and `status`: a `postgres://` (or `postgresql://`) URL,
/// or else the path of an SQLite file (created on first use). A PostgreSQL URL may name the schema of
/// the store's tables with `?schema=NAME` (default: the store's own).
struct QueueLocation: Sendable, CustomStringConvertible {
    /// As given.
    var text: String

    var isPostgres: Bool { PostgresLocation.isPostgresURL(text) }

    /// What messages show: the path, or the URL without its password.
    var description: String {
        guard isPostgres, var components = URLComponents(string: text), components.password != nil else { return text }
        components.password = "***"
        return components.string ?? text
    }

    /// Opens the store; an SQLite file's folder is created if missing.
    func open(logger: Logger) async throws -> any JobStore {
        if isPostgres {
            let (url, schema) = postgresURLAndSchema
            var configuration = PostgresJobStore.Configuration()
            if let schema { configuration.schema = schema }
            return try await PostgresJobStore.open(url: url, configuration: configuration, logger: logger)
        }
        if let folderProblem { throw QueueLocationError(description: folderProblem) }
        let folder = URL(fileURLWithPath: text).deletingLastPathComponent()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return try await SQLiteJobStore.open(path: text, logger: logger)
    }

    /// Why an SQLite store cannot be at this path: it names a folder (an existing one, or a path that ends
    /// with `/`). SQLite's own word for an existing folder is "disk I/O error".
    var folderProblem: String? {
        guard !isPostgres else { return nil }
        var isFolder: ObjCBool = false
        guard text.hasSuffix("/") || (FileManager.default.fileExists(atPath: text, isDirectory: &isFolder) && isFolder.boolValue)
        else { return nil }
        return "it names a folder; give the store a file name, such as \((text as NSString).appendingPathComponent("jobs.sqlite"))"
    }

    /// ``open(logger:)`` for a command: on failure says why on standard error and returns `nil` (the
    /// command exits 1).
    func open(logger: Logger, console: Console) async -> (any JobStore)? {
        do {
            return try await open(logger: logger)
        } catch {
            console.writeErr("yxdownload: cannot open the queue \(self): \(StoreErrorText.short(error))\(folderHint)\n")
            return nil
        }
    }

    /// Why an SQLite file that can be read may still not open: SQLite keeps its log and shared memory
    /// in files beside the database (`-wal`, `-shm`), and a reader must make them when they are not there
    /// (a store closed cleanly has none). Empty when the folder can be written, or for PostgreSQL.
    private var folderHint: String {
        guard !isPostgres else { return "" }
        let folder = URL(fileURLWithPath: text).deletingLastPathComponent().path
        guard access(folder, W_OK | X_OK) != 0 else { return "" }
        let readOnly = errno == EROFS
        let shown = (text as NSString).deletingLastPathComponent
        return " (SQLite makes \(text)-wal and -shm beside the store even to read it, and the folder "
            + "\(shown.isEmpty ? "." : shown) cannot be written: "
            + (readOnly ? "it is on a read-only file system; copy the store to a writable one)" : "give this user write access to it)")
    }

    /// A PostgreSQL URL without its `schema` query item, and that item's value.
    private var postgresURLAndSchema: (url: String, schema: String?) {
        guard var components = URLComponents(string: text),
            let item = components.queryItems?.first(where: { $0.name == "schema" })
        else { return (text, nil) }
        components.queryItems = components.queryItems?.filter { $0.name != "schema" }
        if components.queryItems?.isEmpty == true { components.queryItems = nil }
        return (components.string ?? text, item.value)
    }

    /// Checks the text: not empty, and a PostgreSQL URL that parses.
    func validate() throws(QueueLocationError) {
        guard !text.isEmpty else { throw QueueLocationError(description: "--queue must not be empty.") }
        if isPostgres {
            do {
                _ = try PostgresLocation(url: postgresURLAndSchema.url)
            } catch {
                throw QueueLocationError(description: "--queue \(description) is not a usable PostgreSQL URL: \(error)")
            }
        }
    }
}

/// A `--queue` that cannot name a store.
struct QueueLocationError: Error, CustomStringConvertible {
    var description: String
}
