import Logging
import YXJobStore
import YXJobStorePostgres
import YXJobStoreSQLite

/// Opens the store at a location: a `postgres://` URL, or else an SQLite file path.
func openStore(_ location: String, schema: String?, logger: Logger) async throws -> any JobStore {
    if PostgresLocation.isPostgresURL(location) {
        var configuration = PostgresJobStore.Configuration()
        if let schema { configuration.schema = schema }
        return try await PostgresJobStore.open(url: location, configuration: configuration, logger: logger)
    }
    return try await SQLiteJobStore.open(path: location, logger: logger)
}
