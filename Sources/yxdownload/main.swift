import Foundation
import YXDownloadCLI

HeapSettings.apply()
exit(YXDownloadMain.run(Array(CommandLine.arguments.dropFirst())))
