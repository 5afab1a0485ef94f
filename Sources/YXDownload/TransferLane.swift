internal import CCurl
import Foundation
import Synchronization
import YXQueue

/// One thread of the ``TransferEngine``: it owns one curl multi handle and runs every transfer given to
/// it, so the connections (keep-alive), TLS sessions and HTTP/2 streams of its transfers are reused
/// from one file to the next. No thread is blocked per transfer. Other threads never touch curl: they
/// post commands (add, cancel, change the speed limit, stop) to a locked inbox and wake the lane with
/// `curl_multi_wakeup`, the one multi call that is safe from another thread.
final class TransferLane: @unchecked Sendable {
    private enum Command {
        case add(Transfer)
        case cancel(Transfer)
        case stop
    }

    private struct Inbox {
        var commands: [Command] = []
        var maxBytesPerSecond: Int?
        var isStopped = false
        var connectionCount = 0
    }

    private let inbox = Locked(Inbox())
    private let stopped = DispatchSemaphore(value: 0)
    /// Created by `init`, used by the lane's thread and by `curl_multi_wakeup`; freed by the lane's thread.
    private let multi: UnsafeMutableRawPointer
    /// Running transfers over all lanes of the engine: the speed limit's shares are per transfer.
    private let engineTransfers: EngineTransferCount

    // MARK: Engine-thread state
    private var active: [UnsafeMutableRawPointer: Transfer] = [:]
    private var limit: Int?
    private var lastRefill = DispatchTime.now().uptimeNanoseconds
    private var paused: [Transfer] = []

    /// Creates and starts a lane with its own thread and connection cache.
    init(number: Int, transfers: EngineTransferCount) {
        Self.initializeLibcurl
        engineTransfers = transfers
        guard let multi = curl_multi_init() else { fatalError("curl_multi_init failed") }
        self.multi = multi
        _ = yx_multi_setopt_long(multi, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
        // Keep idle connections for reuse. curl's default cache is 4 per easy handle *currently added*, so
        // when short transfers come and go it shrinks below the number in flight and closes connections
        // that the next file would have reused.
        _ = yx_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, 256)
        let thread = Thread { [self] in run() }
        thread.name = "YXDownload.TransferEngine.\(number)"
        thread.start()
    }

    private static let initializeLibcurl: Void = {
        let result = yx_curl_global_init()
        precondition(result == CURLE_OK, "curl_global_init failed: \(result)")
    }()

    // MARK: - Commands (any thread)

    /// Starts a transfer. Its handler's methods are then called on this lane's thread.
    func submit(_ transfer: Transfer) {
        post(.add(transfer))
    }

    /// Cancels a transfer: it is removed from curl at once and completes with `.canceled` (unless it
    /// completed already).
    func cancel(_ transfer: Transfer) {
        post(.cancel(transfer))
    }

    /// Limits the total download speed of all transfers of the engine (nil: no limit).
    func setMaxSpeed(bytesPerSecond: Int?) {
        inbox.withLock { $0.maxBytesPerSecond = bytesPerSecond }
        curl_multi_wakeup(multi)
    }

    /// Stops the lane: cancels every transfer, cleans up every curl handle, and waits for the lane's
    /// thread to finish. Transfers submitted afterwards complete as canceled.
    func shutdown() {
        let first = inbox.withLock { s -> Bool in
            defer { s.isStopped = true }
            return !s.isStopped
        }
        guard first else { return }
        post(.stop, evenWhenStopped: true)
        stopped.wait()
    }

    /// How many connections curl opened so far on this lane.
    var connectionsOpened: Int { inbox.withLock { $0.connectionCount } }

    private func post(_ command: Command, evenWhenStopped: Bool = false) {
        let accepted = inbox.withLock { s -> Bool in
            guard !s.isStopped || evenWhenStopped else { return false }
            s.commands.append(command)
            return true
        }
        if accepted {
            curl_multi_wakeup(multi)
        } else if case .add(let transfer) = command {
            transfer.handler.transferDidComplete(.canceled)
        }
    }

    // MARK: - The lane's thread

    private func run() {
        var running: Int32 = 0
        var stopping = false
        while !stopping {
            let (commands, maxSpeed) = inbox.withLock { s in
                defer { s.commands.removeAll(keepingCapacity: true) }
                return (s.commands, s.maxBytesPerSecond)
            }
            applySpeedLimit(maxSpeed)
            for command in commands {
                switch command {
                case .add(let transfer): add(transfer)
                case .cancel(let transfer): finish(transfer, .canceled)
                case .stop: stopping = true
                }
            }
            if stopping { break }
            refillTokens()
            curl_multi_perform(multi, &running)
            readCompletions()
            expireStalledTransfers()
            let timeout: Int32 = !paused.isEmpty ? 10 : active.isEmpty ? 1_000 : 100
            curl_multi_poll(multi, nil, 0, timeout, nil)
        }
        for transfer in Array(active.values) { finish(transfer, .canceled) }
        let leftovers = inbox.withLock { s in
            defer { s.commands.removeAll() }
            return s.commands
        }
        for case .add(let transfer) in leftovers { transfer.handler.transferDidComplete(.canceled) }
        curl_multi_cleanup(multi)
        stopped.signal()
    }

    private func add(_ transfer: Transfer) {
        guard !transfer.isDone else { return }
        guard let handle = curl_easy_init() else {
            transfer.isDone = true
            transfer.handler.transferDidComplete(
                .failure(DownloadError(.transfer, "curl_easy_init failed", url: transfer.redactedURL)))
            return
        }
        transfer.handle = handle
        transfer.lastActivity = DispatchTime.now().uptimeNanoseconds
        configure(handle, for: transfer)
        active[handle] = transfer
        engineTransfers.count.add(1, ordering: .relaxed)
        curl_multi_add_handle(multi, handle)
    }

    private func configure(_ handle: UnsafeMutableRawPointer, for transfer: Transfer) {
        let request = transfer.request
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        _ = yx_easy_setopt_string(handle, CURLOPT_URL, request.url.absoluteString)
        _ = yx_easy_setopt_long(handle, CURLOPT_NOSIGNAL, 1)
        _ = yx_easy_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "http,https")
        _ = yx_easy_setopt_string(handle, CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        _ = yx_easy_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 1)
        _ = yx_easy_setopt_long(handle, CURLOPT_MAXREDIRS, request.maxRedirects)
        _ = yx_easy_setopt_string(handle, CURLOPT_USERAGENT, request.userAgent)
        _ = yx_easy_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, Int(request.connectTimeout * 1000))
        _ = yx_easy_setopt_long(handle, CURLOPT_SSL_VERIFYPEER, request.verifyTLS ? 1 : 0)
        _ = yx_easy_setopt_long(handle, CURLOPT_SSL_VERIFYHOST, request.verifyTLS ? 2 : 0)
        _ = yx_easy_setopt_long(handle, CURLOPT_HTTP_VERSION, YX_CURL_HTTP_VERSION_2TLS)
        // Waiting for a connection to say whether it multiplexes only pays over TLS (HTTP/2); over plain
        // http it made new transfers wait behind a paused one (seen with --max-speed on curl 7.88).
        if request.url.scheme?.lowercased() == "https" {
            _ = yx_easy_setopt_long(handle, CURLOPT_PIPEWAIT, 1)
        }
        _ = yx_easy_setopt_long(handle, CURLOPT_BUFFERSIZE, 256 * 1024)
        _ = yx_easy_setopt_pointer(handle, CURLOPT_ERRORBUFFER, transfer.errorBuffer)
        if let range = request.curlRange {
            _ = yx_easy_setopt_string(handle, CURLOPT_RANGE, range)
        }
        var list: UnsafeMutablePointer<curl_slist>?
        var lines = request.headers
        if let ifRange = request.ifRange { lines.append("If-Range: \(ifRange)") }
        for line in lines { list = curl_slist_append(list, line) }
        transfer.headerList = list
        if let list { _ = yx_easy_setopt_slist(handle, CURLOPT_HTTPHEADER, list) }

        _ = yx_easy_setopt_pointer(handle, CURLOPT_HEADERDATA, context)
        _ = yx_easy_setopt_write_callback(handle, CURLOPT_HEADERFUNCTION) { data, size, count, context in
            guard let data, let context else { return 0 }
            let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
            transfer.lastActivity = DispatchTime.now().uptimeNanoseconds
            let length = size * count
            transfer.response.consume(headerBytes: UnsafeRawBufferPointer(start: data, count: length))
            return length
        }
        _ = yx_easy_setopt_pointer(handle, CURLOPT_WRITEDATA, context)
        _ = yx_easy_setopt_write_callback(handle, CURLOPT_WRITEFUNCTION) { data, size, count, context in
            guard let context else { return 0 }
            let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
            return transfer.lane.deliver(UnsafeRawBufferPointer(start: data, count: size * count), to: transfer)
        }
        transfer.lane = self
    }

    /// The write callback: check the response once, apply the speed limit, hand the bytes over.
    fileprivate func deliver(_ bytes: UnsafeRawBufferPointer, to transfer: Transfer) -> Int {
        if !transfer.responseChecked, let handle = transfer.handle {
            var url: UnsafeMutablePointer<CChar>?
            if yx_easy_getinfo_string(handle, CURLINFO_EFFECTIVE_URL, &url) == CURLE_OK, let url {
                transfer.response.effectiveURL = String(cString: url)
            }
        }
        if transfer.checkResponse() != nil { return 0 }
        transfer.lastActivity = DispatchTime.now().uptimeNanoseconds
        if limit != nil {
            if transfer.allowance <= 0 {
                if !transfer.isPaused {
                    transfer.isPaused = true
                    paused.append(transfer)
                }
                return YX_CURL_WRITEFUNC_PAUSE
            }
            transfer.allowance -= Double(bytes.count)
        }
        if let error = transfer.handler.transferDidReceive(bytes) {
            transfer.abortError = error
            return 0
        }
        return bytes.count
    }

    /// Ends transfers that received nothing for their stall timeout (curl's low-speed check averages
    /// over several seconds, so a burst followed by silence would go unnoticed for too long). A transfer
    /// held back by the speed limit is not stalled.
    private func expireStalledTransfers() {
        let now = DispatchTime.now().uptimeNanoseconds
        for transfer in Array(active.values) {
            if transfer.isPaused {
                transfer.lastActivity = now
                continue
            }
            let limit = UInt64(max(0.1, transfer.request.stallTimeout) * 1e9)
            guard now > transfer.lastActivity, now - transfer.lastActivity > limit else { continue }
            let seconds = Int(transfer.request.stallTimeout.rounded())
            finish(
                transfer,
                .failure(
                    DownloadError(
                        .timedOut, "no data for \(seconds) s", url: transfer.redactedURL,
                        httpStatus: transfer.response.status > 0 ? transfer.response.status : nil)))
        }
    }

    private func applySpeedLimit(_ newLimit: Int?) {
        guard newLimit != limit else { return }
        limit = newLimit
        for transfer in active.values { transfer.allowance = 0 }
        lastRefill = DispatchTime.now().uptimeNanoseconds
        if newLimit == nil { resumePaused() }
    }

    /// The speed limit's budget grows with time at the limit's rate and is shared out equally: each
    /// running transfer gets its own allowance, so curl's fixed order of serving handles cannot let the
    /// first one take everything. An allowance holds at most a tenth of a second's worth of its share
    /// (the burst), and a transfer that spent its allowance is paused until the next share.
    private func refillTokens() {
        guard let limit, !active.isEmpty else { return }
        let now = DispatchTime.now().uptimeNanoseconds
        let elapsed = Double(now - lastRefill) / 1e9
        lastRefill = now
        // Every running transfer of the engine gets the same share, whichever lane runs it.
        let count = Double(max(active.count, engineTransfers.count.load(ordering: .relaxed)))
        let share = Double(limit) * elapsed / count
        let burst = max(Double(limit) / 10, 16 * 1024) / count
        for transfer in active.values {
            transfer.allowance = min(max(burst, share), transfer.allowance + share)
        }
        resumePaused()
    }

    private func resumePaused() {
        let waiting = paused
        paused.removeAll()
        for transfer in waiting where !transfer.isDone {
            guard limit == nil || transfer.allowance > 0 else {
                paused.append(transfer)
                continue
            }
            transfer.isPaused = false
            if let handle = transfer.handle {
                curl_easy_pause(handle, Int32(YX_CURLPAUSE_CONT))
            }
        }
    }

    private func readCompletions() {
        var remaining: Int32 = 0
        while let message = curl_multi_info_read(multi, &remaining) {
            guard message.pointee.msg == CURLMSG_DONE, let handle = message.pointee.easy_handle,
                let transfer = active[handle]
            else { continue }
            let code = message.pointee.data.result
            finish(transfer, outcome(of: transfer, code: code))
        }
    }

    private func outcome(of transfer: Transfer, code: CURLcode) -> TransferOutcome {
        if let handle = transfer.handle {
            var connects = 0
            if yx_easy_getinfo_long(handle, CURLINFO_NUM_CONNECTS, &connects) == CURLE_OK, connects > 0 {
                inbox.withLock { $0.connectionCount += connects }
            }
        }
        if code == CURLE_OK {
            // An empty body never reached the write callback: check the response now.
            if let error = transfer.checkResponse() { return .failure(error) }
            return .success(transfer.response)
        }
        if let abortError = transfer.abortError { return .failure(abortError) }
        return .failure(CurlErrorMapping.error(for: code, transfer: transfer))
    }

    /// Removes a transfer from curl and reports its outcome, once.
    private func finish(_ transfer: Transfer, _ outcome: TransferOutcome) {
        guard !transfer.isDone else { return }
        transfer.isDone = true
        if let handle = transfer.handle {
            active[handle] = nil
            engineTransfers.count.subtract(1, ordering: .relaxed)
            curl_multi_remove_handle(multi, handle)
            curl_easy_cleanup(handle)
            transfer.handle = nil
        }
        transfer.handler.transferDidComplete(outcome)
    }
}

/// How many transfers run on all lanes of one engine.
final class EngineTransferCount: Sendable {
    let count = Atomic<Int>(0)
}

extension Transfer {
    /// The lane running this transfer (set on the lane's thread when it is added).
    fileprivate var lane: TransferLane {
        get { laneReference! }
        set { laneReference = newValue }
    }
}
