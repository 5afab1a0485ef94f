import Foundation
import YXQueue

/// The first step of a download: looks at the disk (skip, finalize, resume) and, for a segmented
/// download, asks the server for the length, the validator and whether ranges work.
final class ProbeOperation: TransferOperation, @unchecked Sendable {
    override func execute(completion: @escaping @Sendable (Result<(any Sendable)?, any Error>) -> Void) {
        do {
            let needsNetwork = try session.prepare()
            guard needsNetwork else { return completion(.success(nil)) }
        } catch {
            return completion(.failure(error))
        }
        super.execute(completion: completion)
    }

    override func makeRequest() -> TransferRequest { session.probeRequest() }

    override func accept(_ response: TransferResponse, for request: TransferRequest) -> DownloadError? {
        if let error = session.applyProbe(response) { return error }
        // A 200 means the whole body is coming: stop it; the part operation fetches it.
        return response.status == 200 ? DownloadError(.transfer, "probe done", url: session.redactedURL) : nil
    }

    override func errorMeansSuccess(_ error: DownloadError) -> Bool {
        error.kind == .transfer && error.message == "probe done"
    }
}

/// Fetches one segment of the file (or the whole file in one stream) into the `.part`.
final class PartOperation: TransferOperation, @unchecked Sendable {
    /// The segment this operation fetches.
    var segment = 0

    override func makeRequest() -> TransferRequest { session.request(forSegment: segment) }

    override func accept(_ response: TransferResponse, for request: TransferRequest) -> DownloadError? {
        session.accept(response, segment: segment, requested: request)
    }

    override func receive(_ bytes: UnsafeRawBufferPointer) -> DownloadError? {
        if let error = session.write(bytes, segment: segment) { return error }
        reportProgress(session.fraction(ofSegment: segment))
        return nil
    }

    override func transferSucceeded(_ response: TransferResponse) -> DownloadError? {
        session.completeSegment(segment)
    }

    override func errorMeansSuccess(_ error: DownloadError) -> Bool {
        session.isSegmentComplete(segment)
    }
}

/// The last step: verify length and checksum, flush to disk (batched with other downloads, see
/// `DiskSync`), rename to the final name.
final class FinalizeOperation: QueueOperation, @unchecked Sendable {
    /// Set by the manager before the operation is submitted.
    var session: DownloadSession!

    override func execute(completion: @escaping @Sendable (Result<(any Sendable)?, any Error>) -> Void) {
        let session = session!
        let verified: DownloadSession.Verified
        do {
            verified = try session.verify()
        } catch {
            return completion(.failure(error))
        }
        guard case .awaitingCommit(let fd, let result, let hasSidecar) = verified else {
            if case .done(let result) = verified { completion(.success(result)) }
            return
        }
        guard session.options.syncBeforeRename else {
            do {
                return completion(.success(try session.commit(result, hasSidecar: hasSidecar)))
            } catch {
                return completion(.failure(error))
            }
        }
        DiskSync.shared.sync(fd) { flushed in
            guard flushed else {
                return completion(
                    .failure(DownloadError.fileSystem("cannot sync", path: session.partPath, url: session.redactedURL)))
            }
            do {
                completion(.success(try session.commit(result, hasSidecar: hasSidecar)))
            } catch {
                completion(.failure(error))
            }
        }
    }
}
