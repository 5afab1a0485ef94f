import Foundation
import YXDownloadCLI
import YXDownloadQueueCLI

// `yxdownload enqueue | worker | status`: `yxdownload` becomes this program, which parses and runs them.
HeapSettings.apply()
exit(YXDownloadQueueMain.run(Array(CommandLine.arguments.dropFirst())))
