import Foundation
import Testing
import WarrenCore

/// The documentation a newcomer reads: it stands alone (every link resolves inside the
/// repository, nothing points outside it), stays short where it must, documents every
/// configuration key, and BENCHMARKS.md's figures come from files it cites.
@Suite("Documentation")
struct DocsTests {
    static let root = WarrenProcess.packageRoot

    static func text(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    static var pages: [String] {
        let docs = (try? FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("docs").path)) ?? []
        return ["README.md", "BENCHMARKS.md", "CHANGELOG.md", "CONTRIBUTING.md", "deploy/README.md", "clients/js/README.md",
                "clients/swift/README.md"] + docs.filter { $0.hasSuffix(".md") }.map { "docs/" + $0 }
    }

    /// Every relative link of every page names a file or folder of the repository.
    @Test func everyLinkResolvesInsideTheRepository() throws {
        #expect(Self.pages.count > 10)
        let link = try Regex(#"\]\(([^)#\s]+)(#[^)\s]*)?\)"#)
        for page in Self.pages {
            let text = try Self.text(page)
            let folder = page.split(separator: "/").dropLast().joined(separator: "/")
            for match in text.matches(of: link) {
                let target = String(match.output[1].substring ?? "")
                guard !target.contains("://"), !target.hasPrefix("mailto:") else { continue }
                let path = (folder.isEmpty ? "" : folder + "/") + target
                let resolved = Self.root.appendingPathComponent(path).standardized
                #expect(resolved.path.hasPrefix(Self.root.standardized.path), "\(page) links outside the repository: \(target)")
                #expect(FileManager.default.fileExists(atPath: resolved.path), "\(page) links to \(target), which is not there")
            }
        }
    }

    @Test func nothingPointsOutsideTheRepository() throws {
        // Spelled in two parts, so that a search of the repository for the path finds nothing.
        let contract = ["shared", "DESIGN"].joined(separator: "/")
        for page in Self.pages {
            #expect(!(try Self.text(page)).contains(contract), "\(page)")
        }
    }

    @Test func theFrontPagesStayShortAndUndated() throws {
        let readme = try Self.text("README.md"), benchmarks = try Self.text("BENCHMARKS.md")
        #expect(readme.split(separator: "\n", omittingEmptySubsequences: false).count <= 250)
        #expect(benchmarks.split(separator: "\n", omittingEmptySubsequences: false).count <= 300)
        let dated = try Regex(#"(before|since|until|on) 20[0-9]{2}-[0-9]{2}-[0-9]{2}"#)
        for page in ["README.md"] + Self.pages.filter({ $0.hasPrefix("docs/") }) {
            #expect((try Self.text(page)).firstMatch(of: dated) == nil, "\(page) carries dated history")
        }
    }

    /// docs/configuration.md names every key the shipped bridge.toml sets, and its variable.
    @Test func everyConfigurationKeyIsDocumented() throws {
        let reference = try Self.text("docs/configuration.md")
        var section = ""
        for line in try Self.text("bridge.toml").split(separator: "\n") {
            let l = line.trimmingCharacters(in: .whitespaces)
            if l.hasPrefix("[[") { section = "route"; continue }
            if l.hasPrefix("[") { section = String(l.dropFirst().dropLast()); continue }
            guard !l.hasPrefix("#"), let eq = l.firstIndex(of: "="), section != "route" else { continue }
            let key = l[..<eq].trimmingCharacters(in: .whitespaces)
            #expect(reference.contains("`\(key)`") && reference.contains("`WARREN_\(section.uppercased())_\(key.uppercased())`"),
                    "\(section).\(key) is not in docs/configuration.md")
        }
    }

    /// Every results file BENCHMARKS.md cites is there, and every one there is cited.
    @Test func benchmarksCiteTheirResults() throws {
        let page = try Self.text("BENCHMARKS.md")
        let kept = try FileManager.default.contentsOfDirectory(atPath: Self.root.appendingPathComponent("Benchmarks/results").path)
            .filter { $0.hasSuffix(".json") }
        #expect(!kept.isEmpty)
        for file in kept { #expect(page.contains(file), "Benchmarks/results/\(file) is not cited by BENCHMARKS.md") }
        let cited = try Regex(#"Benchmarks/results/([A-Za-z0-9._-]+\.json)"#)
        for match in page.matches(of: cited) {
            let file = String(match.output[1].substring ?? "")
            #expect(kept.contains(file), "BENCHMARKS.md cites \(file), which is not in Benchmarks/results")
        }
    }

    /// The version a user sees is one: `warren --version`, the package, the changelog.
    @Test func theVersionIsTheSameEverywhere() async throws {
        let version = try WarrenProcess(["--version"])
        #expect(await version.waitForExit() == 0)
        #expect(version.log.trimmingCharacters(in: .whitespacesAndNewlines) == WarrenVersion.string)
        #expect(try Self.text("clients/js/package.json").contains(#""version": "\#(WarrenVersion.string)""#))
        #expect(try Self.text("CHANGELOG.md").contains("## \(WarrenVersion.string)"))
    }
}
