internal import CCurl
import Synchronization

/// libcurl's one-time set-up (`curl_global_init`, with OpenSSL's), run ahead on a thread of its own.
///
/// The set-up takes about 1.1 ms (2.3 million instructions, callgrind, 2026-11-28), and a transfer
/// lane's first start waits for it. A command that will download starts it here first, so that it
/// runs on the second core while the main thread parses the arguments and checks the list: the lanes
/// then find it done. A process must not exit while the set-up runs (the libraries' exit handlers
/// could run while it still uses their state): ``waitIfStarted()`` before exiting.
///
/// ```swift
/// LibcurlSetUp.startInBackground()
/// let status = runTheCommand()
/// LibcurlSetUp.waitIfStarted()
/// exit(status)
/// ```
///
/// A run with HTTPS URLs also calls ``warmUpTLSInBackground()`` when it meets the first one: OpenSSL
/// then builds its random generator and its tables of algorithms on a thread of its own, instead of at
/// the first connection, where they took 8.4 million instructions between the TCP connect and the
/// ClientHello (about 5 ms here).
package enum LibcurlSetUp {
    private static let started = Atomic<Bool>(false)
    private static let tlsWarmUpStarted = Atomic<Bool>(false)

    /// libcurl's set-up, then OpenSSL's first-use work (`yx_openssl_warm_up`); a `static let`, so done
    /// once, and waited for by whoever reads it meanwhile.
    private static let warmedUpTLS: Void = {
        _ = TransferLane.initializeLibcurl
        yx_openssl_warm_up()
        tlsWarmedUp.store(true, ordering: .releasing)
    }()

    /// Whether the TLS warm-up ran to its end (for tests).
    static let tlsWarmedUp = Atomic<Bool>(false)

    /// Starts the set-up on a new thread, unless it was started before. Returns at once.
    package static func startInBackground() {
        guard !started.exchange(true, ordering: .acquiringAndReleasing) else { return }
        // Without a thread, the lanes' first start runs it, as it would without this.
        if !DetachedThread.start({ _ = TransferLane.initializeLibcurl }) { started.store(false, ordering: .releasing) }
    }

    /// Starts, on a new thread, the work that OpenSSL would otherwise do at the first TLS connection,
    /// after libcurl's set-up; once per process. For a run that will use HTTPS: others would only spend
    /// the CPU time (about 5 ms) for nothing. Returns at once.
    package static func warmUpTLSInBackground() {
        guard !tlsWarmUpStarted.exchange(true, ordering: .acquiringAndReleasing) else { return }
        // Without a thread, the first connection does this work, as it would without this call.
        if !DetachedThread.start({ _ = warmedUpTLS }) { tlsWarmUpStarted.store(false, ordering: .releasing) }
    }

    /// Returns once the set-up (and the TLS warm-up) is done, if ``startInBackground()`` (or
    /// ``warmUpTLSInBackground()``) started it; at once otherwise (it then does not run it).
    package static func waitIfStarted() {
        if tlsWarmUpStarted.load(ordering: .acquiring) { _ = warmedUpTLS }
        guard started.load(ordering: .acquiring) else { return }
        _ = TransferLane.initializeLibcurl  // a `static let`: waits for the thread that initialises it
    }
}
