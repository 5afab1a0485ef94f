import Foundation
import YXQueue

/// The hashing step of a ``ChecksumJob``, written as a `QueueOperation` subclass: `execute(completion:)`
/// does the work and calls `completion` once; progress goes through `reportProgress(_:)`; cancellation
/// is noticed by polling `isCancelled` between pieces.
///
/// Its result is the FNV-1a 64 hash of its input, in hex.
final class HashOperation: QueueOperation, @unchecked Sendable {
    /// Why a checksum operation could not run.
    enum Failure: Error, CustomStringConvertible {
        /// The operation before it left nothing to work on.
        case missingInput

        var description: String { "the previous operation produced no data" }
    }

    /// Hashed per piece, with a progress report and a cancellation check after each.
    private static let pieceSize = 256 << 10

    private let input: @Sendable () -> Data?
    private let meter: ConcurrencyMeter?

    /// Creates an operation that hashes what `input` returns when the operation runs.
    init(model: OperationModel, meter: ConcurrencyMeter, input: @escaping @Sendable () -> Data?) {
        self.input = input
        self.meter = meter
        super.init(model: model)
    }

    /// Required by `QueueOperation` (the default manager creates operations through it); hashes nothing.
    required init(model: OperationModel, resourceIdentifier: String? = nil) {
        self.input = { nil }
        self.meter = nil
        super.init(model: model, resourceIdentifier: resourceIdentifier)
    }

    override func execute(completion: @escaping @Sendable (Result<(any Sendable)?, any Error>) -> Void) {
        guard let data = input() else { return completion(.failure(Failure.missingInput)) }
        // CPU work: done right here, on the queue's worker thread, which the operation holds anyway
        // until it completes. (Work that waits, e.g. for the network, would start it and return.)
        let outcome: Result<(any Sendable)?, any Error> = measured {
            var hash = FNV1a64()
            let finished = data.withUnsafeBytes { bytes -> Bool in
                var offset = 0
                while offset < bytes.count {
                    if isCancelled { return false }
                    let end = min(bytes.count, offset + Self.pieceSize)
                    hash.update(UnsafeRawBufferPointer(rebasing: bytes[offset..<end]))
                    offset = end
                    reportProgress(Double(offset) / Double(bytes.count))
                }
                return true
            }
            return finished ? .success(hash.hex) : .failure(CancellationError())
        }
        completion(outcome)
    }

    private func measured<T>(_ work: () -> T) -> T {
        guard let meter else { return work() }
        return meter.measure(model, work)
    }
}
