#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Synchronization
import YXQueue
import YXTerminal

/// Ctrl-C during the demo: the first one cancels every job of the dispatcher (the demo then ends its
/// stage, gives the cursor back, prints the summary and exits 130); a second one exits at once.
final class Interruption: Sendable {
    private let dispatcher: Dispatcher
    private let terminal: Console
    private let count = Atomic<Int>(0)
    /// Delivers SIGINT. (A dispatch source is not `Sendable`; behind a lock it is.)
    private let source: Mutex<any DispatchSourceSignal>

    /// Watches SIGINT for as long as the object lives.
    init(dispatcher: Dispatcher, terminal: Console) {
        self.dispatcher = dispatcher
        self.terminal = terminal
        signal(SIGINT, SIG_IGN)  // delivered to the dispatch source instead
        source = Mutex(DispatchSource.makeSignalSource(signal: SIGINT, queue: .global()))
        source.withLock { source in
            source.setEventHandler { [weak self] in self?.interrupt() }
            source.resume()
        }
    }

    /// Whether Ctrl-C was pressed.
    var happened: Bool { count.load(ordering: .sequentiallyConsistent) > 0 }

    private func interrupt() {
        if count.add(1, ordering: .sequentiallyConsistent).newValue == 1 {
            dispatcher.cancelAll()
        } else {
            terminal.writeOut("\u{1B}[?25h\n")
            exit(130)
        }
    }
}
