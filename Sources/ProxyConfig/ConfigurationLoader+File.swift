#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension ConfigurationLoader {
    /// Reads a whole file as UTF-8; the default `readFile` of `load`.
    /// Errors read like "No such file or directory" (from errno).
    public static func readFile(_ path: String) throws -> String {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw FileReadError(errno: errno) }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw FileReadError(errno: errno)
            }
            if count == 0 { break }
            bytes.append(contentsOf: buffer[0..<count])
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw FileReadError(message: "the file is not valid UTF-8")
        }
        return text
    }

    /// Why the default reader failed; only its text reaches users, inside a `ConfigurationError`.
    struct FileReadError: Error, CustomStringConvertible {
        let description: String
        init(message: String) { description = message }
        init(errno code: Int32) { description = String(cString: strerror(code)) }
    }

    /// Parses the config file: a YAML mapping from option names to a scalar
    /// (string or number) or, for list options, a list of scalars or a
    /// comma-separated string. Mapping options (`isMapping`) take a nested
    /// mapping of keys to a scalar or list of scalars; nothing nests deeper.
    /// An empty document means "nothing set".
    static func fileEntries(yaml: String, path: String) throws(ConfigurationError) -> [String: RawEntry] {
        let root: YAMLNode?
        do {
            root = try YAMLReader.compose(yaml)
        } catch {
            throw .malformedFile(path: path, reason: error.description)
        }
        guard let root else { return [:] }
        let mapping: [(key: YAMLNode, value: YAMLNode)]
        switch root {
        case .mapping(let value, _):
            mapping = value
        case .scalar where root.isNull:
            // A document that is only "~" or "null" sets nothing, like an empty one.
            return [:]
        default:
            throw .malformedFile(path: path, reason: "expected a mapping of option names to values, like 'listen: 127.0.0.1:8080'")
        }

        var entries: [String: RawEntry] = [:]
        for (keyNode, valueNode) in mapping {
            guard case .scalar(let keyScalar) = keyNode else {
                throw .malformedFile(path: path, reason: "keys must be option names, found a \(kind(of: keyNode))\(at(keyNode))")
            }
            let key = keyScalar.string
            guard let option = ConfigOption.named(key) else {
                throw .unknownKey(key: key, file: path, suggestion: closestFileKey(to: key))
            }
            guard option.isAllowedInFile else {
                throw .keyNotAllowedInFile(key: key, file: path)
            }
            if entries[key] != nil {
                // YAMLReader reports this itself; kept so a parser change cannot make the last value win silently.
                throw .malformedFile(path: path, reason: "key '\(key)' appears more than once")
            }
            let source = ConfigurationSource.configFile(path: path, key: key)
            entries[key] = try entry(for: option, node: valueNode, source: source, path: path)
        }
        return entries
    }

    private static func entry(for option: ConfigOption, node: YAMLNode, source: ConfigurationSource, path: String) throws(ConfigurationError) -> RawEntry {
        if option.isMapping {
            return try mappingEntry(for: option, node: node, source: source)
        }
        switch node {
        case .scalar(let scalar):
            if node.isNull {
                // An empty list is a meaningful setting ("allow nothing extra"); an empty scalar is not.
                if option.isList { return RawEntry(items: [], display: "", source: source) }
                throw .invalidValue(option: option.name, value: nil, source: source,
                                    reason: "the key has no value; remove the key to use the default (\(option.defaultText))")
            }
            let text = scalar.string
            let items = option.isList ? splitList(text) : [text.trimmed]
            return RawEntry(items: items, display: text, source: source)
        case .sequence(let sequence, _):
            guard option.isList else {
                throw .invalidValue(option: option.name, value: nil, source: source,
                                    reason: "expected a single value, not a list")
            }
            var items: [String] = []
            for element in sequence {
                guard case .scalar(let scalar) = element else {
                    throw .invalidValue(option: option.name, value: nil, source: source,
                                        reason: "list items must be plain values, found a \(kind(of: element))")
                }
                items.append(scalar.string.trimmed)
            }
            return RawEntry(items: items, display: "[" + items.joined(separator: ", ") + "]", source: source)
        case .mapping:
            throw .invalidValue(option: option.name, value: nil, source: source,
                                reason: "expected a value, found a \(kind(of: node))")
        }
    }

    /// A mapping option's value: `key: value`, `key: [v1, v2]` or `key: 'v1, v2'` per key;
    /// an empty value (`spki-pins:`) or `{}` is an empty mapping.
    private static func mappingEntry(for option: ConfigOption, node: YAMLNode, source: ConfigurationSource) throws(ConfigurationError) -> RawEntry {
        func failure(_ reason: String) -> ConfigurationError {
            .invalidValue(option: option.name, value: nil, source: source, reason: reason)
        }
        if node.isNull { return RawEntry(items: [], display: "{}", source: source) }
        guard case .mapping(let mapping, _) = node else {
            throw failure("\(option.expectation), found a \(kind(of: node))")
        }
        var entries: [ConfigOption.MappingEntry] = []
        for (keyNode, valueNode) in mapping {
            guard case .scalar(let keyScalar) = keyNode else {
                throw failure("keys must be plain values, found a \(kind(of: keyNode))\(at(keyNode))")
            }
            let key = keyScalar.string.trimmed
            var values: [String]
            switch valueNode {
            case .scalar(let scalar) where !valueNode.isNull:
                values = splitList(scalar.string)
            case .scalar:
                values = []
            case .sequence(let sequence, _):
                values = []
                for element in sequence {
                    guard case .scalar(let scalar) = element else {
                        throw failure("values of '\(key)' must be plain values, found a \(kind(of: element))")
                    }
                    values.append(scalar.string.trimmed)
                }
            case .mapping:
                throw failure("the value of '\(key)' must be a value or a list, found a \(kind(of: valueNode))")
            }
            entries.append(ConfigOption.MappingEntry(key: key, values: values))
        }
        let display = "{" + entries.map { "\($0.key): [\($0.values.joined(separator: ", "))]" }.joined(separator: ", ") + "}"
        return RawEntry(items: [], display: display, source: source, mapping: entries)
    }

    private static func kind(of node: YAMLNode) -> String {
        switch node {
        case .scalar: "value"
        case .sequence: "list"
        case .mapping: "mapping"
        }
    }

    private static func at(_ node: YAMLNode) -> String {
        " at line \(node.mark.line)"
    }
}
