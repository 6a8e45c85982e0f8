import Foundation
import WarrenBenchKit
#if canImport(Glibc)
import Glibc
#endif

/// Nchan (Debian's `nginx` with `libnginx-mod-nchan`), the anchor for polling: a private
/// configuration under a temporary prefix, nginx started in the foreground (`daemon off`) on
/// loopback for one target run and stopped by its PID after it.
final class NchanServer: MeasuredServer {
    let process = Process()
    let port: Int
    let prefix: String

    /// `apt-get install nginx-light libnginx-mod-nchan` (`scripts/nchan.sh install`) provides these.
    static let binary = "/usr/sbin/nginx"
    static let module = "/usr/lib/nginx/modules/ngx_nchan_module.so"

    static var installed: Bool {
        FileManager.default.isExecutableFile(atPath: binary) && FileManager.default.fileExists(atPath: module)
    }

    init(port: Int, log: String) throws {
        self.port = port
        if !Self.installed {
            // Installed with apt-get when missing, as scripts/rabbitmq.sh does for the broker.
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "scripts/nchan.sh")
            p.arguments = ["install"]
            try? p.run()
            p.waitUntilExit()
        }
        guard Self.installed else {
            throw BenchError.warren("Nchan is not installed and scripts/nchan.sh install failed (run from the repository's root)")
        }
        guard LoopbackHTTP.status(port: port, path: "/") == nil else {
            throw BenchError.warren("something already listens on 127.0.0.1:\(port)")
        }
        prefix = NSTemporaryDirectory() + "warren-bench-nchan-\(getpid())"
        try? FileManager.default.removeItem(atPath: prefix)
        try FileManager.default.createDirectory(atPath: prefix + "/logs", withIntermediateDirectories: true)
        try Self.configuration(port: port, prefix: prefix).write(toFile: prefix + "/nginx.conf", atomically: true, encoding: .utf8)
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments = ["-p", prefix + "/", "-c", prefix + "/nginx.conf", "-e", prefix + "/logs/error.log"]
        try launch(log: log, readyPath: "/healthz", within: 30)
    }

    /// One worker per core (as Debian's own configuration does), long-polls held up to 25 s
    /// (Warren's bench pollers wait 25 s too), new subscribers start at the oldest buffered
    /// message (so none published after the first request is written is missed), and a
    /// message buffer long enough for the unpaced runs.
    static func configuration(port: Int, prefix: String) -> String {
        """
        load_module \(module);
        worker_processes auto;
        worker_rlimit_nofile 40000;
        daemon off;
        pid \(prefix)/nginx.pid;
        events { worker_connections 20000; }
        http {
            access_log off;
            client_body_temp_path \(prefix)/body;
            proxy_temp_path \(prefix)/proxy;
            keepalive_requests 100000000;
            keepalive_timeout 300s;
            nchan_max_reserved_memory 512M;
            server {
                listen 127.0.0.1:\(port) backlog=4096;
                location = /healthz { return 200 "ok\\n"; }
                location ~ ^/pub/(.+)$ {
                    nchan_publisher;
                    nchan_channel_id $1;
                    nchan_message_buffer_length 10000;
                    nchan_message_timeout 10m;
                }
                location ~ ^/sub/(.+)$ {
                    nchan_subscriber longpoll;
                    nchan_channel_id $1;
                    nchan_subscriber_first_message oldest;
                    nchan_subscriber_timeout 25s;
                }
                location ~ ^/multi/(.+)$ {
                    nchan_subscriber longpoll;
                    nchan_channel_id $1;
                    nchan_subscriber_first_message oldest;
                    nchan_subscriber_timeout 25s;
                    nchan_longpoll_multipart_response raw;
                }
                location ~ ^/es/(.+)$ {
                    nchan_subscriber eventsource;
                    nchan_channel_id $1;
                    nchan_subscriber_first_message oldest;
                }
            }
        }
        """
    }

    /// The master and its workers together.
    var probe: ProcessProbe { ProcessProbe(pid: process.processIdentifier, withChildren: true) }

    /// SIGQUIT (nginx's graceful stop) to the PID we started, then waits; SIGKILL if it lingers.
    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGQUIT)
        let deadline = Date().addingTimeInterval(10)
        while process.isRunning, Date() < deadline { usleep(50_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        try? FileManager.default.removeItem(atPath: prefix)
    }
}

/// A server the bench starts for one run and measures: Warren or an anchor.
protocol MeasuredServer: AnyObject {
    var process: Process { get }
    var port: Int { get }
    var probe: ProcessProbe { get }
    func stop()
}

extension MeasuredServer {
    /// Starts the configured process with its output in `log` and waits until `readyPath`
    /// answers 200 on its port.
    func launch(log: String, readyPath: String, within seconds: Double) throws {
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let handle = FileHandle(forWritingAtPath: log)
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        let deadline = Date().addingTimeInterval(seconds)
        while LoopbackHTTP.status(port: port, path: readyPath) != 200 {
            guard process.isRunning else { throw BenchError.warren("\(process.executableURL?.lastPathComponent ?? "server") exited at start; see \(log)") }
            guard Date() < deadline else { throw BenchError.warren("not ready after \(Int(seconds)) s; see \(log)") }
            usleep(50_000)
        }
    }
}
