import Foundation

/// The number of processors this process may use (its CPU affinity and cgroup quota counted), read
/// once: Foundation reads it from `/proc` and `/sys` on every call, about 225,000 instructions, and the
/// dispatcher's and the transfer engine's defaults both ask for it at the start of a run.
package enum ActiveProcessors {
    /// `ProcessInfo.processInfo.activeProcessorCount` when first asked for.
    package static let count = ProcessInfo.processInfo.activeProcessorCount
}
