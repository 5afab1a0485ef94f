import Foundation
import Logging
@_spi(YXQueueInternals) import YXQueue

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The state of one attempt of one download, shared by its operations: the `.part` file, the resume
/// sidecar, the plan, and the counters.
///
/// This file holds the state and its lifetime (which steps use the `.part` descriptor, and when it is
/// closed). Each concept of a download has its own file:
/// - `DownloadSession+Planning.swift`: the disk and the probe decide what to fetch, and the requests;
/// - `DownloadSession+ResponseChecks.swift`: a response is checked before any byte of it is written;
/// - `DownloadSession+PartFile.swift`: the bytes go into the `.part` (and a bad one is removed);
/// - `DownloadSession+UnnamedPart.swift`: a fresh `.part` gets its name only when it is worth resuming;
/// - `DownloadSession+Sidecar.swift`: the resume state: a mark on the `.part`, or the sidecar `NAME.part.meta`;
/// - `DownloadSession+Verification.swift`: the length and the checksum (hashing) of the whole `.part`;
/// - `DownloadSession+Commit.swift`: the flush to disk and the rename to the final name.
///
/// Methods marked "engine thread" are called from transfer callbacks (on the lane of the engine that runs
/// the transfer; the parts of one file may run on different lanes) and never block beyond a `pwrite`
/// (and, about once a second, a small atomic sidecar write).
final class DownloadSession: @unchecked Sendable {
    /// What the probe decided.
    enum Plan: Equatable {
        case undecided
        /// The file exists and overwrite is off.
        case skip
        /// The `.part` already holds the whole body.
        case finalizeOnly
        /// Transfer the unfinished segments.
        case transfer
    }

    let url: URL
    let redactedURL: String
    /// The final file (its URL made only for the result, when the job was given a path).
    let final: FileLocation
    /// The final and partial paths as strings, made once: `URL.path` and `appendingPathExtension` cost
    /// tens of thousands of instructions each on Linux.
    let finalPath: String
    let partPath: String
    /// The sidecar's path, made when asked: a download that starts in a fresh folder and ends well never
    /// needs it.
    var metaPath: String { partPath + ".meta" }
    let options: DownloadOptions
    let checksum: Checksum?
    let engine: TransferEngine

    /// Everything that changes, behind one lock (the extensions in `DownloadSession+*.swift` use it).
    let state: Locked<State>

    struct State {
        var plan = Plan.undecided
        var resume: ResumeState
        var fd: Int32 = -1
        /// The `.part` has no name yet (see ``DownloadSession/openUnnamedPart()``): nothing of this
        /// download is in the folder.
        var isUnnamed = false
        var resumedFrom: Int64 = 0
        var received: Int64 = 0
        /// When the sidecar was last written (at first: when the session began, so a download that ends
        /// within a second never writes one).
        var lastPersist = DispatchTime.now().uptimeNanoseconds
        /// Whether `NAME.part.meta` exists (loaded from an earlier run, or written by this one).
        var hasSidecar = false
        /// The resume mark on the `.part` (see ``ResumeMark``), as this session last set or found it.
        var mark: String?
        /// Setting a mark failed (a file system without extended attributes): the sidecar instead.
        var markRefused = false
        /// The sidecar existed when this session began: an earlier process, killed while it rewrote it,
        /// may have left `NAME.part.meta.tmp`, which the commit removes. (This process never leaves one:
        /// a failed write removes its own.)
        var mayFindStaleTemporary = false
        var speed = SpeedMeter()
        /// The response's validator differs from what the `.part` was made of: start over next time.
        var invalidated = false
        /// Per segment: where the bytes not yet handed to the disk's write-back begin.
        var writebackFrom: [Int: Int64] = [:]
        /// Per segment whose range request the server answered with the whole file (`200`, the same
        /// version): how many bytes of that body still come before the segment's next byte, to be passed
        /// over (see ``DownloadSession/accept(_:segment:requested:)``).
        var passingOver: [Int: Int64] = [:]
        /// Bytes written since the last flush ahead of the end (see ``DownloadSession/flushAheadBytes``),
        /// and whether one is under way.
        var bytesSinceFlushAhead: Int64 = 0
        var flushingAhead = false
        /// Steps working with the session now (see ``DownloadStep``).
        var users = 0
        /// The attempt is over: no step will use the `.part` again, and it is closed once `users` is 0.
        var ended = false
        /// The failure of a step that ended the attempt (not a cancel), for the steps that begin after it
        /// (see ``DownloadSession/beginUse()``).
        var endingFailure: (any Error)?
    }

    /// Whether this session belongs to no download (see ``detached()``).
    let isDetached: Bool
    /// The job's ``DownloadJob/onSaving``: called by ``finalize(isCanceled:_:)`` before the flush.
    let onSaving: (@Sendable (DownloadProgress) -> Void)?
    /// Whether the maker of the download knew that the final file, the `.part` and the sidecar were
    /// absent: ``prepare()`` then creates the `.part` exclusively instead of looking for them.
    let destinationIsFresh: Bool

    /// A session for a step made without one: already ended, so nothing ever uses it.
    static func detached() -> DownloadSession {
        DownloadSession(
            url: URL(fileURLWithPath: "/"), final: FileLocation(path: "/dev/null"),
            options: DownloadOptions(),
            checksum: nil, engine: .shared, detached: true)
    }

    init(
        url: URL, final: FileLocation, options: DownloadOptions, checksum: Checksum?,
        engine: TransferEngine, destinationIsFresh: Bool = false, detached: Bool = false,
        onSaving: (@Sendable (DownloadProgress) -> Void)? = nil
    ) {
        let redacted = URLRedaction.redacted(url)
        self.url = url
        self.redactedURL = redacted
        self.final = final
        self.finalPath = final.path
        self.partPath = final.path + ".part"
        self.options = options
        self.checksum = checksum
        self.engine = engine
        self.isDetached = detached
        self.destinationIsFresh = destinationIsFresh
        self.onSaving = onSaving
        state = Locked(State(resume: ResumeState(url: redacted, segments: []), ended: detached))
    }

    /// `NAME.part.meta`, the resume sidecar.
    var metaFile: URL { URL(fileURLWithPath: metaPath) }

    deinit {
        let fd = state.withLock { $0.fd }
        if fd >= 0 { close(fd) }
    }

    // MARK: - Use by steps

    /// Whether the attempt is over and its `.part` descriptor closed (or never opened).
    var isClosed: Bool { state.withLock { $0.ended && $0.fd < 0 } }

    /// What a step that begins finds (see ``beginUse()``).
    enum Use {
        /// The step may work with the `.part`; it calls ``endUse(endingAttempt:failure:)`` when done.
        case begun
        /// The attempt is over: the step must not touch the file. `failure`: the failure of the step
        /// that ended it, when one did (else a cancel, or the file was finalized).
        case attemptEnded(failure: (any Error)?)
    }

    /// A step begins to work with the session, unless the attempt is over.
    func beginUse() -> Use {
        state.withLock { s in
            guard !s.ended else { return .attemptEnded(failure: s.endingFailure) }
            s.users += 1
            return .begun
        }
    }

    /// A step is done with the session; `endingAttempt` when the attempt is over with it (a failure, a
    /// cancel, or the file was finalized), and `failure` when a failure ended it.
    func endUse(endingAttempt: Bool, failure: (any Error)? = nil) {
        let fd = state.withLock { s -> Int32? in
            s.users -= 1
            if endingAttempt {
                // Only a failure that ends the attempt (not one after a cancel ended it) is its failure.
                if let failure, !s.ended { s.endingFailure = failure }
                s.ended = true
            }
            return Self.takeDescriptorIfUnused(&s)
        }
        if let fd { close(fd) }
    }

    /// The attempt is over (its job ended): the `.part` is closed now, or when the last step using it
    /// stops. Idempotent.
    func end() {
        let fd = state.withLock { s -> Int32? in
            s.ended = true
            return Self.takeDescriptorIfUnused(&s)
        }
        if let fd { close(fd) }
    }

    /// The descriptor to close, once the attempt is over and no step uses it; -1 is left behind, so a
    /// late use fails (EBADF) instead of reaching a file that reused the number.
    private static func takeDescriptorIfUnused(_ s: inout State) -> Int32? {
        guard s.ended, s.users == 0, s.fd >= 0 else { return nil }
        defer { s.fd = -1 }
        return s.fd
    }

    var plan: Plan { state.withLock { $0.plan } }
    var segmentCount: Int { state.withLock { $0.resume.segments.count } }

    func isSegmentComplete(_ index: Int) -> Bool {
        state.withLock { s in index < s.resume.segments.count && s.resume.segments[index].isComplete }
    }

    /// Bytes still to fetch for a segment (nil = unknown).
    func remainingBytes(_ index: Int) -> Int64? {
        state.withLock { s in s.resume.segments[index].length.map { $0 - s.resume.segments[index].done } }
    }

    /// Bytes that were in the `.part` from an earlier run when this attempt began (known once the disk
    /// was looked at).
    var resumedFrom: Int64 { state.withLock { $0.resumedFrom } }

    /// The logger of the engine the download runs on.
    var logger: Logger { engine.instruments.logger }

    var progress: DownloadProgress {
        state.withLock { s in
            DownloadProgress(
                bytes: s.resume.doneBytes, total: s.resume.total, bytesPerSecond: s.speed.bytesPerSecond(),
                bytesReceived: s.received)
        }
    }
}
