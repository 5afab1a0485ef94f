import XCTest

@testable import YXQueue

#if canImport(Glibc)
/// glibc's `malloc_usable_size(3)` (its header, `malloc.h`, is not in the Glibc module).
@_silgen_name("malloc_usable_size")
private func malloc_usable_size(_ pointer: UnsafeMutableRawPointer?) -> Int
#endif

/// A job's state, its graph and its operation are each at most 120 bytes with their object's 16-byte
/// header: glibc's smallest chunks, which another thread frees without taking the arena's lock. Each
/// is made on the thread that adds a job and freed on one that ends it (issue #14: one larger chunk
/// freed across threads per job cost about 18 % of the no-op throughput).
final class JobLayoutTests: XCTestCase {
    func testTheJobStateFitsInASmallChunk() {
        XCTAssertLessThanOrEqual(MemoryLayout<Job.Core>.size, 104)
        #if canImport(Glibc)
        let job = Job()
        XCTAssertLessThanOrEqual(malloc_usable_size(Unmanaged.passUnretained(job.core.storageObject).toOpaque()), 120)
        #endif
    }

    func testTheGraphFitsInASmallChunk() {
        XCTAssertLessThanOrEqual(MemoryLayout<JobManager.Graph>.size, 104)
        #if canImport(Glibc)
        let box = JobManager.GraphBox()
        XCTAssertLessThanOrEqual(malloc_usable_size(Unmanaged.passUnretained(box).toOpaque()), 120)
        #endif
    }

    func testAnOperationFitsInASmallChunk() {
        #if canImport(Glibc)
        let operation = QueueOperation(queue: "layout")
        XCTAssertLessThanOrEqual(malloc_usable_size(Unmanaged.passUnretained(operation).toOpaque()), 120)
        #endif
    }
}
