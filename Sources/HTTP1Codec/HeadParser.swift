import NIOCore

/// What a response's framing depends on besides its own head (RFC 9112 §6.3 rules 1 and 2).
package struct ResponseContext: Sendable, Hashable {
    package var method: MethodKind
    /// The request asked to switch protocols: a 101 is the answer it asked for.
    package var upgradeRequested: Bool

    package init(method: MethodKind, upgradeRequested: Bool = false) {
        self.method = method
        self.upgradeRequested = upgradeRequested
    }
}

/// An incremental one-pass head scanner: every byte of the head is looked at once, whatever the
/// reads it arrives in. Bytes already scanned are not scanned again: the position, the current
/// line's offsets and what the fields said so far are kept between calls, so a head sent a byte at
/// a time costs what it costs in one read. The head stays in the caller's buffer until complete
/// (its offsets index into it); `limits.maxHeadBytes` bounds how much that is.
///
/// Strict where RFC 9112 is: single SP between start-line parts, CRLF line endings only (a bare CR
/// or LF is refused, §2.2), token field names with the colon right after them (§5.1), no obs-fold
/// (§5.2), field values of VCHAR, obs-text, SP and HTAB only (RFC 9110 §5.5), HTTP/1.0 or 1.1.
package struct HeadParser: Sendable {
    enum Step {
        case needMoreBytes
        /// The section is complete: this many bytes, through its empty line.
        case complete(Int)
        case failed(HTTP1CodecError)
    }

    private enum State: UInt8 {
        case method, target, version, responseVersion, statusCode, reasonPhrase, startLineLF
        case lineStart, emptyLineLF, name, valueOWS, value, valueLF
    }

    let role: Role
    let limits: HTTP1Limits
    /// A trailer section: field lines only, no start line and no framing.
    let trailers: Bool
    /// Set before each response head: what its framing depends on.
    var context = ResponseContext(method: .get)

    private var state: State
    /// The next byte to scan, from the start of the section.
    private var index = 0
    private var partStart = 0
    private var lineStart = 0
    private var nameEnd = 0
    private var valueStart = 0
    private var valueEnd = 0

    /// The head being built (its `bytes` are set when it is taken).
    var head: HTTP1Head
    /// Content-Length, once seen.
    var contentLength: Int?
    /// The transfer codings of every Transfer-Encoding field, in order; nil without such a field.
    var codings: [Range<Int>]?
    var hasUpgradeField = false
    /// The last Transfer-Encoding field is empty or ends in an empty element (`chunked,`).
    var codingsEndEmpty = false
    /// `head.fields` still holds the previous section's fields (see `reset`).
    private var fieldsStale = false

    init(role: Role, limits: HTTP1Limits, trailers: Bool = false) {
        self.role = role
        self.limits = limits
        self.trailers = trailers
        self.head = HTTP1Head(role: role, bytes: ByteBuffer())
        self.state = Self.initialState(role: role, trailers: trailers)
    }

    private static func initialState(role: Role, trailers: Bool) -> State {
        trailers ? .lineStart : role == .request ? .method : .responseVersion
    }

    /// Nothing of a section scanned yet.
    var isAtStart: Bool { index == 0 }

    /// Ready for the next section; the fields array keeps its storage. It is emptied when the next
    /// section's scan starts, not here: the head just taken still shares it now (emptying a shared
    /// array copies it), and by then its taker has usually let go, so no head allocates its own.
    mutating func reset() {
        let fields = head.fields
        head = HTTP1Head(role: role, bytes: ByteBuffer())
        head.fields = fields
        fieldsStale = true
        state = Self.initialState(role: role, trailers: trailers)
        index = 0
        partStart = 0
        lineStart = 0
        contentLength = nil
        codings = nil
        hasUpgradeField = false
        codingsEndEmpty = false
    }

    /// Scans from where the last call stopped. `raw` is the section's bytes from its first byte:
    /// the same bytes as before, and maybe more.
    mutating func scan(_ raw: UnsafeRawBufferPointer) -> Step {
        if fieldsStale {
            head.fields.removeAll(keepingCapacity: true)
            fieldsStale = false
        }
        let end = Swift.min(raw.count, limits.maxHeadBytes)
        var i = index
        defer { index = i }
        while i < end {
            let byte = raw[i]
            switch state {
            case .method:
                while i < end, ByteClass.isToken(raw[i]) { i += 1 }
                guard i < end else { continue }
                guard raw[i] == ByteClass.sp, i > partStart else { return .failed(Flaw.method.error(role)) }
                head.method = partStart..<i
                partStart = i + 1
                state = .target
            case .target:
                let limit = Swift.min(end, partStart + limits.maxTargetLength)
                while i < limit, ByteClass.isTargetByte(raw[i]) { i += 1 }
                guard i < end else { continue }
                if i == limit && ByteClass.isTargetByte(raw[i]) {
                    return .failed(.requestLineTooLong(i + 1, limits))
                }
                guard raw[i] == ByteClass.sp, i > partStart else { return .failed(Flaw.target.error(role)) }
                head.target = partStart..<i
                partStart = i + 1
                state = .version
            case .version:
                // Checked byte by byte: a wrong version is refused before the line ends.
                if i - partStart < 8 {
                    guard Self.versionByte(byte, at: i - partStart) else {
                        return .failed((byte == ByteClass.lf ? Flaw.lineEnding : Flaw.version).error(role))
                    }
                } else {
                    guard byte == ByteClass.cr else {
                        return .failed((byte == ByteClass.lf ? Flaw.lineEnding : Flaw.version).error(role))
                    }
                    head.minorVersion = Int(raw[i - 1] &- UInt8(ascii: "0"))
                    state = .startLineLF
                }
            case .responseVersion:
                if i - partStart < 8 {
                    guard Self.versionByte(byte, at: i - partStart) else { return .failed(Flaw.version.error(role)) }
                } else {
                    guard byte == ByteClass.sp else { return .failed(Flaw.version.error(role)) }
                    head.minorVersion = Int(raw[i - 1] &- UInt8(ascii: "0"))
                    partStart = i + 1
                    state = .statusCode
                }
            case .statusCode:
                if i - partStart < 3 {
                    guard byte &- UInt8(ascii: "0") < 10 else { return .failed(Flaw.status.error(role)) }
                    head.status = head.status * 10 + Int(byte &- UInt8(ascii: "0"))
                } else if byte == ByteClass.sp {
                    guard Self.validStatus.contains(head.status) else { return .failed(Flaw.status.error(role)) }
                    partStart = i + 1
                    state = .reasonPhrase
                } else if byte == ByteClass.cr {
                    guard Self.validStatus.contains(head.status) else { return .failed(Flaw.status.error(role)) }
                    partStart = i
                    head.reasonPhrase = i..<i
                    state = .startLineLF
                } else {
                    return .failed((byte == ByteClass.lf ? Flaw.lineEnding : Flaw.status).error(role))
                }
            case .reasonPhrase:
                while i < end, ByteClass.isFieldByte(raw[i]) { i += 1 }
                guard i < end else { continue }
                guard raw[i] == ByteClass.cr else {
                    return .failed((raw[i] == ByteClass.lf ? Flaw.lineEnding : Flaw.status).error(role))
                }
                head.reasonPhrase = partStart..<i
                state = .startLineLF
            case .startLineLF:
                guard byte == ByteClass.lf else { return .failed(Flaw.lineEnding.error(role)) }
                state = .lineStart
            case .lineStart:
                if byte == ByteClass.cr {
                    state = .emptyLineLF
                } else if ByteClass.isToken(byte) {
                    guard head.fields.count < limits.maxFields(role) else { return .failed(.headTooLarge(role, limits)) }
                    lineStart = i
                    state = .name
                } else {
                    // A leading space or tab is obs-fold (§5.2), or whitespace before the first field.
                    return .failed((byte == ByteClass.lf ? Flaw.lineEnding : Flaw.fieldLine).error(role))
                }
            case .name:
                while i < end, ByteClass.isToken(raw[i]) { i += 1 }
                guard i < end else { continue }
                // No whitespace between the name and the colon (§5.1): a 400, never a trim.
                guard raw[i] == UInt8(ascii: ":") else { return .failed(Flaw.fieldLine.error(role)) }
                nameEnd = i
                state = .valueOWS
            case .valueOWS:
                if ByteClass.isSpace(byte) {
                    break
                } else if byte == ByteClass.cr {
                    valueStart = i
                    valueEnd = i
                    state = .valueLF
                } else if ByteClass.isFieldByte(byte) {
                    valueStart = i
                    valueEnd = i + 1
                    state = .value
                } else {
                    return .failed((byte == ByteClass.lf ? Flaw.lineEnding : Flaw.fieldLine).error(role))
                }
            case .value:
                while i < end, ByteClass.isFieldByte(raw[i]) {
                    if !ByteClass.isSpace(raw[i]) { valueEnd = i + 1 }
                    i += 1
                }
                guard i < end else { continue }
                switch raw[i] {
                case ByteClass.cr: state = .valueLF
                case ByteClass.lf: return .failed(Flaw.lineEnding.error(role))
                default: return .failed(Flaw.fieldLine.error(role))
                }
            case .valueLF:
                guard byte == ByteClass.lf else { return .failed(Flaw.lineEnding.error(role)) }
                let field = FieldLine(
                    name: lineStart..<nameEnd, value: valueStart..<valueEnd, line: lineStart..<i + 1,
                    known: KnownField.classify(raw, lineStart..<nameEnd), kept: true
                )
                if let error = trailers ? Self.trailerFlaw(field)?.error(role) : survey(raw, field) { return .failed(error) }
                head.fields.append(field)
                state = .lineStart
            case .emptyLineLF:
                guard byte == ByteClass.lf else { return .failed(Flaw.lineEnding.error(role)) }
                i += 1
                if let error = trailers ? keepForwardableTrailers(raw) : finishHead(raw) { return .failed(error) }
                return .complete(i)
            }
            i += 1
        }
        if i >= limits.maxHeadBytes {
            if role == .request && !trailers, state == .method || state == .target || state == .version {
                return .failed(.requestLineTooLong(i, limits))
            }
            return .failed(.headTooLarge(role, limits))
        }
        return .needMoreBytes
    }

    /// A framing field in a trailer section is refused, as llhttp does: framing is decided by the
    /// head (RFC 9110 §6.5.1, RFC 9112 §7.1.2), and a peer that sends one there is confused or
    /// probing for a parser that merges it.
    static func trailerFlaw(_ field: FieldLine) -> Flaw? {
        switch field.known {
        case .contentLength: .contentLength
        case .transferEncoding: .transferEncoding
        default: nil
        }
    }

    /// RFC 9110 §15: "Values outside the range 100..599 are invalid." A response that carries
    /// one is not relayed (the client gets the proxy's 502, a 5xx as §15 asks it to be treated).
    static let validStatus = 100...599

    /// `HTTP/1.0` or `HTTP/1.1`, one byte at a time (the name is case-sensitive, RFC 9112 §2.6).
    private static func versionByte(_ byte: UInt8, at offset: Int) -> Bool {
        offset < 7 ? versionPrefix[offset] == byte : byte == UInt8(ascii: "0") || byte == UInt8(ascii: "1")
    }

    private static let versionPrefix = Array("HTTP/1.".utf8)
}
