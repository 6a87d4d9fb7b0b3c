#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import HTTPDNS
import Logging
import NIOConcurrencyHelpers

/// swift-log backend writing one line per event to stderr: JSON objects (for log shippers) or
/// `key=value` text (for people). Metadata values are written as strings.
package struct LineLogHandler: LogHandler {
    package enum Format: Sendable { case json, text }

    private static let lock = NIOLock()

    package var metadata: Logger.Metadata = [:]
    package var logLevel: Logger.Level
    package var metadataProvider: Logger.MetadataProvider?
    private let label: String
    private let format: Format

    package init(label: String, format: Format, level: Logger.Level) {
        self.label = label
        self.format = format
        self.logLevel = level
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        var merged = self.metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let extra = event.metadata { merged.merge(extra) { _, new in new } }
        let line: String
        switch format {
        case .json:
            var out = "{\"ts\":\"\(Timestamp.iso8601Now())\",\"level\":\"\(event.level.rawValue)\",\"message\":"
            JSONText.appendQuoted("\(event.message)", to: &out)
            out += ",\"logger\":"
            JSONText.appendQuoted(label, to: &out)
            for (key, value) in merged.sorted(by: { $0.key < $1.key }) {
                out += ","
                JSONText.appendQuoted(key, to: &out)
                out += ":"
                JSONText.appendQuoted("\(value)", to: &out)
            }
            line = out + "}\n"
        case .text:
            var out = "\(Timestamp.iso8601Now()) \(event.level.rawValue.uppercased()) \(event.message)"
            for (key, value) in merged.sorted(by: { $0.key < $1.key }) {
                out += " \(key)=\(value)"
            }
            line = out + "\n"
        }
        Self.lock.withLock {
            FileDescriptorOutput.writeAll(line, to: STDERR_FILENO)
        }
    }
}
