import Foundation
import XCTest
import YXTestServer

#if canImport(Glibc)
import Glibc
#endif

/// `kill -9` at random moments, again and again: a file under its final name is always whole, and the
/// last rerun completes every file.
///
/// The default suite kills 8 times; `YXQUEUE_LONG_TESTS=1` kills 50 times (a few minutes).
final class RandomKillTests: CLITestCase {
    private struct Source {
        var name: String
        var size: Int64
        var seed: UInt64
    }

    /// Files of 1 B to 64 MiB; some behind routes that drop, fail with 503 or go slowly.
    private func serveMixedFiles() -> [Source] {
        let sources = [
            Source(name: "one-byte", size: 1, seed: 1),
            Source(name: "small.txt", size: 1_000, seed: 2),
            Source(name: "medium.bin", size: 300_000, seed: 3),
            Source(name: "flaky.bin", size: 3 << 20, seed: 4),
            Source(name: "slow.bin", size: 8 << 20, seed: 5),
            Source(name: "large.bin", size: 16 << 20, seed: 6),
            Source(name: "huge.bin", size: 64 << 20, seed: 7),
            Source(name: "empty-ish.bin", size: 10, seed: 8),
        ]
        for source in sources {
            var resource = Resource(.generated(size: source.size, seed: source.seed), etag: "\"\(source.seed)\"")
            switch source.name {
            case "flaky.bin":
                resource.failures = flakyFailures(rounds: 30)
            case "slow.bin":
                resource.bytesPerSecond = 2 << 20
            case "large.bin":
                resource.failures = Array(repeating: .stall(afterBytes: 1 << 20, seconds: 0.3), count: 100)
            default:
                break
            }
            server.serve("/\(source.name)", resource)
        }
        return sources
    }

    /// A drop, a 503 and a short body, `rounds` times: one failure per request, in order.
    private func flakyFailures(rounds: Int) -> [Resource.Failure] {
        Array(repeating: [Resource.Failure.dropAfter(bytes: 400_000), .status(503), .shortBody(missing: 1000)], count: rounds)
            .flatMap { $0 }
    }

    /// Every file under a final name holds exactly its source's bytes.
    private func assertFinalFilesAreWhole(_ sources: [Source], after what: String) {
        let present = Set(files(in: "out"))
        for source in sources where present.contains(source.name) {
            XCTAssertTrue(
                holdsGenerated("out/\(source.name)", size: source.size, seed: source.seed),
                "\(source.name) under its final name is not whole \(what)")
        }
        // A kill between the sidecar's temporary file and its rename leaves `NAME.part.meta.tmp`, which
        // the next run removes (`mayFindStaleTemporary`): the last rerun's check wants none left.
        let known = Set(sources.flatMap { [$0.name, $0.name + ".part", $0.name + ".part.meta", $0.name + ".part.meta.tmp"] })
        XCTAssertEqual(present.subtracting(known), [], "unexpected files \(what)")
    }

    private func killAtRandom(times: Int) async throws {
        let sources = serveMixedFiles()
        try writeList(sources.map { "\(server.url("/\($0.name)"))" }.joined(separator: "\n") + "\n")
        var generator = SystemRandomNumberGenerator()
        for round in 1...times {
            let connections = Bool.random(using: &generator) ? "4" : "1"
            let command = try RunningCommand(
                ["urls.txt", "-d", "out", "-j", "4", "-x", connections, "--retry-wait", "0.05", "-q"], in: work)
            // A random moment: often while the first bytes arrive, sometimes much later.
            let delay = UInt64.random(in: 0...1_200, using: &generator)
            try await Task.sleep(nanoseconds: delay * 1_000_000)
            command.send(SIGKILL)
            let output = await command.wait()
            XCTAssertTrue(
                output.status == 128 + SIGKILL || output.status == 0,
                "round \(round): status \(output.status)\n\(output.stderr)")
            assertFinalFilesAreWhole(sources, after: "kill \(round) (after \(delay) ms, -x \(connections))")
        }
        // The kills consume a number of the flaky route's failures that depends on the machine's load;
        // the last run meets one round of them (fewer than its retries can absorb), whatever is left.
        if let flaky = sources.first(where: { $0.name == "flaky.bin" }) {
            server.serve(
                "/flaky.bin",
                Resource(
                    .generated(size: flaky.size, seed: flaky.seed), etag: "\"\(flaky.seed)\"",
                    failures: flakyFailures(rounds: 1)))
        }
        let last = try await yxdownload("urls.txt", "-d", "out", "-j", "4", "-x", "4", "--retry-wait", "0.05")
        XCTAssertEqual(last.status, 0, last.stderr)
        XCTAssertEqual(Set(files(in: "out")), Set(sources.map(\.name)), "no .part left after the last rerun")
        assertFinalFilesAreWhole(sources, after: "the last rerun")
    }

    func testKilledAtRandomEightTimesThenARerunCompletes() async throws {
        try await killAtRandom(times: 8)
    }

    func testKilledAtRandomFiftyTimesThenARerunCompletes() async throws {
        try XCTSkipUnless(
            ProcessInfo.processInfo.environment["YXQUEUE_LONG_TESTS"] == "1", "set YXQUEUE_LONG_TESTS=1 for the long run")
        try await killAtRandom(times: 50)
    }
}
