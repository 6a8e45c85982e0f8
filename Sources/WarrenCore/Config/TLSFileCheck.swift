import NIOSSL

/// TLS files checked when the configuration is read, with the loader Warren uses for them
/// (NIOSSL), so that `warren check` refuses what `warren serve` would and the error names the
/// key. A file that was readable but no certificate stopped `serve` with a bare
/// "failedToLoadCertificate", and a key of another certificate with "failedToLoadPrivateKey";
/// an AMQP CA file that was no certificate made every connection attempt fail, retried for
/// ever as if the broker were down. Each returns the reason, or nil when the file is fine.
enum TLSFileCheck {
    static func certificates(_ path: String) -> String? {
        do {
            return try NIOSSLCertificate.fromPEMFile(path).isEmpty ? "\(path) holds no PEM certificate" : nil
        } catch {
            return "\(path) is not a PEM certificate (\(error))"
        }
    }

    static func privateKey(_ path: String) -> String? {
        do {
            _ = try NIOSSLPrivateKey(file: path, format: .pem)
            return nil
        } catch {
            return "\(path) is not an unencrypted PEM private key (\(error))"
        }
    }

    /// Whether `key` is the private key of the first certificate in `certificate` (both
    /// checked on their own first).
    static func pair(certificate: String, key: String) -> String? {
        do {
            let chain = try NIOSSLCertificate.fromPEMFile(certificate)
            let privateKey = try NIOSSLPrivateKey(file: key, format: .pem)
            _ = try NIOSSLContext(configuration: .makeServerConfiguration(certificateChain: chain.map { .certificate($0) },
                                                                          privateKey: .privateKey(privateKey)))
            return nil
        } catch {
            return "\(key) is not the private key of the certificate in \(certificate) (\(error))"
        }
    }
}
