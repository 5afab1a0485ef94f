// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "YXQueue",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "YXQueue", targets: ["YXQueue"]),
    ],
    targets: [
        // The job-queue framework: Foundation, Dispatch and Synchronization only, no C library.
        .target(name: "YXQueue"),
        .executableTarget(
            name: "YXQueueBenchmark",
            dependencies: ["YXQueue"],
            path: "Benchmarks/YXQueueBenchmark"
        ),
        .testTarget(name: "YXQueueTests", dependencies: ["YXQueue"]),
    ],
    swiftLanguageModes: [.v6]
)
