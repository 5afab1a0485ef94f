import ArgumentParser

/// The entry point of `yxdownload`.
public enum YXDownloadMain {
    /// Parses `arguments` (without the program name), runs, and returns the exit status.
    ///
    /// argument-parser's own `main()` exits with 64 (`EX_USAGE`) for usage errors; SPEC §4 wants 2, so
    /// the errors are printed and mapped here.
    public static func run(_ arguments: [String]) -> Int32 {
        let command: YXDownloadCommand
        do {
            var parsed = try YXDownloadCommand.parseAsRoot(arguments)
            guard let ours = parsed as? YXDownloadCommand else {
                // `help` and other built-in commands print and throw CleanExit.
                try parsed.run()
                return ExitStatus.success
            }
            command = ours
        } catch {
            let message = YXDownloadCommand.fullMessage(for: error)
            let code = YXDownloadCommand.exitCode(for: error)
            if code == .success {
                Console.standard.writeOut(message.isEmpty ? "" : message + "\n")
                return ExitStatus.success
            }
            Console.standard.writeErr(message + "\n")
            return ExitStatus.usage
        }
        return command.execute()
    }
}
