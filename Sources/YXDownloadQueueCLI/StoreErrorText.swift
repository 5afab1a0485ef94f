import YXJobStorePostgres

/// A store's error as a person reads it: the database's own words, without the statement that failed.
///
/// SQLite's errors (through GRDB) end with ` - while executing `…``, the whole SQL statement over several
/// lines: `SQLite error 8: attempt to write a readonly database` is what says what to do.
enum StoreErrorText {
    static func short(_ error: any Error) -> String {
        // postgres-nio gives every error one generic description: its code and its cause instead.
        if let text = PostgresErrorText.text(for: error) { return "PostgreSQL: " + text }
        let text = String(describing: error)
        guard let statement = text.range(of: " - while executing `") else { return text }
        return String(text[..<statement.lowerBound])
    }
}
