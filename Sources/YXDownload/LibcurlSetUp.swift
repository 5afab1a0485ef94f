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
package enum LibcurlSetUp {
    private static let started = Atomic<Bool>(false)

    /// Starts the set-up on a new thread, unless it was started before. Returns at once.
    package static func startInBackground() {
        guard !started.exchange(true, ordering: .acquiringAndReleasing) else { return }
        // Without a thread, the lanes' first start runs it, as it would without this.
        if !DetachedThread.start({ _ = TransferLane.initializeLibcurl }) { started.store(false, ordering: .releasing) }
    }

    /// Returns once the set-up is done, if ``startInBackground()`` started it; at once otherwise
    /// (it then does not run it).
    package static func waitIfStarted() {
        guard started.load(ordering: .acquiring) else { return }
        _ = TransferLane.initializeLibcurl  // a `static let`: waits for the thread that initialises it
    }
}
