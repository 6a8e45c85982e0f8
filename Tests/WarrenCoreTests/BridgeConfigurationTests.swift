import AMQPClient
import Foundation
import Testing
@testable import WarrenCore

@Suite struct BridgeConfigurationTests {
    static var shipped: String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return try! String(contentsOf: root.appendingPathComponent("bridge.toml"), encoding: .utf8)
    }

    @Test func shippedFileParsesToTheDefaults() throws {
        let c = try BridgeConfiguration.parse(Self.shipped)
        #expect(c.amqp.exchange == "chat")
        #expect(c.amqp.client.host == "127.0.0.1" && c.amqp.client.vhost == "/")
        #expect(c.amqp.client.heartbeat == 30)
        #expect(c.http.listen == "127.0.0.1:8080")
        #expect(c.log.level == .info)
    }

    @Test func emptyFileIsValid() throws {
        let c = try BridgeConfiguration.parse("")
        #expect(c.amqp.url.hasPrefix("amqp://"))
    }

    @Test func aListOfBrokers() throws {
        let file = try BridgeConfiguration.parse("[amqp]\nurl = [\"amqp://u:p@r1:5672/%2f\", \"amqp://u:p@r2:5673/%2f\"]\n")
        #expect(file.amqp.client.endpoints.map(\.host) == ["r1", "r2"])
        let env = try BridgeConfiguration.parse("", environment: ["WARREN_AMQP_URL": "amqp://u:p@r1/%2f, amqp://u:p@r2:5673/%2f"])
        #expect(env.amqp.client.endpoints == [.init(host: "r1", port: 5672), .init(host: "r2", port: 5673)])
        #expect(throws: ConfigError.self) { try BridgeConfiguration.parse("[amqp]\nurl = [\"amqp://a\", 5]\n") }
        // The file's own list form in the environment too (it was read as one URL, "scheme must be amqp://").
        let listed = try BridgeConfiguration.parse("", environment: ["WARREN_AMQP_URL": #" ["amqp://u:p@r1/%2f", "amqp://u:p@r2:5673/%2f"] "#,
                                                                     "WARREN_ACL_SUBSCRIBE": #"["room.#"]"#])
        #expect(listed.amqp.client.endpoints == [.init(host: "r1", port: 5672), .init(host: "r2", port: 5673)])
        #expect(listed.acl.subscribe == ["room.#"])
        for bad in [#"["amqp://a", 5]"#, #"["amqp://a""#] {
            let error = #expect(throws: ConfigError.self) { try BridgeConfiguration.parse("", environment: ["WARREN_AMQP_URL": bad]) }
            #expect(error?.key == "WARREN_AMQP_URL", "\(bad)")
        }
    }

    /// `inbox.queue_type` and `store.queue_type`: `auto` is quorum (replicated) when `amqp.url`
    /// lists several brokers, classic for one; either may be set outright.
    @Test func queueTypesFollowTheBrokerList() throws {
        let one = try BridgeConfiguration.parse("")
        #expect(one.inbox.queueType == "classic" && one.store.queueType == "classic")
        let cluster = try BridgeConfiguration.parse("", environment: ["WARREN_AMQP_URL": "amqp://u:p@r1/%2f,amqp://u:p@r2/%2f"])
        #expect(cluster.inbox.queueType == "quorum" && cluster.store.queueType == "quorum")
        #expect(cluster.effectiveDescription.contains("queue_type = \"quorum\""))
        let set = try BridgeConfiguration.parse("[store]\nqueue_type = \"quorum\"\n")
        #expect(set.store.queueType == "quorum" && set.inbox.queueType == "classic")
        let error = #expect(throws: ConfigError.self) { try BridgeConfiguration.parse("[store]\nqueue_type = \"stream\"\n") }
        #expect(error?.key == "store.queue_type" && error?.line == 2)
    }

    /// `http.cors_origin`: one origin, several, or "*"; a value no browser's `Origin` could match
    /// (a trailing slash, a path, no scheme) is refused instead of never matching.
    @Test func corsOriginsAreOrigins() throws {
        #expect(try BridgeConfiguration.parse("").poll.corsOrigins == [])
        #expect(try BridgeConfiguration.parse("[http]\ncors_origin = \"https://Chat.example.com\"\n").poll.corsOrigins == ["https://chat.example.com"])
        #expect(try BridgeConfiguration.parse("[http]\ncors_origin = [\"https://a.example\", \"http://localhost:3000\"]\n").poll.corsOrigins
                == ["https://a.example", "http://localhost:3000"])
        #expect(try BridgeConfiguration.parse("", environment: ["WARREN_HTTP_CORS_ORIGIN": "*"]).poll.corsOrigins == ["*"])
        for bad in ["https://chat.example.com/", "chat.example.com", "https://a.example/app", "https://a.example?x=1", "*, https://a.example"] {
            let error = #expect(throws: ConfigError.self, "\(bad)") {
                try BridgeConfiguration.parse("", environment: ["WARREN_HTTP_CORS_ORIGIN": bad])
            }
            #expect(error?.key == "WARREN_HTTP_CORS_ORIGIN")
        }
    }

    @Test func environmentOverridesTheFile() throws {
        let c = try BridgeConfiguration.parse(Self.shipped, environment: [
            "WARREN_AMQP_URL": "amqp://u:p@broker:5673/v",
            "WARREN_AMQP_HEARTBEAT": "5",
            "WARREN_HTTP_LISTEN": "[::1]:9000",
        ])
        #expect(c.amqp.client.host == "broker" && c.amqp.client.port == 5673 && c.amqp.client.vhost == "v")
        #expect(c.amqp.client.heartbeat == 5)
        #expect(HostAndPort(c.http.listen) == HostAndPort("[::1]:9000"))
    }

    /// A misspelt variable (`WARREN_HTTP_LISTN`) is refused as an unknown key in the file is;
    /// every key the shipped file documents can be set from the environment; variables outside
    /// the configuration's sections (`WARREN_TOKEN`, the scripts' own) are not Warren's.
    @Test func unknownEnvironmentVariablesOfASectionAreRefused() throws {
        #expect(throws: ConfigError(key: "WARREN_HTTP_LISTN", reason: "unknown key (no http.listn in bridge.toml)")) {
            try BridgeConfiguration.parse("", environment: ["WARREN_HTTP_LISTN": "0.0.0.0:8080"])
        }
        #expect(throws: ConfigError.self) { try BridgeConfiguration.parse(Self.shipped, environment: ["WARREN_ROUTE_NAME": "rooms"]) }
        #expect(throws: Never.self) {
            try BridgeConfiguration.parse("", environment: ["WARREN_TOKEN": "x", "WARREN_RABBITMQ_DIR": "/tmp", "WARREN_BINARY": "w",
                                                            "WARREN_": "", "WARREN_HTTP": "", "PATH": "/bin"])
        }
        // Each key of the shipped file, set (to its shipped value) from the environment alone.
        var section = ""
        var checked: Set<String> = []
        for raw in Self.shipped.split(separator: "\n") {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("[") { section = line.trimmingCharacters(in: CharacterSet(charactersIn: "[]")); continue }
            guard !line.hasPrefix("#"), section != "route", let eq = line.firstIndex(of: "=") else { continue }
            let key = line[..<eq].trimmingCharacters(in: .whitespaces)
            var value = line[line.index(after: eq)...].trimmingCharacters(in: .whitespaces)
            value = value.trimmingCharacters(in: CharacterSet(charactersIn: "\"[]")).replacingOccurrences(of: "\", \"", with: ",")
            let name = "WARREN_\(section.uppercased())_\(key.uppercased())"
            checked.insert(name)
            do {
                _ = try BridgeConfiguration.parse("", environment: [name: value])
            } catch {
                #expect(!error.reason.hasPrefix("unknown key"), "\(name)=\(value): \(error)")
            }
        }
        #expect(checked.count > 70 && checked.contains("WARREN_HTTP_INTERNAL_LISTEN") && checked.contains("WARREN_NODE_ID"), "\(checked.sorted())")
    }

    @Test func errorsNameKeyLineAndReason() {
        let text = """
        [amqp]
        exchange = "chat"
        heartbeat = "often"
        """
        #expect(throws: ConfigError(key: "amqp.heartbeat", line: 3, reason: "must be an integer")) {
            try BridgeConfiguration.parse(text)
        }
        #expect(throws: ConfigError(key: "amqp.prefetch", line: 2, reason: "must be between 1 and 65535")) {
            try BridgeConfiguration.parse("[amqp]\nprefetch = 0\n")
        }
        #expect(throws: ConfigError(key: "amqp.exchnage", line: 2, reason: "unknown key")) {
            try BridgeConfiguration.parse("[amqp]\nexchnage = \"chat\"\n")
        }
        #expect(throws: ConfigError(key: "WARREN_AMQP_HEARTBEAT", reason: "must be an integer")) {
            try BridgeConfiguration.parse("", environment: ["WARREN_AMQP_HEARTBEAT": "x"])
        }
    }

    @Test func badURLAndSyntaxErrors() {
        do {
            _ = try BridgeConfiguration.parse("[amqp]\nurl = \"http://x\"\n")
            Issue.record("expected an error")
        } catch {
            #expect(error.key == "amqp.url" && error.line == 2)
        }
        do {
            _ = try BridgeConfiguration.parse("[amqp\nurl = 1\n")
            Issue.record("expected an error")
        } catch {
            #expect(error.line == 1)
        }
        #expect(throws: ConfigError.self) { try BridgeConfiguration.parse("[http]\nlisten = \"nowhere\"\n") }
        #expect(throws: ConfigError.self) { try BridgeConfiguration.parse("[log]\nlevel = \"loud\"\n") }
        #expect(throws: ConfigError(key: "bogus", reason: "unknown section")) { try BridgeConfiguration.parse("[bogus]\na = 1\n") }
    }

    @Test func presenceSectionIsValidated() throws {
        let c = try BridgeConfiguration.parse("[presence]\nenabled = false\ntimeout = 12\n")
        #expect(!c.presence.enabled && c.presence.timeoutSeconds == 12)
        #expect(c.effectiveDescription.contains("[presence]\nenabled = false\ntimeout = 12"))
        let defaults = try BridgeConfiguration.parse("")
        #expect(defaults.presence.enabled && defaults.presence.timeoutSeconds == 30)
        #expect(throws: ConfigError(key: "presence.timeout", line: 2, reason: "must be between 3 and 3600")) {
            try BridgeConfiguration.parse("[presence]\ntimeout = 1\n")
        }
        #expect(throws: ConfigError(key: "presence.color", line: 2, reason: "unknown key")) {
            try BridgeConfiguration.parse("[presence]\ncolor = 1\n")
        }
    }

    @Test func storeSectionIsValidated() throws {
        let c = try BridgeConfiguration.parse("""
            [store]
            url = "postgres://warren:pw@db:5432/chat"
            patterns = ["#.alice.#", "room.#"]
            max_age = "12h"
            skip_types = ["typing"]
            """)
        #expect(c.store.url == "postgres://warren:pw@db:5432/chat")
        #expect(c.store.maxAgeSeconds == 12 * 3600)
        #expect(c.store.patterns == ["#.alice.#", "room.#"])
        #expect(c.effectiveDescription.contains("postgres://warren:***@db:5432/chat"), "the password is masked")
        #expect(!c.effectiveDescription.contains(":pw@"))
        let defaults = try BridgeConfiguration.parse("")
        #expect(defaults.store.enabled && defaults.store.url == "sqlite://warren.sqlite" && defaults.store.maxAgeSeconds == 90 * 86_400)
        for (text, key) in [("url = \"mysql://x\"", "store.url"), ("patterns = [\"a..b\"]", "store.patterns"),
                            ("skip_types = [\"not a type\"]", "store.skip_types"), ("max_age = \"forever\"", "store.max_age"),
                            // Past a hundred years, and so many days that the seconds overflow (it trapped).
                            ("max_age = \"36501d\"", "store.max_age"), ("max_age = \"999999999999999d\"", "store.max_age"),
                            ("max_page = 0", "store.max_page"), ("queue = \"amq.x\"", "store.queue"), ("patterns = []", "store.patterns")] {
            do {
                _ = try BridgeConfiguration.parse("[store]\n\(text)\n")
                Issue.record("\(text) must be refused")
            } catch {
                #expect(error.key == key && error.line == 2, "\(text): \(error)")
            }
        }
        #expect(throws: ConfigError.self) { try BridgeConfiguration.parse("", environment: ["WARREN_STORE_URL": "sqlite://"]) }
        #expect(try BridgeConfiguration.parse("[store]\nmax_age = \"36500d\"\n").store.maxAgeSeconds == DurationText.longestSeconds)
    }

    @Test func durationsAreBoundedAndNeverOverflow() {
        #expect(DurationText.seconds("90s") == 90 && DurationText.seconds("30m") == 1800 && DurationText.seconds("7d") == 604_800)
        #expect(DurationText.seconds("876000h") == DurationText.longestSeconds)
        for text in ["0s", "-5m", "5", "5w", "", "d", "36501d", "3153600001s", "999999999999999d", "\(Int.max)s", "\(Int.max / 60 + 1)m"] {
            #expect(DurationText.seconds(text) == nil, "\(text)")
        }
    }
}

@Suite struct EffectiveConfigurationTests {
    @Test func secretFileIsReadAndNeverPrinted() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("warren-secret-\(UUID().uuidString)").path
        try "a-secret-read-from-a-file-0123456789\n".write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let c = try BridgeConfiguration.parse("[auth]\nmode = \"token\"\nsecret_file = \"\(path)\"\n",
                                              environment: ["WARREN_AMQP_URL": "amqp://u:hunter2@h:5672/v"])
        #expect(c.auth.secret == "a-secret-read-from-a-file-0123456789")
        let printed = c.effectiveDescription
        #expect(!printed.contains("a-secret-read-from-a-file") && !printed.contains("hunter2"))
        #expect(printed.contains("secret = \"***\"") && printed.contains("amqp://u:***@h:5672/v"))
        #expect(throws: ConfigError.self) { try BridgeConfiguration.parse("[auth]\nsecret_file = \"/nonexistent/secret\"\n") }
        #expect(throws: ConfigError.self) { try BridgeConfiguration.parse("[log]\nformat = \"xml\"\n") }
        #expect(try BridgeConfiguration.parse("[log]\nformat = \"json\"\n").log.json)
    }
}

@Suite struct AuthConfigurationTests {
    static let secret = "secret = \"0123456789abcdef0123456789abcdef\"\n"

    func key(of text: String) -> String? {
        do { _ = try BridgeConfiguration.parse(text); return nil } catch { return error.key }
    }

    @Test func noneModeIsRefusedOffLoopbackUnlessAllowed() throws {
        #expect(key(of: "[http]\nlisten = \"0.0.0.0:8080\"\n") == "auth.mode")
        #expect(key(of: "[http]\nlisten = \"[::]:8080\"\n") == "auth.mode")
        #expect(key(of: "[http]\nlisten = \"0.0.0.0:8080\"\n[auth]\nallow_insecure = true\n") == nil)
        #expect(key(of: "[http]\nlisten = \"127.0.0.1:8080\"\n") == nil)
        #expect(key(of: "[http]\nlisten = \"localhost:8080\"\n") == nil)
        #expect(key(of: "[http]\nlisten = \"[::1]:8080\"\n") == nil)
        #expect(key(of: "[http]\nlisten = \"0.0.0.0:8080\"\n[auth]\nmode = \"token\"\n" + Self.secret) == nil)
        // The environment can lift it, as every key.
        #expect(throws: Never.self) {
            try BridgeConfiguration.parse("[http]\nlisten = \"0.0.0.0:8080\"\n", environment: ["WARREN_AUTH_ALLOW_INSECURE": "true"])
        }
    }

    /// The operations listener is optional, an address, and not the public one.
    @Test func internalListenIsAnotherAddress() throws {
        #expect(try BridgeConfiguration.parse("").http.internalListen == "")
        #expect(try BridgeConfiguration.parse("[http]\ninternal_listen = \"127.0.0.1:9090\"\n").http.internalListen == "127.0.0.1:9090")
        #expect(try BridgeConfiguration.parse("", environment: ["WARREN_HTTP_INTERNAL_LISTEN": "[::1]:9090"]).http.internalListen == "[::1]:9090")
        #expect(key(of: "[http]\ninternal_listen = \"9090\"\n") == "http.internal_listen")
        #expect(key(of: "[http]\ninternal_listen = \"127.0.0.1:8080\"\n") == "http.internal_listen")
        #expect(key(of: "[http]\nlisten = \"0.0.0.0:8080\"\ninternal_listen = \"10.0.0.5:8080\"\n[auth]\nallow_insecure = true\n") == "http.internal_listen")
        // Another interface on the same port is another address.
        #expect(key(of: "[http]\nlisten = \"127.0.0.1:8080\"\ninternal_listen = \"127.0.0.2:8080\"\n") == nil)
    }

    @Test func routeClassNamesAreUnique() throws {
        let twice = "[[route]]\nname = \"a\"\npattern = \"room.#\"\n[[route]]\nname = \"a\"\npattern = \"group.#\"\n"
        let error = #expect(throws: ConfigError.self) { try BridgeConfiguration.parse(twice) }
        #expect(error?.key == "route.name" && error?.line == 4, "\(String(describing: error))")
        let c = try BridgeConfiguration.parse(twice.replacingOccurrences(of: "name = \"a\"\npattern = \"group", with: "name = \"b\"\npattern = \"group"))
        #expect(c.routes.map(\.name) == ["a", "b"])
    }

    @Test func publicKeyModesNeedAReadableKey() throws {
        let base = "[auth]\nmode = \"token\"\n" + Self.secret
        #expect(key(of: base + "algorithm = \"RS256\"\n") == "auth.public_key_file")
        #expect(key(of: base + "algorithm = \"PS512\"\n") == "auth.algorithm")
        #expect(key(of: base + "algorithm = \"ES256\"\npublic_key_file = \"/nonexistent.pem\"\n") == "auth.public_key_file")
        #expect(key(of: base + "leeway = 100000\n") == "auth.leeway")
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("warren-key-\(UUID().uuidString).pem").path
        try TokenAuthorityTests.rsaPublic.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let c = try BridgeConfiguration.parse(base + "algorithm = \"rs256\"\npublic_key_file = \"\(path)\"\naudience = \"chat\"\nleeway = 5\n")
        #expect(c.auth.algorithm == .rs256 && c.auth.publicKeyPEM == TokenAuthorityTests.rsaPublic)
        #expect(c.auth.rules == TokenRules(leeway: 5, audience: "chat", issuer: nil))
        #expect(c.effectiveDescription.contains("public_key = loaded"))
        // A readable file that is not a key of the algorithm's kind is refused here, naming the
        // key and the file: `warren check` passed an RSA key for ES256 (and an EC key for
        // RS256, or the private key given as the public one), which `warren serve` then
        // refused with a bare "underlyingCoreCryptoError".
        let rsaAsES = #expect(throws: ConfigError.self) {
            try BridgeConfiguration.parse(base + "algorithm = \"ES256\"\npublic_key_file = \"\(path)\"\n")
        }
        #expect(rsaAsES?.description.contains("auth.public_key_file") == true
                && rsaAsES?.description.contains("not an ES256 public key") == true, "\(String(describing: rsaAsES))")
        #expect(key(of: base + "algorithm = \"RS256\"\nprivate_key_file = \"\(path)\"\n") == "auth.private_key_file")
    }
}

@Suite struct TLSConfigurationTests {
    /// A self-signed P-256 certificate and its key, and another key (made with openssl for these
    /// tests; nothing trusts them).
    static let certificate = """
-----BEGIN CERTIFICATE-----
MIIBgzCCASmgAwIBAgIUKUAdT4/1N6FwEQ+GYYeAuwSx1ecwCgYIKoZIzj0EAwIw
FjEUMBIGA1UEAwwLd2FycmVuLXRlc3QwIBcNMjYxMTI4MDgyNzU4WhgPMjEyNjEx
MDQwODI3NThaMBYxFDASBgNVBAMMC3dhcnJlbi10ZXN0MFkwEwYHKoZIzj0CAQYI
KoZIzj0DAQcDQgAEKimPOuNpv3OV0OmWsVipNn/zR2zxAyaitS1T/APZ8zBVw5s/
MWZ/eI3vLlrokuUSIWWekOYQZ+a8pFMw/3IVy6NTMFEwHQYDVR0OBBYEFDq3y4F6
MhgEcPjQPZW4PyoTOjkYMB8GA1UdIwQYMBaAFDq3y4F6MhgEcPjQPZW4PyoTOjkY
MA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSAAwRQIhANo/0nC8mtBbyYjW
YiRqBo8/mKR47ao4C467pj/U6MotAiAErnQ0Msv7vSP69uuLY3jmkpZ0W9giya4A
LZKUNbdbhQ==
-----END CERTIFICATE-----
"""
    static let key = """
-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgNtRMQIS2zDJfYbaf
iGnRzp4/R1r/XUcVPNN7RgjETUShRANCAAQqKY8642m/c5XQ6ZaxWKk2f/NHbPED
JqK1LVP8A9nzMFXDmz8xZn94je8uWuiS5RIhZZ6Q5hBn5rykUzD/chXL
-----END PRIVATE KEY-----
"""
    static let otherKey = """
-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQghsGKFGs2YI7H1MxB
day8qAOhzobHpI6W3QnbpFBWG2OhRANCAARdj1pei79DuSl8lfoSiXNSz1VahYxT
HggfoAizVuVuuxOFevN58vKlBupIH84WjYoJtivn5QabWs8Z5oRG0mYV
-----END PRIVATE KEY-----
"""

    /// Writes `text` to a temporary file for the test; removed by `remove`.
    static func file(_ text: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("warren-tls-\(UUID().uuidString).pem").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    static func key(of text: String) -> String? {
        do { _ = try BridgeConfiguration.parse(text); return nil } catch { return error.key }
    }

    @Test func tlsFilesMustBeReadableAndCertificatesComeWithKeys() throws {
        let amqps = "[amqp]\nurl = \"amqps://u:p@broker.example.com/%2f\"\n"
        #expect(Self.key(of: amqps) == nil)
        #expect(Self.key(of: amqps + "tls_ca_file = \"/nonexistent/ca.pem\"\n") == "amqp.tls_ca_file")
        let path = try Self.file(Self.certificate)
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(Self.key(of: amqps + "tls_cert_file = \"\(path)\"\n") == "amqp.tls_cert_file")
        let c = try BridgeConfiguration.parse(amqps + "tls_ca_file = \"\(path)\"\ntls_server_name = \"rabbit.internal\"\n")
        #expect(c.amqp.client.tls && c.amqp.client.port == 5671)
        #expect(c.amqp.client.tlsOptions == .init(caFile: path, serverName: "rabbit.internal"))
    }

    /// A readable file that is no certificate, or a key that is not the certificate's, is refused
    /// when the file is read, naming the key: `warren check` passed them, and `warren serve`
    /// then stopped with a bare "failedToLoadCertificate" / "failedToLoadPrivateKey" (HTTPS),
    /// or retried the broker for ever (an AMQP CA file that was no certificate).
    @Test func tlsFilesMustBeCertificatesAndKeysThatBelongTogether() throws {
        let (certificate, key, other, junk) = (try Self.file(Self.certificate), try Self.file(Self.key), try Self.file(Self.otherKey),
                                               try Self.file("not really a certificate"))
        defer { for p in [certificate, key, other, junk] { try? FileManager.default.removeItem(atPath: p) } }
        let amqps = "[amqp]\nurl = \"amqps://u:p@broker.example.com/%2f\"\n"
        #expect(Self.key(of: amqps + "tls_ca_file = \"\(junk)\"\n") == "amqp.tls_ca_file")
        #expect(Self.key(of: amqps + "tls_cert_file = \"\(certificate)\"\ntls_key_file = \"\(junk)\"\n") == "amqp.tls_key_file")
        #expect(Self.key(of: amqps + "tls_cert_file = \"\(certificate)\"\ntls_key_file = \"\(other)\"\n") == "amqp.tls_key_file")
        #expect(Self.key(of: amqps + "tls_cert_file = \"\(certificate)\"\ntls_key_file = \"\(key)\"\n") == nil)
        #expect(Self.key(of: "[http]\ntls_cert_file = \"\(junk)\"\ntls_key_file = \"\(key)\"\n") == "http.tls_cert_file")
        #expect(Self.key(of: "[http]\ntls_cert_file = \"\(certificate)\"\ntls_key_file = \"\(other)\"\n") == "http.tls_key_file")
        #expect(Self.key(of: "[http]\ntls_cert_file = \"\(certificate)\"\ntls_key_file = \"\(key)\"\n") == nil)
    }
}
