internal import CCurl
import Foundation
import Synchronization
@_spi(YXQueueInternals) import YXQueue

/// One thread of the ``TransferEngine``: it owns one curl multi handle and runs every transfer given to
/// it, so the connections (keep-alive), TLS sessions and HTTP/2 streams of its transfers are reused
/// from one file to the next. No thread is blocked per transfer. Other threads never touch curl: they
/// post commands (add, cancel, stop) to a locked inbox and wake the lane with `curl_multi_wakeup`, the
/// one multi call that is safe from another thread: once for the commands the lane has not taken yet,
/// and not at all from the lane's own thread, which looks at the inbox before it waits.
///
/// The thread starts with the first command and ends after ``idleTimeout`` without a transfer or a
/// command, cleaning up its multi handle (and with it the idle connections) on its way out; the next
/// command starts a new thread with a new handle. So a lane that is not used holds no thread. The
/// decision to end is taken under the inbox lock, only while the inbox is empty: a command posted at
/// that moment either is seen by the ending thread (which then goes on) or finds no thread and starts
/// one.
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
        /// A thread was started and has not decided to end yet.
        var threadRunning = false
        /// The running thread's multi handle, from when the thread made it until the thread decided to
        /// end (set back to nil under this lock, before the handle is freed). Waking happens under the
        /// same lock, so a wake-up never meets a freed handle.
        var multi: UnsafeMutableRawPointer?
        /// The running thread, so that a shutdown called on it does not wait for itself.
        var thread: pthread_t?
        /// Threads started so far (for tests).
        var threadStarts = 0
        /// Transfers added so far, and how many of them another thread added while this lane's thread
        /// ran (each of those woke it, unless a wake-up was pending; for tests).
        var transfersAdded = 0
        var transfersAddedFromElsewhere = 0
        var connectionCount = 0
    }

    /// The number of the lane in its engine (for the thread's name).
    let number: Int
    /// How long the thread stays without a transfer or a command before it ends (seconds).
    let idleTimeout: TimeInterval

    private let inbox = Locked(Inbox())
    /// Entered when a thread is started, left when it has cleaned up and ends: `shutdown` waits on it.
    private let threads = DispatchGroup()
    /// Transfers submitted to this lane that have not ended yet (read from any thread: see
    /// ``TransferEngine/laneTicket(stayingOnThisLane:)``).
    let load = Atomic<Int>(0)
    /// Running transfers over all lanes of the engine: the speed limit's shares are per transfer.
    private let engineTransfers: EngineTransferCount
    private let instruments: DownloadInstruments

    // MARK: Engine-thread state (the running thread's; set afresh when a thread starts, and never touched
    // by a thread after it decided to end)
    private var multi: UnsafeMutableRawPointer?
    private var active: [UnsafeMutableRawPointer: Transfer] = [:]
    private var limit: Int?
    private var lastRefill = DispatchTime.now().uptimeNanoseconds
    private var paused: [Transfer] = []
    /// Easy handles of finished transfers, reset to curl's defaults, for the next transfers: a reset
    /// handle costs less to set up than a new one (`curl_easy_init` allocates and clears curl's whole
    /// per-transfer state, `curl_easy_cleanup` frees it). Emptied before the thread ends.
    private var spareHandles: [UnsafeMutableRawPointer] = []
    /// At most this many spare handles are kept: enough for `-j` of common sizes.
    private static let maxSpareHandles = 64
    /// Body bytes received in this turn and not yet handed to their transfer's handler (write
    /// coalescing): curl hands the write callback 16 KiB at most, so a large body arrived in 16 KiB
    /// `pwrite`s, one system call (and two locks of its session) each, 25,800 of them for the 400 MiB
    /// of 100 files. Gathered here, they are handed over when another transfer's bytes come, when the
    /// buffer is full, and at the end of each turn (before completions are read): about one call per
    /// receive. One buffer for the lane, allocated on first use and freed when its thread ends.
    private var gathered: UnsafeMutableRawPointer?
    private var gatheredCount = 0
    /// Whose bytes are in ``gathered``.
    private var gatherer: Transfer?
    /// Transfers whose handler refused gathered bytes while another transfer's callback ran: they end
    /// after the turn, with that error (a transfer cannot be removed from curl inside a callback).
    private var refused: [Transfer] = []
    /// Ends of the last turn whose handlers gave their slot away (``TransferHandler/transferWillComplete(_:)``):
    /// reported after the next `curl_multi_perform`, which sends the requests that those slots started
    /// first. A round of small downloads over a slow network then waits for one file's work, not for
    /// every file's verify, rename and job end, before its next requests leave.
    private var endsToReport: [(handler: any TransferHandler, outcome: TransferOutcome)] = []
    /// The size of ``gathered``: one receive of `CURLOPT_BUFFERSIZE`.
    static let coalescingCapacity = 256 * 1024
    /// Origins whose certificates the CA directory alone failed to verify, shared by the engine's lanes.
    private let trustFallbacks: TrustStore.Fallbacks

    /// Creates a lane. It holds no thread until the first command.
    init(
        number: Int, idleTimeout: TimeInterval, transfers: EngineTransferCount, trustFallbacks: TrustStore.Fallbacks,
        instruments: DownloadInstruments
    ) {
        self.number = number
        self.idleTimeout = idleTimeout.isFinite ? max(0, idleTimeout) : 86_400
        self.engineTransfers = transfers
        self.trustFallbacks = trustFallbacks
        self.instruments = instruments
    }

    /// The lane whose thread this is (unretained: set while the lane's `run` holds it), per thread.
    private static let threadLaneKey: pthread_key_t = {
        var key = pthread_key_t()
        _ = pthread_key_create(&key, nil)
        return key
    }()

    /// The lane whose thread calls, if a lane's thread calls.
    static var current: TransferLane? {
        pthread_getspecific(threadLaneKey).map { Unmanaged<TransferLane>.fromOpaque($0).takeUnretainedValue() }
    }

    /// `curl_global_init`, once per process; its result.
    static let initializeLibcurl: CURLcode = yx_curl_global_init()

    /// Why no lane can run, when curl could not be initialised.
    static let globalFailure: String? = {
        let code = initializeLibcurl
        guard code != CURLE_OK else { return nil }
        return "the transfer engine could not start: curl_global_init failed (\(String(cString: curl_easy_strerror(code))))"
    }()

    // MARK: - Commands (any thread)

    /// Starts a transfer. Its handler's methods are then called on this lane's thread.
    func submit(_ transfer: Transfer) {
        load.add(1, ordering: .relaxed)
        post(.add(transfer))
    }

    /// Cancels a transfer: it is removed from curl at once and completes with `.canceled` (unless it
    /// completed already).
    func cancel(_ transfer: Transfer) {
        post(.cancel(transfer))
    }

    /// Limits the total download speed of all transfers of the engine (nil: no limit).
    func setMaxSpeed(bytesPerSecond: Int?) {
        inbox.withLock { s in
            s.maxBytesPerSecond = bytesPerSecond
            if let multi = s.multi { curl_multi_wakeup(multi) }
        }
    }

    /// Stops the lane: cancels every transfer, cleans up every curl handle, and waits for the lane's
    /// thread to end (unless called on that thread: it then ends when the current callback returns).
    /// Transfers submitted afterwards complete as canceled. Idempotent; every caller waits.
    func shutdown() {
        let wait = inbox.withLock { s -> Bool in
            if !s.isStopped {
                s.isStopped = true
                if s.threadRunning {
                    s.commands.append(.stop)
                    if let multi = s.multi { curl_multi_wakeup(multi) }
                }
            }
            if let thread = s.thread, pthread_equal(thread, pthread_self()) != 0 { return false }
            return true
        }
        if wait { threads.wait() }
    }

    /// How many connections curl opened so far on this lane.
    var connectionsOpened: Int { inbox.withLock { $0.connectionCount } }

    /// Whether the lane has a thread now (started, and not yet decided to end).
    var hasThread: Bool { inbox.withLock { $0.threadRunning } }

    /// How many threads the lane started so far.
    var threadStarts: Int { inbox.withLock { $0.threadStarts } }

    /// Transfers added to the running thread so far, and how many of them came from another thread.
    var transfersAdded: (all: Int, fromElsewhere: Int) {
        inbox.withLock { ($0.transfersAdded, $0.transfersAddedFromElsewhere) }
    }

    private enum Delivery {
        case posted
        case startThread
        case refused(String?)
    }

    private func post(_ command: Command) {
        let delivery = inbox.withLock { s -> Delivery in
            if let failure = Self.globalFailure { return .refused(failure) }
            guard !s.isStopped else { return .refused(nil) }
            let wakeUpPending = !s.commands.isEmpty
            s.commands.append(command)
            if let multi = s.multi {
                // One wake-up for the commands the thread has not taken yet; none from the lane's own
                // thread (a finished transfer's handler starting the next one), which looks at the inbox
                // before it waits. Each wake-up is a write, a read and a turn of the loop.
                let onLane = s.thread.map { pthread_equal($0, pthread_self()) != 0 } ?? false
                if case .add = command {
                    s.transfersAdded += 1
                    if !onLane { s.transfersAddedFromElsewhere += 1 }
                }
                if !wakeUpPending && !onLane {
                    curl_multi_wakeup(multi)  // only writes to a socket; never blocks
                }
                return .posted
            }
            // A thread that is starting reads the inbox before it first waits.
            if s.threadRunning { return .posted }
            s.threadRunning = true
            s.threadStarts += 1
            threads.enter()
            return .startThread
        }
        switch delivery {
        case .posted:
            return
        case .startThread:
            if !DetachedThread.start({ [self] in run() }) {
                failStart("the transfer engine could not start: no thread could be made")
            }
        case .refused(let failure):
            guard case .add(let transfer) = command else { return }
            // Never reached the lane's thread: it takes back the load `submit` added, without `markEnded`
            // (whose `isDone` belongs to that thread).
            load.subtract(1, ordering: .relaxed)
            if let failure {
                transfer.handler.transferDidComplete(
                    .failure(DownloadError(.transfer, failure, url: transfer.redactedURL)))
            } else {
                transfer.handler.transferDidComplete(.canceled)
            }
        }
    }

    // MARK: - The lane's thread

    /// The lane's thread could not run: every transfer waiting in the inbox fails with `reason`, and the
    /// lane can be started again by the next command.
    private func failStart(_ reason: String) {
        let pending = inbox.withLock { s -> [Command] in
            s.threadRunning = false
            defer { s.commands.removeAll() }
            return s.commands
        }
        for case .add(let transfer) in pending where !transfer.isDone {
            markEnded(transfer)
            transfer.handler.transferDidComplete(.failure(DownloadError(.transfer, reason, url: transfer.redactedURL)))
        }
        threads.leave()
    }

    private func run() {
        _ = yx_name_current_thread(String("yxdl.lane.\(number)".prefix(15)))
        guard let made = curl_multi_init() else {
            return failStart("the transfer engine could not start: curl_multi_init failed")
        }
        _ = yx_multi_setopt_long(made, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
        // Keep idle connections for reuse. curl's default cache is 4 per easy handle *currently added*, so
        // when short transfers come and go it shrinks below the number in flight and closes connections
        // that the next file would have reused.
        _ = yx_multi_setopt_long(made, CURLMOPT_MAXCONNECTS, 256)
        multi = made
        active = [:]
        paused = []
        limit = nil
        lastRefill = DispatchTime.now().uptimeNanoseconds
        inbox.withLock { s in
            s.multi = made
            s.thread = pthread_self()
        }
        pthread_setspecific(Self.threadLaneKey, Unmanaged.passUnretained(self).toOpaque())

        let idleNanoseconds = idleTimeout.clampedNanoseconds
        var idleSince = DispatchTime.now().uptimeNanoseconds
        var running: Int32 = 0
        var stopping = false
        while !stopping {
            let now = DispatchTime.now().uptimeNanoseconds
            let isIdle = active.isEmpty && endsToReport.isEmpty
            let idleTimedOut = isIdle && now &- idleSince >= idleNanoseconds
            // The thread may end below: its spare handles go first, while it still owns the lane.
            if idleTimedOut { releaseSpareHandles() }
            let (commands, maxSpeed, ends) = inbox.withLock { s -> ([Command], Int?, Bool) in
                if s.commands.isEmpty && idleTimedOut {
                    // Nothing to do for the idle timeout: end. From here on, a command starts a new thread.
                    s.threadRunning = false
                    s.multi = nil
                    s.thread = nil
                    return ([], nil, true)
                }
                defer { s.commands.removeAll(keepingCapacity: true) }
                return (s.commands, s.maxBytesPerSecond, false)
            }
            if ends { break }
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
            // The turn's ended downloads wake their callback queue once, after the turn.
            DeliveryBatch.collecting {
                curl_multi_perform(made, &running)
                reportEnds()
                flushGatheredBytes()
                readCompletions()
            }
            expireStalledTransfers()
            let timeout: Int32
            if !endsToReport.isEmpty {
                timeout = 0
            } else if !paused.isEmpty {
                timeout = 10
            } else if !active.isEmpty {
                timeout = 100
            } else {
                if !commands.isEmpty || !isIdle { idleSince = DispatchTime.now().uptimeNanoseconds }
                let left = idleNanoseconds &- min(idleNanoseconds, DispatchTime.now().uptimeNanoseconds &- idleSince)
                timeout = Int32(min(1_000, left / 1_000_000 + 1))
            }
            // Commands posted from this thread since the inbox was read come without a wake-up.
            let posted = inbox.withLock { !$0.commands.isEmpty }
            curl_multi_poll(made, nil, 0, posted ? 0 : timeout, nil)
        }
        if stopping {
            DeliveryBatch.collecting { reportEnds() }
            for transfer in Array(active.values) { finish(transfer, .canceled) }
            releaseSpareHandles()
            let leftovers = inbox.withLock { s -> [Command] in
                s.threadRunning = false
                s.multi = nil
                s.thread = nil
                defer { s.commands.removeAll() }
                return s.commands
            }
            for case .add(let transfer) in leftovers where !transfer.isDone {
                markEnded(transfer)
                transfer.handler.transferDidComplete(.canceled)
            }
        }
        // From here on a new thread may run this lane: only locals are touched (the new thread sets the
        // engine-thread state, `multi` included, afresh).
        curl_multi_cleanup(made)
        pthread_setspecific(Self.threadLaneKey, nil)
        threads.leave()
    }

    private func add(_ transfer: Transfer) {
        guard !transfer.isDone else { return }
        guard let handle = spareHandles.popLast() ?? curl_easy_init() else {
            markEnded(transfer)
            transfer.handler.transferDidComplete(
                .failure(DownloadError(.transfer, "curl_easy_init failed", url: transfer.redactedURL)))
            return
        }
        transfer.handle = handle
        transfer.lastActivity = DispatchTime.now().uptimeNanoseconds
        configure(handle, for: transfer)
        active[handle] = transfer
        engineTransfers.count.add(1, ordering: .relaxed)
        if let multi { curl_multi_add_handle(multi, handle) }
    }

    private func configure(_ handle: UnsafeMutableRawPointer, for transfer: Transfer) {
        let request = transfer.request
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        // libcurl copies string options. `withCString` lends a native string's own bytes; passing the
        // `String` itself would copy it into an array first (an allocation per option and file).
        _ = request.url.absoluteString.withCString { yx_easy_setopt_string(handle, CURLOPT_URL, $0) }
        _ = yx_easy_setopt_long(handle, CURLOPT_NOSIGNAL, 1)
        _ = yx_easy_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "http,https")
        _ = yx_easy_setopt_string(handle, CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        _ = yx_easy_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 1)
        _ = yx_easy_setopt_long(handle, CURLOPT_MAXREDIRS, request.maxRedirects)
        _ = request.userAgent.withCString { yx_easy_setopt_string(handle, CURLOPT_USERAGENT, $0) }
        _ = yx_easy_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, max(1, request.connectTimeout.clampedMilliseconds))
        _ = yx_easy_setopt_long(handle, CURLOPT_SSL_VERIFYPEER, request.verifyTLS ? 1 : 0)
        _ = yx_easy_setopt_long(handle, CURLOPT_SSL_VERIFYHOST, request.verifyTLS ? 2 : 0)
        _ = yx_easy_setopt_long(handle, CURLOPT_HTTP_VERSION, YX_CURL_HTTP_VERSION_2TLS)
        let isHTTPS = request.url.webScheme == .https
        // A first try over https trusts the CA directory alone where that applies (see TrustStore); a
        // retry, an origin known to need more, and plain http (a redirect to https included) get the
        // whole setting. The system's rule is looked up only here: a run of plain http never reads it.
        if request.verifyTLS {
            if transfer.trustAttempt == .first, isHTTPS, request.trust.directoryFirst,
                !trustFallbacks.contains(request.url)
            {
                transfer.trustAttempt = .directoryOnly
            } else {
                transfer.trustAttempt = .whole
            }
            request.trust.apply(to: handle, directoryOnly: transfer.trustAttempt == .directoryOnly)
        }
        // Waiting for a connection to say whether it multiplexes only pays over TLS (HTTP/2); over plain
        // http it made new transfers wait behind a paused one (seen with --max-speed on curl 7.88).
        if isHTTPS {
            _ = yx_easy_setopt_long(handle, CURLOPT_PIPEWAIT, 1)
        }
        _ = yx_easy_setopt_long(handle, CURLOPT_BUFFERSIZE, 256 * 1024)
        _ = yx_easy_setopt_pointer(handle, CURLOPT_ERRORBUFFER, transfer.errorBuffer)
        if let range = request.curlRange {
            _ = range.withCString { yx_easy_setopt_string(handle, CURLOPT_RANGE, $0) }
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
            transfer.sawActivity = true
            let length = size * count
            let line = UnsafeRawBufferPointer(start: data, count: length)
            let found = TransferResponse.read(headerBytes: line)
            if found != .skipped { transfer.response.record(found, of: line) }
            if let error = TransferLane.checkRedirect(line, of: transfer) {
                transfer.stop = .failed(error)
                return 0
            }
            return length
        }
        if instruments.logsConnectionDetails {
            _ = yx_easy_setopt_long(handle, CURLOPT_VERBOSE, 1)
            _ = yx_easy_setopt_pointer(handle, CURLOPT_DEBUGDATA, context)
            _ = yx_easy_setopt_debug_callback(handle) { _, type, data, size, context in
                guard let data, let context else { return 0 }
                let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
                guard let lane = transfer.lane else { return 0 }
                CurlDiagnostics.log(
                    type, UnsafeRawBufferPointer(start: data, count: size), url: transfer.redactedURL,
                    to: lane.instruments.logger)
                return 0
            }
        }
        _ = yx_easy_setopt_pointer(handle, CURLOPT_WRITEDATA, context)
        _ = yx_easy_setopt_write_callback(handle, CURLOPT_WRITEFUNCTION) { data, size, count, context in
            guard let context else { return 0 }
            let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
            guard let lane = transfer.lane else { return 0 }
            return lane.deliver(UnsafeRawBufferPointer(start: data, count: size * count), to: transfer)
        }
        transfer.lane = self
    }

    /// Frees the spare handles and the gathering buffer (no transfer runs: none holds bytes in it).
    private func releaseSpareHandles() {
        for handle in spareHandles { curl_easy_cleanup(handle) }
        spareHandles.removeAll()
        releaseGatheringBuffer()
    }

    /// Keeps body bytes for later in the turn, first handing over what another transfer gathered (or
    /// what does not leave room). Returns the handler's error for this transfer's own bytes.
    private func gather(_ bytes: UnsafeRawBufferPointer, for transfer: Transfer) -> DownloadError? {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return nil }
        if let owner = gatherer, owner !== transfer || gatheredCount + bytes.count > Self.coalescingCapacity,
            let error = handOverGathered()
        {
            if owner === transfer { return error }
            owner.stop = .failed(error)
            refused.append(owner)
        }
        guard bytes.count <= Self.coalescingCapacity else { return transfer.handler.transferDidReceive(bytes) }
        let buffer = gathered ?? UnsafeMutableRawPointer.allocate(byteCount: Self.coalescingCapacity, alignment: 16)
        gathered = buffer
        (buffer + gatheredCount).copyMemory(from: base, byteCount: bytes.count)
        gatheredCount += bytes.count
        gatherer = transfer
        return nil
    }

    /// Hands the gathered bytes to their transfer's handler; returns its error.
    private func handOverGathered() -> DownloadError? {
        guard let owner = gatherer, let buffer = gathered else { return nil }
        let count = gatheredCount
        gatherer = nil
        gatheredCount = 0
        return owner.handler.transferDidReceive(UnsafeRawBufferPointer(start: buffer, count: count))
    }

    /// The end of a turn: the gathered bytes go to their handler; a transfer whose handler refused bytes
    /// (a full disk, more bytes than asked) ends with that error.
    private func flushGatheredBytes() {
        if let owner = gatherer, let error = handOverGathered() {
            owner.stop = .failed(error)
            refused.append(owner)
        }
        guard !refused.isEmpty else { return }
        let ending = refused
        refused.removeAll()
        for transfer in ending {
            if case .failed(let error)? = transfer.stop { finish(transfer, .failure(error)) }
        }
    }

    private func releaseGatheringBuffer() {
        gathered?.deallocate()
        gathered = nil
    }

    /// A redirect (`3xx`) whose `Location` holds control characters is refused before curl follows it:
    /// such a target is never what the server meant, and curl would send it on in some form.
    static func checkRedirect(_ line: UnsafeRawBufferPointer, of transfer: Transfer) -> DownloadError? {
        // The name first: most lines are not `Location`, and reading the status is an access to the transfer.
        guard isLocationField(line), let status = refusedRedirectStatus(line, status: transfer.response.status) else {
            return nil
        }
        return DownloadError(
            .unexpectedResponse, "the server redirected to a Location with control characters (HTTP \(status))",
            url: transfer.redactedURL, httpStatus: status)
    }

    /// Whether `line` is a `Location` field with a value: the name in any case, the colon right after it
    /// (most lines are told apart by that ninth byte), and a byte after the colon.
    static func isLocationField(_ line: UnsafeRawBufferPointer) -> Bool {
        guard line.count > locationNameLength, line[locationNameLength - 1] == UInt8(ascii: ":") else { return false }
        // ASCII letters compared lower-cased (bit 5 set).
        for (index, letter) in "location".utf8.enumerated() where line[index] | 0x20 != letter { return false }
        return true
    }

    /// The length of `Location:`, the field's name with its colon.
    private static var locationNameLength: Int { 9 }

    /// The status of a redirect to refuse: `status` when `line` is a `Location` field of a `3xx` response
    /// whose value holds a control character (a tab inside it too), else nil.
    static func refusedRedirectStatus(_ line: UnsafeRawBufferPointer, status: Int) -> Int? {
        guard isLocationField(line), status >= 300, status < 400 else { return nil }
        var end = line.count
        while end > locationNameLength, line[end - 1] == 0x0A || line[end - 1] == 0x0D { end -= 1 }
        var start = locationNameLength
        while start < end, line[start] == 0x20 || line[start] == 0x09 { start += 1 }
        return line[start..<end].contains(where: { $0 < 0x20 || $0 == 0x7F }) ? status : nil
    }

    /// The write callback: check the response once, apply the speed limit, gather the bytes.
    fileprivate func deliver(_ bytes: UnsafeRawBufferPointer, to transfer: Transfer) -> Int {
        if !transfer.responseChecked, let handle = transfer.handle {
            var url: UnsafeMutablePointer<CChar>?
            if yx_easy_getinfo_string(handle, CURLINFO_EFFECTIVE_URL, &url) == CURLE_OK, let url {
                transfer.response.effectiveURL = String(cString: url)
            }
        }
        if !transfer.checkResponse() { return 0 }
        transfer.sawActivity = true
        if limit != nil {
            if transfer.allowance <= 0 {
                if !transfer.isPaused {
                    transfer.isPaused = true
                    transfer.wasPaused = true
                    paused.append(transfer)
                }
                return YX_CURL_WRITEFUNC_PAUSE
            }
            transfer.allowance -= Double(bytes.count)
        }
        if let error = gather(bytes, for: transfer) {
            transfer.stop = .failed(error)
            return 0
        }
        transfer.unreportedBytes += Int64(bytes.count)
        if transfer.unreportedBytes >= DownloadInstruments.bytesBatch { reportBytes(of: transfer) }
        return bytes.count
    }

    /// Ends transfers that received nothing for their stall timeout (curl's low-speed check averages
    /// over several seconds, so a burst followed by silence would go unnoticed for too long). A transfer
    /// held back by the speed limit is not stalled.
    private func expireStalledTransfers() {
        let now = DispatchTime.now().uptimeNanoseconds
        var stalled: [Transfer] = []  // ended after the loop, which must not change `active` (no copy of it each turn)
        for transfer in active.values {
            if transfer.isPaused || transfer.sawActivity {
                transfer.sawActivity = false
                transfer.lastActivity = now
                continue
            }
            let limit = max(0.1, transfer.request.stallTimeout).clampedNanoseconds
            if now > transfer.lastActivity, now - transfer.lastActivity > limit { stalled.append(transfer) }
        }
        for transfer in stalled {
            let timeout = transfer.request.stallTimeout
            // `--timeout 0.5` is half a second, not "1 s".
            let seconds = timeout == timeout.rounded() ? String(Int(timeout)) : String(timeout)
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
        guard let multi else { return }
        var remaining: Int32 = 0
        while let message = curl_multi_info_read(multi, &remaining) {
            guard message.pointee.msg == CURLMSG_DONE, let handle = message.pointee.easy_handle,
                let transfer = active[handle]
            else { continue }
            let code = message.pointee.data.result
            if code == CURLE_PEER_FAILED_VERIFICATION, retryWithWholeTrust(transfer, handle: handle) { continue }
            guard let outcome = end(transfer, outcome(of: transfer, code: code)) else { continue }
            let handler = transfer.handler
            if handler.transferWillComplete(outcome) {
                endsToReport.append((handler, outcome))
            } else {
                handler.transferDidComplete(outcome)
            }
        }
    }

    /// Reports the ends kept for after the requests were sent.
    private func reportEnds() {
        guard !endsToReport.isEmpty else { return }
        let ends = endsToReport
        endsToReport.removeAll(keepingCapacity: true)
        for end in ends { end.handler.transferDidComplete(end.outcome) }
    }

    /// A transfer whose connection failed verification against the CA directory alone, for want of a
    /// trusted issuer, is made again against the whole trust setting (see ``TrustStore``). Verification
    /// comes before any byte of the final response's body: what is undone is the handle, and the headers
    /// of any redirect before it (the retry starts from the request's URL). Returns whether it was.
    private func retryWithWholeTrust(_ transfer: Transfer, handle: UnsafeMutableRawPointer) -> Bool {
        guard transfer.trustAttempt == .directoryOnly, transfer.stop == nil, !transfer.responseChecked,
            !transfer.isPaused, gatherer !== transfer
        else { return false }
        var verifyResult = 0
        guard yx_easy_getinfo_long(handle, CURLINFO_SSL_VERIFYRESULT, &verifyResult) == CURLE_OK,
            TrustStore.issuerFailures.contains(verifyResult)
        else { return false }
        transfer.trustAttempt = .whole
        trustFallbacks.insert(transfer.request.url)
        var effective: UnsafeMutablePointer<CChar>?
        if yx_easy_getinfo_string(handle, CURLINFO_EFFECTIVE_URL, &effective) == CURLE_OK, let effective,
            let url = URL(string: String(cString: effective))
        {
            trustFallbacks.insert(url)  // a redirect's target, where the handshake failed
        }
        countConnections(of: handle)
        removeHandle(of: transfer, reusable: false)
        if let list = transfer.headerList {
            curl_slist_free_all(list)
            transfer.headerList = nil
        }
        transfer.response = TransferResponse()
        transfer.errorBuffer.pointee = 0
        add(transfer)
        return true
    }

    /// Adds the connections a transfer's handle opened to the lane's count.
    private func countConnections(of handle: UnsafeMutableRawPointer) {
        var connects = 0
        if yx_easy_getinfo_long(handle, CURLINFO_NUM_CONNECTS, &connects) == CURLE_OK, connects > 0 {
            inbox.withLock { $0.connectionCount += connects }
        }
    }

    private func outcome(of transfer: Transfer, code: CURLcode) -> TransferOutcome {
        if let handle = transfer.handle { countConnections(of: handle) }
        // An empty body never reached the write callback: check the response now.
        if code == CURLE_OK { _ = transfer.checkResponse() }
        switch transfer.stop {
        case .enough: return .success(transfer.response)
        case .failed(let error): return .failure(error)
        case nil: break
        }
        return code == CURLE_OK ? .success(transfer.response) : .failure(CurlErrorMapping.error(for: code, transfer: transfer))
    }

    /// Adds the bytes a transfer received since the last report to the engine's byte counter.
    private func reportBytes(of transfer: Transfer) {
        guard transfer.unreportedBytes > 0 else { return }
        instruments.bytes.increment(by: transfer.unreportedBytes)
        transfer.unreportedBytes = 0
    }

    /// Marks a transfer ended on this lane and takes it off the lane's load: every end on the lane's thread
    /// goes through here, so the load that `TransferEngine.laneTicket` reads cannot drift.
    private func markEnded(_ transfer: Transfer) {
        transfer.isDone = true
        load.subtract(1, ordering: .relaxed)
    }

    /// Removes a transfer from curl and reports its outcome, once.
    private func finish(_ transfer: Transfer, _ outcome: TransferOutcome) {
        if let outcome = end(transfer, outcome) { transfer.handler.transferDidComplete(outcome) }
    }

    /// Removes a transfer from curl, once: returns how it ended (nil when it had ended before).
    private func end(_ transfer: Transfer, _ outcome: TransferOutcome) -> TransferOutcome? {
        guard !transfer.isDone else { return nil }
        markEnded(transfer)
        var outcome = outcome
        // Bytes gathered in this turn are written first, whatever the end (a canceled download resumes
        // from them), unless the handler refused bytes: it wants no more.
        if gatherer === transfer {
            if case .failed? = transfer.stop {
                gatherer = nil
                gatheredCount = 0
            } else if let error = handOverGathered(), case .success = outcome {
                transfer.stop = .failed(error)
                outcome = .failure(error)
            }
        }
        reportBytes(of: transfer)
        if transfer.isPaused {
            transfer.isPaused = false
            paused.removeAll { $0 === transfer }
        }
        var succeeded = false
        if case .success = outcome { succeeded = true }
        // Only the handle of a transfer that succeeded and was never paused is reused: state of a failed
        // or paused transfer has outlived curl_easy_reset in libcurl releases (pause state until
        // curl/curl#20641 was fixed in 2026; a failed rewind, #18206).
        removeHandle(of: transfer, reusable: succeeded && transfer.stop == nil && !transfer.wasPaused)
        transfer.lane = nil
        return outcome
    }

    /// Takes a transfer's easy handle out of curl and of the lane: kept for the next transfer when
    /// `reusable` and there is room, freed otherwise.
    private func removeHandle(of transfer: Transfer, reusable: Bool) {
        guard let handle = transfer.handle else { return }
        active[handle] = nil
        engineTransfers.count.subtract(1, ordering: .relaxed)
        if let multi { curl_multi_remove_handle(multi, handle) }
        if reusable && spareHandles.count < Self.maxSpareHandles {
            // Back to curl's defaults (options, callbacks and their data, the error buffer); curl keeps
            // only caches that are not the transfer's own (connections, DNS, TLS sessions).
            curl_easy_reset(handle)
            spareHandles.append(handle)
        } else {
            curl_easy_cleanup(handle)
        }
        transfer.handle = nil
    }
}

/// How many transfers run on all lanes of one engine.
final class EngineTransferCount: Sendable {
    let count = Atomic<Int>(0)
}
