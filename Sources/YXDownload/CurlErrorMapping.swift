internal import CCurl
import Foundation

/// Turns a libcurl result into a ``DownloadError`` (the shape of corelibs' `urlErrorCode(for:)`).
enum CurlErrorMapping {
    static func error(for code: CURLcode, transfer: Transfer) -> DownloadError {
        var osErrno = 0
        if let handle = transfer.handle {
            _ = yx_easy_getinfo_long(handle, CURLINFO_OS_ERRNO, &osErrno)
        }
        let detail = transfer.curlErrorMessage ?? String(cString: curl_easy_strerror(code))
        // A redirect's status is not the failure's: the request it led to failed without a response.
        let status = transfer.response.status > 0 ? transfer.response.status : nil
        let redirected = status.map { (300...399).contains($0) } ?? false
        var failedURL: String?
        var redirects = 0
        if let handle = transfer.handle { _ = yx_easy_getinfo_long(handle, CURLINFO_REDIRECT_COUNT, &redirects) }
        // Only after a redirect: curl's own spelling of the URL asked for (`HTTP://`, `/a/../f`, a port
        // written `:08081`) is no other server.
        if redirects > 0, let handle = transfer.handle {
            var effective: UnsafeMutablePointer<CChar>?
            if yx_easy_getinfo_string(handle, CURLINFO_EFFECTIVE_URL, &effective) == CURLE_OK, let effective,
                let url = URL(string: String(cString: effective))
            {
                let shown = URLRedaction.redacted(url)
                if shown != transfer.redactedURL { failedURL = shown }
            }
        }
        func make(_ kind: DownloadError.Kind) -> DownloadError {
            var error = DownloadError(
                kind, detail, url: transfer.redactedURL,
                httpStatus: redirected && kind != .tooManyRedirects ? nil : status, curlCode: Int(code.rawValue),
                osErrno: osErrno == 0 ? nil : Int32(osErrno), retryAfter: transfer.response.retryAfter)
            error.failedURL = failedURL
            return error
        }
        switch code {
        case CURLE_URL_MALFORMAT:
            return make(.invalidURL)
        case CURLE_UNSUPPORTED_PROTOCOL:
            return make(.unsupportedScheme)
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            return make(.couldNotResolve)
        case CURLE_COULDNT_CONNECT:
            return make(.couldNotConnect)
        case CURLE_OPERATION_TIMEDOUT:
            return make(.timedOut)
        case CURLE_PARTIAL_FILE:
            return make(.partialBody)
        case CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_GOT_NOTHING, CURLE_HTTP2, CURLE_HTTP2_STREAM:
            return make(.connectionLost)
        case CURLE_TOO_MANY_REDIRECTS:
            return make(.tooManyRedirects)
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM,
            CURLE_SSL_CIPHER, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH,
            CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED,
            CURLE_SSL_CRL_BADFILE, CURLE_SSL_SHUTDOWN_FAILED:
            return make(.tls)
        case CURLE_WRITE_ERROR:
            return make(.fileSystem)
        case CURLE_OUT_OF_MEMORY where !transfer.responseChecked:
            // curl refuses a header line (or a whole head) over 100 KiB this way: the server's fault.
            var error = make(.unexpectedResponse)
            error.message = "the server sent a response header larger than curl accepts (100 KiB)"
            return error
        default:
            return make(.transfer)
        }
    }
}
