@testable import HTTP1Codec
import Testing

/// The byte classes are written as masks and comparisons; here each is checked, all 256 bytes,
/// against its definition in the RFCs' own terms.
@Suite struct ByteClassTests {
    @Test("tchar (RFC 9110 §5.6.2): ALPHA / DIGIT / !#$%&'*+-.^_`|~ and nothing else")
    func token() {
        let specials = Set("!#$%&'*+-.^_`|~".utf8)
        for value in 0...255 {
            let byte = UInt8(value)
            let alpha = (0x41...0x5A).contains(value) || (0x61...0x7A).contains(value)
            let digit = (0x30...0x39).contains(value)
            #expect(ByteClass.isToken(byte) == (alpha || digit || specials.contains(byte)), "byte \(value)")
        }
    }

    @Test("field value bytes (RFC 9110 §5.5): VCHAR, obs-text, SP, HTAB; no other control, no DEL")
    func fieldValue() {
        for value in 0...255 {
            let vchar = (0x21...0x7E).contains(value), obsText = value >= 0x80
            #expect(ByteClass.isFieldByte(UInt8(value)) == (vchar || obsText || value == 0x20 || value == 0x09), "byte \(value)")
        }
    }

    @Test("request-target bytes: visible ASCII only")
    func target() {
        for value in 0...255 {
            #expect(ByteClass.isTargetByte(UInt8(value)) == (0x21...0x7E).contains(value), "byte \(value)")
        }
    }
}
