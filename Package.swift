// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "YXQueue",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "YXQueue", targets: ["YXQueue"]),
        .library(name: "YXDownload", targets: ["YXDownload"]),
        .executable(name: "yxdownload", targets: ["yxdownload"]),
        // `yxdownload enqueue | worker | status` run in this program, which `yxdownload` becomes (exec):
        // the job stores' drivers stay out of every plain download. Install it next to `yxdownload`.
        .executable(name: "yxdownload-queue", targets: ["yxdownload-queue"]),
        // Durable jobs: the store protocol and the worker, then one product per database, so that a user of
        // YXQueue alone builds neither driver.
        .library(name: "YXJobStore", targets: ["YXJobStore"]),
        .library(name: "YXJobStoreSQLite", targets: ["YXJobStoreSQLite"]),
        .library(name: "YXJobStorePostgres", targets: ["YXJobStorePostgres"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        // `swift package generate-documentation` for the DocC catalogs. Build-time only.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        // The job stores and their worker.
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        // GRDB for SQLite: it keeps prepared statements (sqlite-nio compiles every statement anew, which was
        // four fifths of an unbatched claim). It links the system's libsqlite3 (libsqlite3-dev on Debian).
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
    ],
    targets: [
        // The job-queue framework: Foundation, Dispatch and Synchronization, plus three small API packages
        // (Deque, swift-log's Logger, swift-metrics' counters and timers); no C library.
        .target(
            name: "YXQueue",
            dependencies: [
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ]
        ),

        // libcurl through pkg-config, with typed wrappers for its variadic functions.
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"]), .brew(["curl"])]
        ),
        // The curl-backed downloader: the reference job of the framework.
        .target(
            name: "YXDownload",
            dependencies: [
                "YXQueue",
                "CCurl",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ]
        ),

        // Terminal output shared by the command line and the demo: whole writes, a live area redrawn in
        // place with lines printed above it, text widths, sizes and rates. No ArgumentParser.
        .target(name: "YXTerminal", dependencies: ["YXQueue"]),
        // The command line: options (of every subcommand), the input list, the run, the renderers. A library
        // so tests reach it. No job store: a download does not load them.
        .target(
            name: "YXDownloadCLI",
            dependencies: [
                "YXDownload",
                "YXQueue",
                "YXTerminal",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // `yxdownload urls.txt -j 5`
        .executableTarget(name: "yxdownload", dependencies: ["YXDownloadCLI"]),
        // What `yxdownload enqueue | worker | status` do: downloads kept in a job store.
        .target(
            name: "YXDownloadQueueCLI",
            dependencies: [
                "YXDownloadCLI",
                "YXDownload",
                "YXQueue",
                "YXTerminal",
                "YXJobStore",
                "YXJobStoreSQLite",
                "YXJobStorePostgres",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(name: "yxdownload-queue", dependencies: ["YXDownloadQueueCLI"]),

        // A loopback HTTP server for tests, benchmarks and the demo (SwiftNIO). Not a product.
        .target(
            name: "YXTestServer",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),

        // The demo: sample files on loopback, downloads with live progress, a custom Job. `scripts/demo`.
        .executableTarget(
            name: "YXQueueDemo",
            dependencies: ["YXQueue", "YXDownload", "YXTestServer", "YXTerminal"],
            path: "Demo/YXQueueDemo"
        ),

        .executableTarget(
            name: "YXQueueBenchmark",
            dependencies: ["YXQueue"],
            path: "Benchmarks/YXQueueBenchmark"
        ),
        .executableTarget(
            name: "YXDownloadBenchmark",
            dependencies: ["YXDownload", "YXTestServer"],
            path: "Benchmarks/YXDownloadBenchmark"
        ),
        // Durable jobs: the store protocol, its records and the worker (no database driver). On YXQueue: one
        // vocabulary (RetryPolicy, the lock), and workers that run stored JobDefinitions through a Dispatcher.
        .target(
            name: "YXJobStore",
            dependencies: [
                "YXQueue",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The embedded store: one SQLite file, several processes on one machine.
        .target(
            name: "YXJobStoreSQLite",
            dependencies: [
                "YXJobStore",
                "YXQueue",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ]
        ),
        // The distributed store: PostgreSQL, many workers on many machines.
        .target(
            name: "YXJobStorePostgres",
            dependencies: [
                "YXJobStore",
                "YXQueue",
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        // The conformance suite every store passes, written once as functions of a store. Not a product.
        .target(
            name: "YXJobStoreConformance",
            dependencies: [
                "YXJobStore",
                "YXQueue",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // A worker process the store tests start, kill and restart. Not a product.
        .executableTarget(
            name: "YXJobStoreTestWorker",
            dependencies: [
                "YXJobStore",
                "YXQueue",
                "YXJobStoreSQLite",
                "YXJobStorePostgres",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(
            name: "YXJobStoreBenchmark",
            dependencies: ["YXQueue", "YXJobStore", "YXJobStoreSQLite", "YXJobStorePostgres"],
            path: "Benchmarks/YXJobStoreBenchmark"
        ),
        .testTarget(
            name: "YXQueueTests",
            dependencies: [
                "YXQueue",
                .product(name: "InMemoryLogging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ]
        ),
        .testTarget(name: "YXTestServerTests", dependencies: ["YXTestServer"]),
        .testTarget(
            name: "YXDownloadTests",
            dependencies: [
                "YXDownload",
                "YXTestServer",
                .product(name: "InMemoryLogging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ]
        ),
        // Fixtures/ holds the expected `--help`, compared verbatim (read by path, not a resource).
        .testTarget(
            name: "YXDownloadCLITests",
            dependencies: ["YXDownloadCLI", "YXDownloadQueueCLI", "YXTerminal", "YXTestServer", "yxdownload", "yxdownload-queue"],
            exclude: ["Fixtures"]),
        .testTarget(
            name: "YXJobStoreTests",
            dependencies: [
                "YXJobStore",
                "YXQueue",
                "YXJobStoreSQLite",
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle"),
            ]
        ),
        // The conformance suite and the chaos test on each store; they start YXJobStoreTestWorker processes.
        .testTarget(
            name: "YXJobStoreSQLiteTests",
            dependencies: [
                "YXQueue",
                "YXJobStoreSQLite",
                "YXJobStoreConformance",
                "YXJobStoreTestWorker",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .testTarget(
            name: "YXJobStorePostgresTests",
            dependencies: [
                "YXQueue",
                "YXJobStorePostgres",
                "YXJobStoreConformance",
                "YXJobStoreTestWorker",
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
