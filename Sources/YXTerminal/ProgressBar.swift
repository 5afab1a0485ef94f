/// A progress bar as text: `[#########>          ]`.
package enum ProgressBar {
    /// The bar for `fraction` (clamped to 0...1) with `width` columns inside the brackets.
    package static func text(_ fraction: Double, width: Int) -> String {
        let width = max(0, width)
        let filled = min(width, Int((min(1, max(0, fraction)) * Double(width)).rounded(.down)))
        let head = filled < width ? ">" : ""
        let body = String(repeating: "#", count: filled) + head
        return "[" + body + String(repeating: " ", count: max(0, width - body.count)) + "]"
    }
}
