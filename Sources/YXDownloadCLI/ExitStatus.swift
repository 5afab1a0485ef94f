/// `yxdownload`'s exit statuses (SPEC §4).
public enum ExitStatus {
    /// Every download finished or was skipped.
    public static let success: Int32 = 0
    /// At least one download failed.
    public static let failure: Int32 = 1
    /// A usage error, an invalid or unreadable input file, or an output directory that cannot be
    /// created: nothing was downloaded.
    public static let usage: Int32 = 2
    // 130, 143 and 129 are 128 + SIGINT, 128 + SIGTERM and 128 + SIGHUP.
}
