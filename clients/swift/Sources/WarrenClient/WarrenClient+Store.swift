import Foundation

extension WarrenClient {
    // MARK: the store and presence (docs/protocol.md)

    /// The newest `limit` stored messages of `route` before `before` (an envelope id), oldest first.
    public func history(_ route: String, before: String? = nil, limit: Int? = nil) async throws -> HistoryPage {
        var query = [URLQueryItem(name: "route", value: route)]
        if let before { query.append(URLQueryItem(name: "before", value: before)) }
        if let limit { query.append(URLQueryItem(name: "limit", value: String(limit))) }
        return try await request("GET", "/v1/history", query: query, as: HistoryPage.self)
    }

    /// The user's conversations, newest activity first.
    public func conversations() async throws -> [Conversation] {
        try await request("GET", "/v1/conversations", as: Wire.ConversationList.self).conversations
    }

    /// Moves the user's read marker on `route` forward to `id`.
    public func read(_ route: String, id: String) async throws {
        _ = try await request("POST", "/v1/read", body: Wire.Read(route: route, id: id), as: NoAnswer.self)
    }

    /// The users present on `route`, on every node.
    public func presence(_ route: String) async throws -> [String] {
        try await request("GET", "/v1/presence", query: [URLQueryItem(name: "route", value: route)], as: Wire.Users.self).users
    }

    /// An HTTP request with the client's credentials; a 401 refreshes the token once.
    func request<Answer: Decodable & Sendable>(_ method: String, _ path: String, query: [URLQueryItem] = [],
                                            body: (some Encodable & Sendable)? = Optional<Wire.Cursor>.none, as: Answer.Type) async throws -> Answer {
        do {
            return try await http.send(method, path, query: query, body: body, token: token, user: configuration.user, as: Answer.self)
        } catch let e as WarrenError where e.status == 401 {
            guard await refreshToken() else { throw e }
            return try await http.send(method, path, query: query, body: body, token: token, user: configuration.user, as: Answer.self)
        }
    }

    /// Asks `getToken` for a new token; false when there is no way to get one.
    func refreshToken() async -> Bool {
        guard let getToken = configuration.getToken else { return false }
        do {
            token = try await getToken()
            return true
        } catch {
            errorContinuation.yield(WarrenError("unauthorized", "getToken failed: \(error)"))
            return false
        }
    }
}
