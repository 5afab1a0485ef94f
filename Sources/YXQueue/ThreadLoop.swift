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
    ///
    /// A struct reached through a pointer, not a class: the fields of a class are checked for exclusive
    /// access at run time (`swift_beginAccess`) at each change, twice per operation here, and each
    /// lookup of a class instance retains it.
    struct Context {
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
            let context = pointer.assumingMemoryBound(to: Context.self)
            context.deinitialize(count: 1)
            context.deallocate()
        }
        assert(result == 0, "pthread_key_create failed")
        return key
    }()

    /// This thread's context, if it has one.
    static var existing: UnsafeMutablePointer<Context>? {
        pthread_getspecific(key).map { $0.assumingMemoryBound(to: Context.self) }
    }

    /// This thread's context, created on first use. Only this thread touches it.
    static var current: UnsafeMutablePointer<Context> {
        if let existing = pthread_getspecific(key) { return existing.assumingMemoryBound(to: Context.self) }
        let made = UnsafeMutablePointer<Context>.allocate(capacity: 1)
        made.initialize(to: Context())
        pthread_setspecific(key, made)
        return made
    }

    /// Runs `operation` on this thread. When this thread is already running operations and `handedOver`
    /// is true (a slot passed on by an operation that completed here), it runs after the current one
    /// returns; otherwise now.
    static func run(_ operation: QueueOperation, in queue: WorkQueue, handedOver: Bool) {
        let context = current
        if context.pointee.isRunning && handedOver {
            context.pointee.pending.append((operation, queue))
            return
        }
        let wasRunning = context.pointee.isRunning
        context.pointee.isRunning = true
        operation.run(in: queue)
        if !wasRunning {
            while let (next, nextQueue) = context.pointee.pending.popFirst() {
                next.run(in: nextQueue)
            }
            context.pointee.isRunning = false
        }
    }

    /// Whether this thread is a pool thread inside the loop, where a handed-over operation that must
    /// not run on an arbitrary thread can still run next.
    static var isOnPoolThread: Bool {
        let context = current
        return context.pointee.isRunning && context.pointee.isPoolThread
    }

    /// Dispatch's global queue (one object, not one per call).
    private static let pool = DispatchQueue.global()

    /// Runs `operation` on a pool thread, in a loop of its own.
    static func runOnPool(_ operation: QueueOperation, in queue: WorkQueue) {
        pool.async {
            let context = current
            context.pointee.isPoolThread = true
            run(operation, in: queue, handedOver: false)
            context.pointee.isPoolThread = false
        }
    }
}
