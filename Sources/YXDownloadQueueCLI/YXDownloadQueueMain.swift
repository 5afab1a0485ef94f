import YXDownloadCLI

/// The entry point of `yxdownload-queue`, the program that runs `yxdownload enqueue | worker | status`
/// with the job stores linked (``StoreCommands``). It parses its arguments as `yxdownload` does, so it
/// accepts, checks and explains them alike.
public enum YXDownloadQueueMain {
    /// Parses `arguments` (without the program name), runs, and returns the exit status.
    public static func run(_ arguments: [String]) -> Int32 {
        YXDownloadMain.run(arguments, queueCommands: StoreCommands())
    }
}
