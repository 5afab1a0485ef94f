import Foundation
import YXDownloadCLI
import YXDownloadQueueCLI

// `yxdownload enqueue | worker | status`: `yxdownload` parses them, then becomes this program.
HeapSettings.apply()
exit(YXDownloadQueueMain.run(Array(CommandLine.arguments.dropFirst())))
