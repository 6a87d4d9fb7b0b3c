import CYAML

/// A node of the config file, composed from libyaml's events: the little of YAML the loader needs
/// (scalars with their style, lists, mappings in file order, each with its 1-based position).
/// Aliases are resolved to the node their anchor names, as YAML composers do.
indirect enum YAMLNode {
    case scalar(YAMLScalar)
    case sequence([YAMLNode], YAMLMark)
    case mapping([(key: YAMLNode, value: YAMLNode)], YAMLMark)

    var mark: YAMLMark {
        switch self {
        case .scalar(let scalar): scalar.mark
        case .sequence(_, let mark), .mapping(_, let mark): mark
        }
    }

    /// A plain `~`, `null`, `Null`, `NULL` or nothing at all (YAML 1.1's null); a quoted `''` is a string.
    var isNull: Bool {
        guard case .scalar(let scalar) = self, scalar.isPlain else { return false }
        return ["", "~", "null", "Null", "NULL"].contains(scalar.string)
    }
}

struct YAMLScalar {
    var string: String
    var isPlain: Bool
    var mark: YAMLMark
}

/// 1-based line and column, as editors count.
struct YAMLMark: Equatable {
    var line: Int
    var column: Int

    init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }

    init(_ mark: yaml_mark_t) {
        line = Int(mark.line) + 1
        column = Int(mark.column) + 1
    }
}

/// Why a document could not be read. The text names the problem and its position, never the
/// offending line: echoing file content could leak a secret value into logs.
struct YAMLReadError: Error, Equatable, CustomStringConvertible {
    var description: String
}

enum YAMLReader {
    /// Deeper nesting than this is refused before it costs stack (the config nests two levels).
    static let maximumDepth = 64

    /// The single document of `text`, or nil for an empty stream.
    static func compose(_ text: String) throws(YAMLReadError) -> YAMLNode? {
        let bytes = Array(text.utf8)
        // libyaml asserts a non-NULL input, which an empty array need not have.
        guard !bytes.isEmpty else { return nil }
        let parser = UnsafeMutablePointer<yaml_parser_t>.allocate(capacity: 1)
        defer { parser.deallocate() }
        guard yaml_parser_initialize(parser) == 1 else { throw YAMLReadError(description: "not valid YAML: out of memory") }
        defer { yaml_parser_delete(parser) }
        return try bytes.withUnsafeBufferPointer { (buffer) throws(YAMLReadError) -> YAMLNode? in
            yaml_parser_set_input_string(parser, buffer.baseAddress, buffer.count)
            var composer = Composer(parser: parser)
            return try composer.document()
        }
    }

    private struct Composer {
        let parser: UnsafeMutablePointer<yaml_parser_t>
        var anchors: [String: YAMLNode] = [:]

        /// The next event; the caller deletes it with `yaml_event_delete`.
        func next() throws(YAMLReadError) -> yaml_event_t {
            var event = yaml_event_t()
            guard yaml_parser_parse(parser, &event) == 1 else { throw parserError() }
            return event
        }

        /// The type of the next event, dropping it (for events that carry nothing we need).
        func skip() throws(YAMLReadError) -> yaml_event_type_t {
            var event = try next()
            defer { yaml_event_delete(&event) }
            return event.type
        }

        mutating func document() throws(YAMLReadError) -> YAMLNode? {
            _ = try skip()  // STREAM-START
            guard try skip() == YAML_DOCUMENT_START_EVENT else { return nil }  // STREAM-END: empty
            let root = try node(from: try next(), depth: 0)
            _ = try skip()  // DOCUMENT-END
            var after = try next()
            defer { yaml_event_delete(&after) }
            if after.type != YAML_STREAM_END_EVENT {
                throw YAMLReadError(description: "not valid YAML: a second document starts at \(position(YAMLMark(after.start_mark))); "
                    + "the config file is one document")
            }
            return root
        }

        /// The node that starts with `event` (which this deletes), reading up to its end.
        private mutating func node(from first: yaml_event_t, depth: Int) throws(YAMLReadError) -> YAMLNode {
            var event = first
            defer { yaml_event_delete(&event) }
            let mark = YAMLMark(event.start_mark)
            guard depth < YAMLReader.maximumDepth else {
                throw YAMLReadError(description: "not valid YAML: nested deeper than \(YAMLReader.maximumDepth) levels at \(position(mark))")
            }
            let anchor: UnsafeMutablePointer<yaml_char_t>?
            let result: YAMLNode
            switch event.type {
            case YAML_ALIAS_EVENT:
                let name = text(event.data.alias.anchor)
                guard let target = anchors[name] else {
                    throw YAMLReadError(description: "not valid YAML: alias '*\(name)' names no anchor before it at \(position(mark))")
                }
                return target
            case YAML_SCALAR_EVENT:
                let scalar = event.data.scalar
                let value = String(decoding: UnsafeBufferPointer(start: scalar.value, count: scalar.length), as: UTF8.self)
                anchor = scalar.anchor
                result = .scalar(YAMLScalar(string: value, isPlain: scalar.style == YAML_PLAIN_SCALAR_STYLE, mark: mark))
            case YAML_SEQUENCE_START_EVENT:
                anchor = event.data.sequence_start.anchor
                var items: [YAMLNode] = []
                while let item = try nextUnless(YAML_SEQUENCE_END_EVENT) {
                    items.append(try node(from: item, depth: depth + 1))
                }
                result = .sequence(items, mark)
            case YAML_MAPPING_START_EVENT:
                anchor = event.data.mapping_start.anchor
                var pairs: [(key: YAMLNode, value: YAMLNode)] = []
                var seen: [String: YAMLMark] = [:]
                while let keyEvent = try nextUnless(YAML_MAPPING_END_EVENT) {
                    let key = try node(from: keyEvent, depth: depth + 1)
                    if case .scalar(let scalar) = key {
                        if let first = seen[scalar.string] {
                            throw YAMLReadError(description: "key '\(scalar.string)' appears more than once "
                                + "(lines \(first.line) and \(scalar.mark.line))")
                        }
                        seen[scalar.string] = scalar.mark
                    }
                    pairs.append((key, try node(from: try next(), depth: depth + 1)))
                }
                result = .mapping(pairs, mark)
            default:
                throw YAMLReadError(description: "not valid YAML: unexpected event at \(position(mark))")
            }
            if let anchor { anchors[text(anchor)] = result }
            return result
        }

        /// The next event, or nil (and the event deleted) when it is `end`.
        private func nextUnless(_ end: yaml_event_type_t) throws(YAMLReadError) -> yaml_event_t? {
            var event = try next()
            guard event.type == end else { return event }
            yaml_event_delete(&event)
            return nil
        }

        private func text(_ pointer: UnsafeMutablePointer<yaml_char_t>?) -> String {
            guard let pointer else { return "" }
            return String(cString: pointer)
        }

        private func parserError() -> YAMLReadError {
            let problem = parser.pointee.problem.map { String(cString: $0) } ?? "unreadable document"
            switch parser.pointee.error {
            case YAML_READER_ERROR:
                return YAMLReadError(description: "not valid YAML: \(problem)")
            case YAML_MEMORY_ERROR:
                return YAMLReadError(description: "not valid YAML: out of memory")
            default:
                return YAMLReadError(description: "not valid YAML: \(problem) at \(position(YAMLMark(parser.pointee.problem_mark)))")
            }
        }

        private func position(_ mark: YAMLMark) -> String {
            "line \(mark.line), column \(mark.column)"
        }
    }
}
