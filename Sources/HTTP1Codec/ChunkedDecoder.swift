import NIOCore

/// The chunked transfer coding's decoder (RFC 9112 §7.1): a value-type state machine that consumes
/// size lines and CRLFs as it scans them (nothing of them is kept: extensions are checked and
/// dropped, the proxy re-chunks), hands out chunk data as slices of the caller's buffer (no copy),
/// and ends with the trailer section, whose fields come back as offsets like a head's.
///
/// Strict: hex digits only in the size, no overflow (sizes up to 2^64-1, as llhttp), BWS only
/// where §7.1.1 allows it (before `;` and around `=`), extension names and values that are tokens
/// or quoted strings, CRLF after the size line and after every chunk's data.
package struct ChunkedDecoder: Sendable {
    package enum Event: Sendable {
        /// Body bytes: a slice of the caller's buffer.
        case data(ByteBuffer)
        case needMoreBytes
        /// The last chunk and the trailer section (nil when it has no field). The decoder is done.
        case end(HTTP1Trailers?)
    }

    private enum State: UInt8, Sendable {
        case size, sizeBWS, extNameStart, extName, extAfterName, extValueStart, extToken, extQuoted, extQuotedPair
        case extAfterQuote, extAfterValue, sizeLF, data, dataCR, dataLF, trailers, done
    }

    let role: Role
    let limits: HTTP1Limits
    private var state: State = .size
    private var size: UInt64 = 0
    private var sawDigit = false
    private var remaining: UInt64 = 0
    /// Bytes of the current size line so far.
    private var lineBytes = 0
    private var trailerParser: HeadParser

    package init(role: Role, limits: HTTP1Limits = HTTP1Limits()) {
        self.role = role
        self.limits = limits
        self.trailerParser = HeadParser(role: role, limits: limits, trailers: true)
    }

    /// The decoder is between chunks (nothing of a chunk or size line half read): where a body may
    /// be cut without losing framing.
    package var isAtChunkBoundary: Bool { state == .size && !sawDigit && lineBytes == 0 }

    /// Decodes from the front of `buffer`, consuming what it used.
    package mutating func next(_ buffer: inout ByteBuffer) throws(HTTP1CodecError) -> Event {
        while true {
            switch state {
            case .data:
                guard buffer.readableBytes > 0 else { return .needMoreBytes }
                let count = Int(Swift.min(remaining, UInt64(buffer.readableBytes)))
                let slice = buffer.readSlice(length: count)!
                remaining -= UInt64(count)
                if remaining == 0 { state = .dataCR }
                return .data(slice)
            case .trailers:
                let step = buffer.withUnsafeReadableBytes { trailerParser.scan($0) }
                switch step {
                case .needMoreBytes:
                    return .needMoreBytes
                case .failed(let error):
                    throw error
                case .complete(let length):
                    let section = buffer.readSlice(length: length)!
                    let fields = trailerParser.head.fields
                    state = .done
                    return .end(fields.isEmpty ? nil : HTTP1Trailers(bytes: section, fields: fields))
                }
            case .done:
                return .end(nil)
            default:
                guard buffer.readableBytes > 0 else { return .needMoreBytes }
                let (consumed, failure) = buffer.withUnsafeReadableBytes { scanLine($0) }
                buffer.moveReaderIndex(forwardBy: consumed)
                if let failure { throw failure }
            }
        }
    }

    /// Scans size-line and CRLF bytes until the state leaves them (data or trailers follow) or the
    /// bytes run out. Returns how many bytes it consumed and what failed, if anything.
    private mutating func scanLine(_ raw: UnsafeRawBufferPointer) -> (Int, HTTP1CodecError?) {
        var i = 0
        while i < raw.count {
            let byte = raw[i]
            i += 1
            lineBytes += 1
            if lineBytes > limits.maxChunkLineBytes { return (i, Flaw.chunkExtension.error(role)) }
            switch state {
            case .size:
                if let digit = ByteClass.hexValue(byte) {
                    guard size <= UInt64.max >> 4 else { return (i, Flaw.chunkSize.error(role)) }
                    size = size << 4 | UInt64(digit)
                    sawDigit = true
                    continue
                }
                guard sawDigit else { return (i, Flaw.chunkSize.error(role)) }
                switch byte {
                case UInt8(ascii: ";"): state = .extNameStart
                case ByteClass.cr: state = .sizeLF
                case ByteClass.sp, ByteClass.htab: state = .sizeBWS
                case ByteClass.lf: return (i, Flaw.lineEnding.error(role))
                default: return (i, Flaw.chunkSize.error(role))
                }
            case .sizeBWS:
                // BWS after the size only before an extension (§7.1.1), never before the CRLF.
                if ByteClass.isSpace(byte) { continue }
                guard byte == UInt8(ascii: ";") else { return (i, Flaw.chunkSize.error(role)) }
                state = .extNameStart
            case .extNameStart:
                if ByteClass.isSpace(byte) { continue }
                guard ByteClass.isToken(byte) else { return (i, Flaw.chunkExtension.error(role)) }
                state = .extName
            case .extName, .extToken:
                if ByteClass.isToken(byte) { continue }
                switch byte {
                case UInt8(ascii: "=") where state == .extName: state = .extValueStart
                case UInt8(ascii: ";"): state = .extNameStart
                case ByteClass.cr: state = .sizeLF
                case ByteClass.sp, ByteClass.htab: state = state == .extName ? .extAfterName : .extAfterValue
                default: return (i, Flaw.chunkExtension.error(role))
                }
            case .extAfterName:
                if ByteClass.isSpace(byte) { continue }
                switch byte {
                case UInt8(ascii: "="): state = .extValueStart
                case UInt8(ascii: ";"): state = .extNameStart
                default: return (i, Flaw.chunkExtension.error(role))
                }
            case .extValueStart:
                if ByteClass.isSpace(byte) { continue }
                if byte == UInt8(ascii: "\"") {
                    state = .extQuoted
                } else if ByteClass.isToken(byte) {
                    state = .extToken
                } else {
                    return (i, Flaw.chunkExtension.error(role))
                }
            case .extQuoted:
                // qdtext (RFC 9110 §5.6.4): HTAB, SP, VCHAR but `"` and `\`, obs-text.
                switch byte {
                case UInt8(ascii: "\""): state = .extAfterQuote
                case UInt8(ascii: "\\"): state = .extQuotedPair
                case 0x09, 0x20, 0x21, 0x23...0x5B, 0x5D...0x7E, 0x80...0xFF: continue
                default: return (i, Flaw.chunkExtension.error(role))
                }
            case .extQuotedPair:
                guard ByteClass.isFieldByte(byte) else { return (i, Flaw.chunkExtension.error(role)) }
                state = .extQuoted
            case .extAfterQuote:
                switch byte {
                case UInt8(ascii: ";"): state = .extNameStart
                case ByteClass.cr: state = .sizeLF
                case ByteClass.sp, ByteClass.htab: state = .extAfterValue
                default: return (i, Flaw.chunkExtension.error(role))
                }
            case .extAfterValue:
                if ByteClass.isSpace(byte) { continue }
                guard byte == UInt8(ascii: ";") else { return (i, Flaw.chunkExtension.error(role)) }
                state = .extNameStart
            case .sizeLF:
                guard byte == ByteClass.lf else { return (i, Flaw.lineEnding.error(role)) }
                lineBytes = 0
                if size == 0 {
                    state = .trailers
                } else {
                    remaining = size
                    state = .data
                }
                return (i, nil)
            case .dataCR:
                guard byte == ByteClass.cr else { return (i, Flaw.lineEnding.error(role)) }
                state = .dataLF
            case .dataLF:
                guard byte == ByteClass.lf else { return (i, Flaw.lineEnding.error(role)) }
                state = .size
                size = 0
                sawDigit = false
                lineBytes = 0
            case .data, .trailers, .done:
                preconditionFailure("not a line state")
            }
        }
        return (i, nil)
    }
}
