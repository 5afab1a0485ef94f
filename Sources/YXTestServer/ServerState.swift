import NIOConcurrencyHelpers
import NIOCore

/// All mutable state of one ``TestHTTPServer``: routes, counters, recorded requests, connections.
///
/// Lives in exactly one `NIOLockedValueBox` shared by the server object and its connection handlers.
/// Methods here only compute and mutate; the caller acts (writes, closes) after releasing the lock.
struct ServerState: Sendable {
    /// One served path: the resource and what has been consumed of it.
    struct Route: Sendable {
        /// The resource as given to ``TestHTTPServer/serve(_:_:)``.
        var resource: Resource

        /// How many of `resource.failures` have been used.
        var failuresUsed = 0

        /// How many requests this route has answered since it was served (selects the version).
        var requestsAnswered = 0
    }

    /// What a request is to be answered with, decided under the lock.
    struct Admission: Sendable {
        /// The route's resource, or `nil` for an unknown path.
        var resource: Resource?

        /// The failure this request consumed, if any.
        var failure: Resource.Failure?

        /// The index of the request on its route since the route was served (0 for the first).
        var routeRequestIndex: Int
    }

    /// Routes by exact path (no query).
    var routes: [String: Route] = [:]

    /// Every request since the start or the last reset, in order.
    var recorded: [RecordedRequest] = []

    /// Connections accepted since the start or the last reset.
    var connectionCount = 0
    /// Responses being sent now, and the most at once since the start or the last reset.
    var responsesNow = 0
    var mostResponsesAtOnce = 0

    /// Connections accepted since the start, never reset: numbers connections.
    var connectionSerial = 0

    /// Connections currently open, so that `stop()` can close them.
    var openConnections: [ObjectIdentifier: any Channel] = [:]

    /// Set once by `stop()`: new connections are refused from then on.
    var isStopped = false

    /// Records `request` and decides how its route answers it, consuming a failure if one is left.
    mutating func admit(_ request: RecordedRequest) -> Admission {
        self.recorded.append(request)
        guard var route = self.routes[request.path] else {
            return Admission(resource: nil, failure: nil, routeRequestIndex: 0)
        }
        var failure: Resource.Failure?
        if route.failuresUsed < route.resource.failures.count {
            failure = route.resource.failures[route.failuresUsed]
            route.failuresUsed += 1
        }
        let index = route.requestsAnswered
        route.requestsAnswered += 1
        self.routes[request.path] = route
        return Admission(resource: route.resource, failure: failure, routeRequestIndex: index)
    }

    /// Registers a new connection; returns its number, or `nil` when the server is stopping.
    mutating func accept(_ channel: any Channel) -> Int? {
        guard !self.isStopped else { return nil }
        self.connectionCount += 1
        self.connectionSerial += 1
        self.openConnections[ObjectIdentifier(channel)] = channel
        return self.connectionSerial
    }

    /// A response began (`true`) or ended, however it ended.
    mutating func responseStarted(_ started: Bool) {
        responsesNow += started ? 1 : -1
        mostResponsesAtOnce = max(mostResponsesAtOnce, responsesNow)
    }
}
