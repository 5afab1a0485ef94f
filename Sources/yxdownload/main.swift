import Foundation
import YXDownloadCLI

exit(YXDownloadMain.run(Array(CommandLine.arguments.dropFirst())))
