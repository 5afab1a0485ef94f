import Dispatch
import YXDownloadCLI
@_spi(YXQueueInternals) import YXQueue

/// Runs the async body of a store subcommand from `yxdownload`'s synchronous entry point
/// (``YXDownloadMain/run(_:)``) and returns its exit status. The calling thread only waits: the body
/// runs on the cooperative pool.
enum BlockingRun {
    static func run(_ body: @escaping @Sendable () async -> Int32) -> Int32 {
        let status = Locked<Int32>(ExitStatus.failure)
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            let value = await body()
            status.withLock { $0 = value }
            done.signal()
        }
        done.wait()
        return status.withLock { $0 }
    }
}
