import Foundation
import Glibc
import Testing

/// What keeps the sidecar small, checked in every test run: the product's sources import
/// FoundationEssentials, never the full Foundation (which brings ICU's ~34 MB of data), and the
/// binary under test (`HTTPDNS_PROXY_BIN` can point at the release or static build) neither maps
/// nor contains ICU.
@Suite("Footprint check", .onBlockingThreads, .timeLimit(.minutes(2)))
struct FootprintCheckTests {
    /// The repository root, found from this file: Tests/EndToEndTests/X.swift -> ../..
    static var root: String {
        var components = #filePath.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        components.removeLast(3)
        return components.joined(separator: "/")
    }

    /// `import Foundation` lines of `text` (1-based line numbers) that are not the `#else` branch of
    /// `#if canImport(FoundationEssentials) / import FoundationEssentials`, which only Darwin takes.
    static func fullFoundationImports(in text: String) -> [Int] {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        return lines.indices.compactMap { index in
            guard lines[index] == "import Foundation" || lines[index].hasPrefix("import Foundation ")
                || lines[index].hasPrefix("@_exported import Foundation") || lines[index].hasPrefix("import class Foundation.")
                || lines[index].hasPrefix("import struct Foundation.") || lines[index].hasPrefix("import func Foundation.") else { return nil }
            let guarded = index >= 3 && lines[index - 1] == "#else" && lines[index - 2] == "import FoundationEssentials"
                && lines[index - 3] == "#if canImport(FoundationEssentials)"
            return guarded ? nil : index + 1
        }
    }

    @Test func theCheckSeesAnUnguardedImport() {
        #expect(Self.fullFoundationImports(in: "import NIOCore\nimport Foundation\n") == [2])
        #expect(Self.fullFoundationImports(in: "import struct Foundation.Data\n") == [1])
        #expect(Self.fullFoundationImports(in: "#if canImport(FoundationEssentials)\nimport FoundationEssentials\n#else\nimport Foundation\n#endif\n") == [])
        #expect(Self.fullFoundationImports(in: "import FoundationEssentials\n") == [])
    }

    @Test func noSourceImportsTheFullFoundation() throws {
        let sources = Self.root + "/Sources"
        let files = try FileManager.default.subpathsOfDirectory(atPath: sources).filter { $0.hasSuffix(".swift") }
        #expect(files.count > 100, "found only \(files.count) Swift files under \(sources)")
        var offenders: [String] = []
        for file in files {
            let text = try String(contentsOfFile: sources + "/" + file, encoding: .utf8)
            offenders += Self.fullFoundationImports(in: text).map { "Sources/\(file):\($0)" }
        }
        #expect(offenders.isEmpty, "full Foundation (and with it ICU) imported at \(offenders); use FoundationEssentials")
    }

    /// ICU in the binary: `icudt` names ICU's data (the static build links it as `icudt76_dat`, its
    /// table of contents names `icudt76l/...`); a dynamic build would load `lib_FoundationICU.so`
    /// through `libFoundation.so`.
    @Test func theBinaryHasNoICU() throws {
        let proxy = try ProxyProcess.launch()
        defer { proxy.stop() }
        // procfs files report size 0: read to the end instead of trusting the size.
        let handle = try #require(FileHandle(forReadingAtPath: "/proc/\(proxy.pid)/maps"))
        let maps = String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
        try? handle.close()
        let mapped = Set(maps.split(separator: "\n").compactMap { $0.split(separator: " ", omittingEmptySubsequences: true).last.map(String.init) })
            .filter { $0.hasPrefix("/") }
        #expect(mapped.contains { $0.hasSuffix("/" + proxy.binary.lastPathComponent) }, "the maps name the binary: \(mapped.sorted())")
        let icu = mapped.filter { path in
            let name = path.split(separator: "/").last.map(String.init) ?? path
            return name.contains("ICU") || name.contains("icu") || name.hasPrefix("libFoundation.so")
                || name.hasPrefix("libFoundationInternationalization")
        }
        #expect(icu.isEmpty, "the proxy maps \(icu.sorted())")

        let data = try Data(contentsOf: proxy.binary, options: .alwaysMapped)
        let found = ["icudt", "_FoundationICU"].filter { data.range(of: Data($0.utf8)) != nil }
        #expect(found.isEmpty, "\(proxy.binary.path) contains \(found): ICU is linked")
    }

    /// The names of the process's threads (`/proc/PID/task/*/comm`).
    static func threadNames(_ pid: Int32) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task").compactMap { task in
            try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/comm", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }

    /// Threads only some features need start only with them: the proxy-auth hashing pool
    /// (`TP-#n`) with --proxy-auth, NIO's blocking pool (`SGLTN-TP-#n`, system DNS lookups) at the
    /// first lookup. The audit's and the prober's threads are off by default too.
    @Test func featureThreadsStartOnlyWhenTheFeatureIsOn() throws {
        let plain = try ProxyProcess.launch()
        defer { plain.stop() }
        let idle = try Self.threadNames(plain.pid)
        #expect(!idle.contains { $0.hasPrefix("TP-#") || $0.hasPrefix("SGLTN-TP-#") }, "\(idle.sorted())")
        #expect(idle.filter { $0.hasPrefix("NIO-ELT-") }.count >= 1, "\(idle.sorted())")

        let authenticating = try ProxyProcess.launch(["--proxy-auth", "alice:a-password"])
        defer { authenticating.stop() }
        let withAuth = try Self.threadNames(authenticating.pid)
        #expect(withAuth.contains { $0.hasPrefix("TP-#") }, "the hashing pool runs with --proxy-auth: \(withAuth.sorted())")
    }
}
