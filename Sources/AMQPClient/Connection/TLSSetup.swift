import NIOCore
import NIOSSL

/// The TLS side of an `amqps://` link: one NIOSSLContext per connection attempt (so a CA or
/// certificate file replaced on disk is picked up by the next reconnect), a handler per channel.
struct TLSSetup: Sendable {
    let context: NIOSSLContext
    /// nil when the host is an IP literal: NIOSSL then checks the certificate's IP addresses.
    let serverHostname: String?

    static func make(_ configuration: AMQPConfiguration) throws(AMQPError) -> TLSSetup {
        let options = configuration.tlsOptions
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        do {
            if let ca = options.caFile { tls.trustRoots = .file(ca) }
            switch (options.certificateFile, options.privateKeyFile) {
            case (let cert?, let key?):
                tls.certificateChain = try NIOSSLCertificate.fromPEMFile(cert).map { .certificate($0) }
                tls.privateKey = .privateKey(try NIOSSLPrivateKey(file: key, format: .pem))
            case (nil, nil):
                break
            default:
                throw AMQPError.invalidArgument("a TLS client certificate needs both its certificate and its key file")
            }
            let name = options.serverName ?? configuration.host
            let isIPLiteral = name.contains(":") || name.split(separator: ".").allSatisfy { UInt8($0) != nil }
            return TLSSetup(context: try NIOSSLContext(configuration: tls), serverHostname: isIPLiteral ? nil : name)
        } catch let error as AMQPError {
            throw error
        } catch {
            throw AMQPError.connectionFailed("TLS setup: \(error)")
        }
    }

    func handler() throws -> NIOSSLClientHandler {
        try NIOSSLClientHandler(context: context, serverHostname: serverHostname)
    }
}
