import Foundation
import PostgresNIO
import YXJobStore

/// A `postgres://` URL taken apart: where the server is, who connects, which database, TLS.
///
/// Understood forms (as libpq reads them):
/// - `postgres://user:password@host:5432/database?sslmode=disable`
/// - `postgresql://user@localhost/database` (port 5432 when absent)
/// - `postgres://user@/database?host=/var/run/postgresql` (a Unix socket folder; `.s.PGSQL.<port>` in it)
///
/// `sslmode` is `disable`, `prefer` (the default: TLS when the server offers it) or `require`
/// (`verify-full` is read as `require`: certificates are verified).
public struct PostgresLocation: Sendable, Hashable {
    /// The server's host name or address.
    public var host: String
    /// The server's port (5432 by default).
    public var port: Int
    /// The Unix socket folder, when the URL names one with `host=`.
    public var socketDirectory: String?
    /// The user to connect as.
    public var username: String
    /// Its password, if the URL has one.
    public var password: String?
    /// The database; the server uses the user's name when absent.
    public var database: String?
    /// Whether and how the connection uses TLS.
    public var tls: TLSMode

    /// How the connection uses TLS.
    public enum TLSMode: String, Sendable, Hashable {
        case disable
        case prefer
        case require
    }

    /// Parses a URL.
    ///
    /// - Throws: ``JobStoreError/invalidLocation(_:)`` when it is not a `postgres://` URL.
    public init(url: String) throws {
        guard let components = URLComponents(string: url),
            let scheme = components.scheme?.lowercased(), scheme == "postgres" || scheme == "postgresql"
        else {
            throw JobStoreError.invalidLocation("not a postgres:// URL")
        }
        let query = Dictionary(
            (components.queryItems ?? []).map { ($0.name, $0.value ?? "") },
            uniquingKeysWith: { _, last in last }
        )
        let hostParameter = query["host"].flatMap { $0.isEmpty ? nil : $0 }
        if let hostParameter, hostParameter.hasPrefix("/") {
            socketDirectory = hostParameter
            host = "localhost"
        } else {
            socketDirectory = nil
            host = hostParameter ?? components.host.flatMap { $0.isEmpty ? nil : $0 } ?? "localhost"
        }
        port = components.port ?? query["port"].flatMap(Int.init) ?? 5432
        username = components.user?.removingPercentEncoding ?? query["user"] ?? "postgres"
        password = components.password?.removingPercentEncoding ?? query["password"]
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        database = path.isEmpty ? query["dbname"] : path.removingPercentEncoding
        switch query["sslmode"]?.lowercased() {
        case nil, "", "prefer", "allow": tls = .prefer
        case "disable": tls = .disable
        case "require", "verify-ca", "verify-full": tls = .require
        case let other?: throw JobStoreError.invalidLocation("unknown sslmode \(other)")
        }
    }

    /// Whether `location` looks like a PostgreSQL URL (rather than an SQLite file path).
    public static func isPostgresURL(_ location: String) -> Bool {
        let lowered = location.lowercased()
        return lowered.hasPrefix("postgres://") || lowered.hasPrefix("postgresql://")
    }

    /// The postgres-nio client configuration for this location (for a program that wants its own
    /// connections to the same database).
    public func clientConfiguration() -> PostgresClient.Configuration {
        var configuration: PostgresClient.Configuration
        if let socketDirectory {
            let socket = (socketDirectory as NSString).appendingPathComponent(".s.PGSQL.\(port)")
            configuration = PostgresClient.Configuration(
                unixSocketPath: socket,
                username: username,
                password: password,
                database: database
            )
        } else {
            let tlsSetting: PostgresClient.Configuration.TLS =
                switch tls {
                case .disable: .disable
                case .prefer: .prefer(.makeClientConfiguration())
                case .require: .require(.makeClientConfiguration())
                }
            configuration = PostgresClient.Configuration(
                host: host,
                port: port,
                username: username,
                password: password,
                database: database,
                tls: tlsSetting
            )
        }
        return configuration
    }

    /// The configuration of a single connection to this location (the store migrates its schema on one,
    /// before its pool runs).
    ///
    /// - Throws: NIOSSL's error when a TLS context cannot be made.
    func connectionConfiguration() throws -> PostgresConnection.Configuration {
        if let socketDirectory {
            let socket = (socketDirectory as NSString).appendingPathComponent(".s.PGSQL.\(port)")
            return PostgresConnection.Configuration(
                unixSocketPath: socket,
                username: username,
                password: password,
                database: database
            )
        }
        let tlsSetting: PostgresConnection.Configuration.TLS =
            switch tls {
            case .disable: .disable
            case .prefer: .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
            case .require: .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
            }
        return PostgresConnection.Configuration(
            host: host,
            port: port,
            username: username,
            password: password,
            database: database,
            tls: tlsSetting
        )
    }
}
