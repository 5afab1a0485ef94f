import Foundation
import NIOCore

extension ResponsePlan {
    /// Decides the response to `request` from what the locked state handed out for it.
    ///
    /// Pure: reads only its arguments, so it runs outside the lock.
    ///
    /// - Parameters:
    ///   - request: The request being answered.
    ///   - admission: The route's resource, the failure consumed and the request's index on the route.
    ///   - origin: `http://HOST:PORT` of the server, to make path redirects absolute.
    ///   - keepAlive: Whether the request allows the connection to stay open.
    /// - Returns: The plan.
    static func make(
        for request: RecordedRequest,
        admission: ServerState.Admission,
        origin: String,
        keepAlive: Bool
    ) -> ResponsePlan {
        let isHead = request.method == "HEAD"
        guard let resource = admission.resource else {
            return self.smallPage(status: 404, extraHeaders: [], resource: nil, isHead: isHead, keepAlive: keepAlive)
        }

        switch admission.failure {
        case .disconnect:
            return ResponsePlan(status: 0, headers: [], body: nil, closesConnection: true, disconnectsImmediately: true)
        case .status(let code, let retryAfter):
            let extra = retryAfter.map { [(name: "Retry-After", value: $0.headerValue)] } ?? []
            return self.smallPage(status: code, extraHeaders: extra, resource: resource, isHead: isHead, keepAlive: keepAlive)
        case .unaskedRange(let start, let end):
            if case .content(let versions) = resource.kind, !versions.isEmpty {
                let version = versions[min(admission.routeRequestIndex, versions.count - 1)]
                return self.unaskedRange(
                    start: start, end: end, of: version, resource: resource, isHead: isHead, keepAlive: keepAlive)
            }
        case .dropAfter, .shortBody, .stall, .misstatedLength, .announcedLengths, .ignoredRange, nil:
            break
        }

        var plan: ResponsePlan
        switch resource.kind {
        case .status(let code, let retryAfter):
            let extra = retryAfter.map { [(name: "Retry-After", value: $0.headerValue)] } ?? []
            plan = self.smallPage(status: code, extraHeaders: extra, resource: resource, isHead: isHead, keepAlive: keepAlive)
        case .redirect(let location, let code):
            let isPath = location.hasPrefix("/") && !location.hasPrefix("//")
            let absolute = isPath ? origin + location : location
            plan = self.smallPage(
                status: code,
                extraHeaders: [(name: "Location", value: absolute)],
                resource: resource,
                isHead: isHead,
                keepAlive: keepAlive
            )
        case .content(let versions):
            let version =
                versions.isEmpty
                ? Resource.Version(.bytes(Data()))
                : versions[min(admission.routeRequestIndex, versions.count - 1)]
            var ignoringRange = false
            if case .ignoredRange = admission.failure { ignoringRange = true }
            plan = self.content(
                version, of: resource, for: request, ignoringRange: ignoringRange, isHead: isHead, keepAlive: keepAlive)
        }

        if let failure = admission.failure {
            plan.apply(failure)
        }
        return plan
    }

    /// A content response: `200`, `206` or `416`, with validators.
    private static func content(
        _ version: Resource.Version,
        of resource: Resource,
        for request: RecordedRequest,
        ignoringRange: Bool = false,
        isHead: Bool,
        keepAlive: Bool
    ) -> ResponsePlan {
        let size = version.body.size
        let etag = version.etagHeaderValue
        let lastModified = version.lastModifiedHeaderValue

        var range = ByteRangeRequest.ignored
        if !resource.ignoresRange, !ignoringRange, let header = request.header("Range") {
            if let ifRange = request.header("If-Range"), !resource.ignoresIfRange,
                !self.ifRangeMatches(ifRange, etag: etag, lastModified: lastModified)
            {
                range = .ignored
            } else {
                range = ByteRangeRequest.evaluate(header, size: size)
            }
        }

        var headers: [(name: String, value: String)] = []
        if !resource.ignoresRange {
            headers.append((name: "Accept-Ranges", value: "bytes"))
        }
        if let etag {
            headers.append((name: "ETag", value: etag))
        }
        if let lastModified {
            headers.append((name: "Last-Modified", value: lastModified))
        }

        let status: Int
        let sent: Range<Int64>
        switch range {
        case .ignored:
            status = 200
            sent = 0..<size
        case .satisfiable(let bytes):
            status = 206
            sent = bytes
            headers.append((name: "Content-Range", value: "bytes \(bytes.lowerBound)-\(bytes.upperBound - 1)/\(size)"))
        case .unsatisfiable:
            headers.append((name: "Content-Range", value: "bytes */\(size)"))
            headers.append((name: "Content-Length", value: "0"))
            headers.append(contentsOf: self.closingHeaders(keepAlive: keepAlive))
            headers.append(contentsOf: resource.headers)
            return ResponsePlan(status: 416, headers: headers, body: nil, closesConnection: !keepAlive)
        }

        headers.append((name: "Content-Type", value: resource.contentType))
        return self.finish(
            status: status,
            headers: headers,
            source: version.body,
            range: sent,
            resource: resource,
            isHead: isHead,
            keepAlive: keepAlive
        )
    }

    /// A `206` for the bytes `start...end` of `version`, whatever was asked.
    private static func unaskedRange(
        start: Int64,
        end: Int64,
        of version: Resource.Version,
        resource: Resource,
        isHead: Bool,
        keepAlive: Bool
    ) -> ResponsePlan {
        let size = version.body.size
        let first = min(max(0, start), max(0, size - 1))
        let last = min(max(first, end), max(0, size - 1))
        var headers: [(name: String, value: String)] = [(name: "Accept-Ranges", value: "bytes")]
        if let etag = version.etagHeaderValue { headers.append((name: "ETag", value: etag)) }
        if let lastModified = version.lastModifiedHeaderValue {
            headers.append((name: "Last-Modified", value: lastModified))
        }
        headers.append((name: "Content-Range", value: "bytes \(first)-\(last)/\(size)"))
        headers.append((name: "Content-Type", value: resource.contentType))
        let range = size == 0 ? 0..<0 : first..<last + 1
        return self.finish(
            status: 206, headers: headers, source: version.body, range: range, resource: resource, isHead: isHead,
            keepAlive: keepAlive)
    }

    /// A status page or redirect: a short `text/plain` body such as `"404 Not Found\n"`.
    private static func smallPage(
        status: Int,
        extraHeaders: [(name: String, value: String)],
        resource: Resource?,
        isHead: Bool,
        keepAlive: Bool
    ) -> ResponsePlan {
        let text = Data("\(status) \(self.reasonPhrase(status))\n".utf8)
        var headers = extraHeaders
        headers.append((name: "Content-Type", value: "text/plain; charset=utf-8"))
        return self.finish(
            status: status,
            headers: headers,
            source: .bytes(text),
            range: 0..<Int64(text.count),
            resource: resource,
            isHead: isHead,
            keepAlive: keepAlive
        )
    }

    /// Adds framing and connection headers and the body plan.
    private static func finish(
        status: Int,
        headers: [(name: String, value: String)],
        source: BodySource,
        range: Range<Int64>,
        resource: Resource?,
        isHead: Bool,
        keepAlive: Bool
    ) -> ResponsePlan {
        var headers = headers
        let chunked = resource?.chunked ?? false
        if chunked {
            headers.append((name: "Transfer-Encoding", value: "chunked"))
        } else {
            headers.append((name: "Content-Length", value: String(range.count)))
        }
        headers.append(contentsOf: self.closingHeaders(keepAlive: keepAlive))
        headers.append(contentsOf: resource?.headers ?? [])
        let body =
            isHead
            ? nil
            : Body(
                source: source,
                range: range,
                chunked: chunked,
                bytesPerSecond: resource?.bytesPerSecond.flatMap { $0 > 0 ? $0 : nil },
                interruption: nil
            )
        return ResponsePlan(status: status, headers: headers, body: body, closesConnection: !keepAlive)
    }

    /// `Connection: close` when the connection will not be kept.
    private static func closingHeaders(keepAlive: Bool) -> [(name: String, value: String)] {
        keepAlive ? [] : [(name: "Connection", value: "close")]
    }

    /// Whether an `If-Range` value selects the current representation (RFC 9110 §13.1.5).
    ///
    /// A strong entity-tag must equal the current `ETag` exactly; weak tags never match; anything
    /// else is taken as a date and must be identical to the current `Last-Modified`.
    static func ifRangeMatches(_ value: String, etag: String?, lastModified: String?) -> Bool {
        let value = value.trimmingASCIISpaces()
        if value.hasPrefix("W/") {
            return false
        }
        if value.hasPrefix("\"") {
            guard let etag, !etag.hasPrefix("W/") else { return false }
            return value == etag
        }
        guard let lastModified else { return false }
        return value == lastModified
    }

    /// Applies a body failure (``Resource/Failure/dropAfter(bytes:)``, ``Resource/Failure/shortBody(missing:)``,
    /// ``Resource/Failure/stall(afterBytes:seconds:)``) to this plan; the head is left as it is.
    private mutating func apply(_ failure: Resource.Failure) {
        guard var body = self.body else {
            // HEAD or 416: no body to interrupt; cutting failures still close the connection.
            switch failure {
            case .dropAfter, .shortBody, .announcedLengths:
                self.closesConnection = true
            case .stall, .status, .disconnect, .misstatedLength, .unaskedRange, .ignoredRange:
                break
            }
            return
        }
        let length = Int64(body.range.count)
        switch failure {
        case .dropAfter(let bytes):
            body.interruption = .close(afterBytes: min(max(0, bytes), length))
            self.closesConnection = true
        case .shortBody(let missing):
            body.interruption = .close(afterBytes: max(0, length - max(0, missing)))
            self.closesConnection = true
        case .stall(let bytes, let seconds):
            // Clamped to [0, 10^6] s so that any Double (even infinity) makes a valid TimeAmount.
            let clamped = seconds.isNaN ? 0 : min(max(0, seconds), 1e6)
            let pause = TimeAmount.nanoseconds(Int64(clamped * 1e9))
            body.interruption = .stall(afterBytes: min(max(0, bytes), length), pause: pause)
        case .misstatedLength(let delta):
            let announced = max(0, length + delta)
            var upper = body.range.lowerBound + announced
            if case .bytes(let data) = body.source { upper = min(upper, Int64(data.count)) }
            body.range = body.range.lowerBound..<upper
            if let index = self.headers.firstIndex(where: { $0.name == "Content-Length" }) {
                self.headers[index].value = String(announced)
            }
        case .announcedLengths(let values):
            self.headers.removeAll { $0.name == "Content-Length" }
            self.headers += values.map { (name: "Content-Length", value: $0) }
            self.closesConnection = true
        case .status, .disconnect, .unaskedRange, .ignoredRange:
            break
        }
        self.body = body
    }
}
