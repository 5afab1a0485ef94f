import Foundation

extension JobStoreStatus {
    /// The snapshot as JSON: what `status --json` prints. Dates are ISO 8601, keys sorted.
    public func jsonData(prettyPrinted: Bool = true) throws -> Data {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = prettyPrinted ? [.prettyPrinted, .sortedKeys] : [.sortedKeys]
        return try encoder.encode(self)
    }

    /// The snapshot as plain-text tables: states with their units, then each worker's running jobs with
    /// their progress, then the limits.
    ///
    /// ```
    /// state       jobs  units done   units total
    /// waiting        0           0             0
    /// available     12           0             0
    /// ...
    /// ```
    public func formattedTable() -> String {
        var lines: [String] = []
        var stateRows = [["state", "jobs", "units done", "units total"]]
        for summary in states {
            stateRows.append([
                summary.state.rawValue, String(summary.jobs), String(summary.completedUnits),
                String(summary.totalUnits),
            ])
        }
        stateRows.append(["total", String(total), "", ""])
        lines += Self.table(stateRows, rightAligned: [1, 2, 3])
        if scheduled > 0 {
            lines.append("(\(scheduled) of the available jobs wait for their not-before time)")
        }
        if !workers.isEmpty {
            lines.append("")
            var rows = [["worker", "job", "name", "attempt", "progress", "units"]]
            for worker in workers {
                for job in worker.jobs {
                    let percent = job.progress.fraction.map { String(format: "%.1f %%", $0 * 100) } ?? "-"
                    let units: String =
                        switch (job.progress.completedUnits, job.progress.totalUnits) {
                        case (let done?, let total?): "\(done)/\(total)"
                        case (let done?, nil): "\(done)"
                        default: "-"
                        }
                    let name = job.cancelRequested ? "\(job.name) (canceling)" : job.name
                    rows.append([worker.worker, String(job.id.rawValue), name, String(job.attempt), percent, units])
                }
            }
            lines += Self.table(rows, rightAligned: [1, 3, 4, 5])
        }
        if !limits.isEmpty {
            lines.append("")
            var rows = [["limit key", "running", "limit"]]
            for limit in limits {
                rows.append([limit.key, String(limit.running), String(limit.limit)])
            }
            lines += Self.table(rows, rightAligned: [1, 2])
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private static func table(_ rows: [[String]], rightAligned: Set<Int>) -> [String] {
        guard let columns = rows.map(\.count).max() else { return [] }
        var widths = [Int](repeating: 0, count: columns)
        for row in rows {
            for (index, cell) in row.enumerated() {
                widths[index] = max(widths[index], cell.count)
            }
        }
        return rows.map { row in
            row.enumerated().map { index, cell in
                let pad = String(repeating: " ", count: widths[index] - cell.count)
                return rightAligned.contains(index) ? pad + cell : cell + pad
            }
            .joined(separator: "  ")
            .replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression)
        }
    }
}
