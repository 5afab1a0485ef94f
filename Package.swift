// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "YXQueue",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "YXQueue", targets: ["YXQueue"]),
        .library(name: "YXDownload", targets: ["YXDownload"]),
        .executable(name: "yxdownload", targets: ["yxdownload"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        // `swift package generate-documentation` for the DocC catalogs. Build-time only.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // The job-queue framework: Foundation, Dispatch and Synchronization only, no C library.
        .target(name: "YXQueue"),

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
            ]
        ),

        // The command line: options, the input list, the run, the renderers. A library so tests reach it.
        .target(
            name: "YXDownloadCLI",
            dependencies: [
                "YXDownload",
                "YXQueue",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // `yxdownload urls.txt -j 5`
        .executableTarget(name: "yxdownload", dependencies: ["YXDownloadCLI"]),

        // A loopback HTTP server for tests, benchmarks and the demo (SwiftNIO). Not a product.
        .target(
            name: "YXTestServer",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),

        // The demo: sample files on loopback, downloads with live progress, a custom Job. `scripts/demo`.
        .executableTarget(
            name: "YXQueueDemo",
            dependencies: ["YXQueue", "YXDownload", "YXTestServer"],
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
        .testTarget(name: "YXQueueTests", dependencies: ["YXQueue"]),
        .testTarget(name: "YXTestServerTests", dependencies: ["YXTestServer"]),
        .testTarget(name: "YXDownloadTests", dependencies: ["YXDownload", "YXTestServer"]),
        .testTarget(name: "YXDownloadCLITests", dependencies: ["YXDownloadCLI", "YXTestServer", "yxdownload"]),
    ],
    swiftLanguageModes: [.v6]
)
