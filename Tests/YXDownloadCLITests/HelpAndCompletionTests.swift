import Foundation
import XCTest

/// `--help` word for word, shell completions and the subcommand form.
final class HelpAndCompletionTests: CLITestCase {
    /// The help, as checked in: a change to it shows up as a diff of `Fixtures/help.txt`. To accept a new
    /// help text: `COLUMNS=80 .build/debug/yxdownload --help > Tests/YXDownloadCLITests/Fixtures/help.txt`.
    func testHelpIsTheCheckedInText() async throws {
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/help.txt")
        let expected = try String(contentsOf: fixture, encoding: .utf8)
        for flag in ["--help", "-h", "help"] {
            let help = try await RunningCommand([flag], in: work, environment: ["COLUMNS": "80"]).wait()
            XCTAssertEqual(help.status, 0, flag)
            XCTAssertEqual(help.stderr, "", flag)
            XCTAssertEqual(help.stdout, expected, "\(flag): the help differs from Fixtures/help.txt")
        }
        // What the help must answer (so that an edit of the fixture cannot drop it silently).
        for needed in [
            "yxdownload https://example.com/a.iso", "yxdownload -i urls.txt", "yxdownload urls.txt -j 8",
            "out=debian.iso", "dir=isos", "checksum=sha-256=HEX", "NAME.part", "run the same", "resumes",
            "Exit status: 0", "2 bad usage", "130 interrupted", "143 terminated",
            "-j, --jobs <N>", "-i, --input-file <LIST>", "-v, --verbose", "--json", "--no-sync", "--version",
        ] {
            XCTAssertTrue(expected.contains(needed), "the help lacks \(needed)")
        }
        let download = try await RunningCommand(["download", "--help"], in: work, environment: ["COLUMNS": "80"]).wait()
        XCTAssertEqual(download.stdout, expected, "the subcommand's own help is the same text")
    }

    func testVersion() async throws {
        let version = try await yxdownload("--version")
        XCTAssertEqual(version.status, 0)
        XCTAssertEqual(version.stdout, "1.0.0\n")
    }

    func testCompletionScriptsForBashZshAndFish() async throws {
        for shell in ["bash", "zsh", "fish"] {
            let output = try await yxdownload("--generate-completion-script", shell)
            XCTAssertEqual(output.status, 0, "\(shell): \(output.stderr)")
            for option in ["connections", "input-file", "max-speed", "verbose", "json", "no-sync"] {
                XCTAssertTrue(output.stdout.contains(option), "\(shell) completes --\(option)")
            }
            let script = root.appendingPathComponent("completion.\(shell)")
            try Data(output.stdout.utf8).write(to: script)
            // The script parses in its shell, where that shell is installed.
            let checker = "/usr/bin/\(shell)"
            guard FileManager.default.isExecutableFile(atPath: checker) else { continue }
            let parsed = try await RunningCommand(["-n", script.path], in: work, executable: checker).wait()
            XCTAssertEqual(parsed.status, 0, "\(shell) -n: \(parsed.stderr)")
        }
        let bashScript = try await yxdownload("--generate-completion-script", "bash").stdout
        XCTAssertTrue(bashScript.contains("complete -o filenames -F _yxdownload yxdownload"))

        // Completing an option right after the command name, in a real bash, offers the download's options
        // (downloading is the default subcommand; argument-parser's own script would offer only --help).
        let bash = "/usr/bin/bash"
        let script = root.appendingPathComponent("completion.bash").path
        let probe = """
            source "\(script)"
            COMP_WORDS=(yxdownload --conn); COMP_CWORD=1; COMP_LINE="yxdownload --conn"; COMP_POINT=${#COMP_LINE}
            _yxdownload yxdownload --conn yxdownload
            printf '%s\\n' "${COMPREPLY[@]}"
            """
        let offered = try await RunningCommand(["-c", probe], in: work, executable: bash).wait()
        XCTAssertEqual(offered.stdoutLines.sorted(), ["--connect-timeout", "--connections"], offered.stderr)
    }

    /// `scripts/manpage` writes a page groff reads without a warning, with every option and its default.
    func testTheManPageHasEveryOption() async throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/manpage")
        let groff = "/usr/bin/groff"
        try XCTSkipUnless(FileManager.default.isExecutableFile(atPath: groff), "groff reads man pages")
        let folder = root.appendingPathComponent("man")
        let made = try await RunningCommand(
            ["--binary", RunningCommand.binary.path, "--output", folder.path], in: work, executable: script.path).wait()
        XCTAssertEqual(made.status, 0, made.stderr)
        let page = folder.appendingPathComponent("yxdownload.1")
        let checked = try await RunningCommand(["-mandoc", "-Tutf8", "-ww", "-z", page.path], in: work, executable: groff).wait()
        XCTAssertEqual(checked.status, 0)
        XCTAssertEqual(checked.stderr, "", "groff's warnings")
        let text = try String(contentsOf: page, encoding: .utf8)
        for needed in [
            ".It Fl j , Fl -jobs Ar N", ".It Fl i , Fl -input-file Ar LIST", ".It Fl x , Fl -connections Ar N",
            ".It Fl v , Fl -verbose",
            "Downloads transferring at the same time. (default: 5)", ".Sh EXIT STATUS", ".It 130", ".Bd -literal -offset indent",
            "  checksum=sha-256=HEX  also md5=, sha-1=, sha-512=",
        ] {
            XCTAssertTrue(text.contains(needed), "the page lacks \(needed)")
        }
    }

    func testDownloadIsAlsoASubcommand() async throws {
        serveGenerated("/sub.bin", size: 1000, seed: 1)
        let output = try await yxdownload("download", server.url("/sub.bin").absoluteString)
        XCTAssertEqual(output.status, 0, output.stderr)
        XCTAssertTrue(holdsGenerated("sub.bin", size: 1000, seed: 1))
    }
}
