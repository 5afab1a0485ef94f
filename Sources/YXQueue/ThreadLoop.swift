#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Dispatch
import DequeModule

/// Where the executor runs an operation: on this thread, after what this thread is doing now, or on a
/// pool thread.
///
/// An operation that completes on some thread frees its queue slot there, and the next ready operation
/// takes the slot. Starting that operation on the same thread (instead of handing it to another one)
/// is what makes a small job cheap: no wake-up, no context switch. Doing so by plain recursion would
/// grow the stack with every operation of a long run, so each thread keeps a loop: work handed over
/// while the thread is already inside the loop is queued on it and runs when the current piece
/// returns.
enum ThreadLoop {
    /// This thread's loop: the operations waiting for the current piece of work to return.
    final class Context {
        var pending = Deque<(QueueOperation, WorkQueue)>()
        /// Inside `run` on this thread.
        var isRunning = false
        /// Inside `run` on a pool thread (a worker of `DispatchQueue.global`).
        var isPoolThread = false
        /// A ``DeliveryBatch`` is open on this thread.
        var batchIsOpen = false
        /// The jobs waiting to be handed to their callback queue at the end of the open batch: the first
        /// one, and the others in order.
        var batchFirst: Job?
        var batchMore: [Job] = []
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        // The destructor releases the context when its thread ends.
        let result = pthread_key_create(&key) { pointer in
            guard let pointer else { return }
            Unmanaged<Context>.fromOpaque(UnsafeRawPointer(pointer)).release()
        }
        assert(result == 0, "pthread_key_create failed")
        return key
    }()

    /// This thread's context, if it has one.
    static var existing: Context? {
        pthread_getspecific(key).map { Unmanaged<Context>.fromOpaque(UnsafeRawPointer($0)).takeUnretainedValue() }
    }

    /// This thread's context, created on first use.
    static var current: Context {
        if let existing = pthread_getspecific(key) {
            return Unmanaged<Context>.fromOpaque(UnsafeRawPointer(existing)).takeUnretainedValue()
        }
        let made = Context()
        pthread_setspecific(key, Unmanaged.passRetained(made).toOpaque())
        return made
    }

    /// Runs `operation` on this thread. When this thread is already running operations and `handedOver`
    /// is true (a slot passed on by an operation that completed here), it runs after the current one
    /// returns; otherwise now.
    static func run(_ operation: QueueOperation, in queue: WorkQueue, handedOver: Bool) {
        let context = current
        if context.isRunning && handedOver {
            context.pending.append((operation, queue))
            return
        }
        let wasRunning = context.isRunning
        context.isRunning = true
        operation.run(in: queue)
        if !wasRunning {
            while let (next, nextQueue) = context.pending.popFirst() {
                next.run(in: nextQueue)
            }
            context.isRunning = false
        }
    }

    /// Whether this thread is a pool thread inside the loop, where a handed-over operation that must
    /// not run on an arbitrary thread can still run next.
    static var isOnPoolThread: Bool {
        let context = current
        return context.isRunning && context.isPoolThread
    }

    /// Dispatch's global queue (one object, not one per call).
    private static let pool = DispatchQueue.global()

    /// Runs `operation` on a pool thread, in a loop of its own.
    static func runOnPool(_ operation: QueueOperation, in queue: WorkQueue) {
        pool.async {
            let context = current
            context.isPoolThread = true
            run(operation, in: queue, handedOver: false)
            context.isPoolThread = false
        }
    }
}
