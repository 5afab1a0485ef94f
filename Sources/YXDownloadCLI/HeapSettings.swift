#if canImport(Glibc)
import Glibc
#endif

/// How this process's heap keeps memory it freed: set once, before anything runs.
///
/// Each transfer has a 256 KiB receive buffer (`CURLOPT_BUFFERSIZE`, for large bodies), taken and
/// given back per download. glibc's defaults hand the pages of such a freed buffer back to the kernel
/// (an arena's free top above 2 × the last buffer's size is trimmed), so the next transfer faults
/// them in again, zeroed: on 2,000 files of 8 KiB that was about 0.8 page fault per file and 7 % of
/// the CPU time. Here the heap keeps up to 8 MiB free at the top of each arena, and only blocks of
/// 1 MiB or more are mapped on their own. Peak RSS does not change (the pages are reused, not added).
///
/// A library does not touch these process-wide settings: the commands' `main.swift` (`yxdownload`,
/// `yxdownload-queue`, whose worker downloads too) call ``apply()``.
package enum HeapSettings {
    /// `mallopt`'s parameters, from glibc's `<malloc.h>` (which the Glibc module does not import).
    private static let trimThreshold: Int32 = -1  // M_TRIM_THRESHOLD
    private static let mmapThreshold: Int32 = -3  // M_MMAP_THRESHOLD

    package static func apply() {
        #if canImport(Glibc)
        // Looked up rather than linked: a C library without it (musl) leaves its defaults.
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") else { return }
        let mallopt = unsafeBitCast(symbol, to: (@convention(c) (Int32, Int32) -> Int32).self)
        // Setting either turns off glibc's sliding thresholds, so both are set.
        _ = mallopt(mmapThreshold, 1 << 20)
        _ = mallopt(trimThreshold, 8 << 20)
        #endif
    }
}
