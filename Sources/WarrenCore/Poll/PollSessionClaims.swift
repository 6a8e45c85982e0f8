import JWTKit

struct PollSessionClaims: JWTPayload {
    var sub: SubjectClaim
    var sid: String
    var dev: String
    var subs: [PollSubscription]
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}
