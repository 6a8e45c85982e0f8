import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Warren's HTTP endpoints through URLSession (FoundationNetworking on Linux), with the
/// client's credentials: a Bearer token, or `?user=` in none mode.
struct HTTPRequester: Sendable {
    let base: URL
    let session: URLSession
    /// Seconds a request may go unanswered (the client's `timeout`); a long-poll adds its wait.
    let timeout: TimeInterval

    init(base: URL, timeout: TimeInterval) {
        self.base = base
        self.timeout = timeout
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 90
        self.session = URLSession(configuration: configuration)
    }

    /// Sends a request; the decoded answer, or a ``WarrenError`` (Warren's, or `unavailable`
    /// when Warren cannot be reached).
    func send<Answer: Decodable & Sendable>(_ method: String, _ path: String, query: [URLQueryItem] = [], body: (some Encodable & Sendable)? = Optional<Wire.Cursor>.none,
                                 token: String?, user: String?, as: Answer.Type, waiting: Int = 0) async throws -> Answer {
        let data = try await raw(method, path, query: query, body: body.map { Data(Wire.encode($0).utf8) }, token: token, user: user,
                                 timeout: TimeInterval(waiting) + timeout)
        do {
            return try JSONDecoder().decode(Answer.self, from: data.isEmpty ? Data("{}".utf8) : data)
        } catch {
            throw WarrenError("bad_response", "\(method) \(path): \(error)")
        }
    }

    func raw(_ method: String, _ path: String, query: [URLQueryItem], body: Data?, token: String?, user: String?,
             timeout: TimeInterval) async throws -> Data {
        var c = URLComponents(url: base, resolvingAgainstBaseURL: false)!
        c.path = (c.path.hasSuffix("/") ? String(c.path.dropLast()) : c.path) + path
        var items = query
        if token == nil, let user { items.append(URLQueryItem(name: "user", value: user)) }
        if !items.isEmpty { c.queryItems = items }
        var request = URLRequest(url: c.url!)
        request.httpMethod = method
        request.timeoutInterval = timeout
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        if let body {
            request.httpBody = body
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let data: Data
        let response: URLResponse
        // Never cancelled: a cancel racing a completion can crash FoundationNetworking ("a task
        // that in not in the registry", swift-corelibs-foundation#3292; the CI saw it once). A
        // caller that stops waiting leaves the request to finish or time out on its own.
        let session = self.session
        let transfer = Task { try await session.data(for: request) }
        do {
            (data, response) = try await transfer.value
        } catch {
            throw WarrenError("unavailable", "cannot reach Warren: \(error.localizedDescription)")
        }
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        if (200..<300).contains(status) { return data }
        if let e = try? JSONDecoder().decode(Wire.ErrorBody.self, from: data) {
            throw WarrenError(e.error.code, e.error.message, status: status, ref: e.error.ref)
        }
        throw WarrenError(status >= 500 ? "unavailable" : "bad_response", "HTTP \(status)", status: status)
    }
}
