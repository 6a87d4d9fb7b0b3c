/// Builds DNS wire messages byte by byte for the parser tests, tracking offsets so
/// compression pointers can be aimed at earlier names.
struct DNSTestMessage {
    private(set) var bytes: [UInt8] = []

    var offset: Int { bytes.count }

    init(id: UInt16 = 0, flags: UInt16 = 0x8180, questions: UInt16 = 1, answers: UInt16 = 0, authority: UInt16 = 0, additional: UInt16 = 0) {
        u16(id); u16(flags); u16(questions); u16(answers); u16(authority); u16(additional)
    }

    mutating func u16(_ value: UInt16) {
        bytes.append(UInt8(value >> 8)); bytes.append(UInt8(value & 0xFF))
    }

    mutating func u32(_ value: UInt32) {
        u16(UInt16(value >> 16)); u16(UInt16(value & 0xFFFF))
    }

    mutating func raw(_ values: [UInt8]) {
        bytes.append(contentsOf: values)
    }

    /// Labels of `text`, then the root label unless `terminated` is false (for a pointer to follow).
    mutating func labels(_ text: String, terminated: Bool = true) {
        for label in text.split(separator: ".") {
            bytes.append(UInt8(label.utf8.count)); bytes.append(contentsOf: label.utf8)
        }
        if terminated { bytes.append(0) }
    }

    mutating func pointer(_ target: Int) {
        u16(0xC000 | UInt16(target))
    }

    mutating func question(_ name: String, type: UInt16 = 1) {
        labels(name); u16(type); u16(1)
    }

    /// Record header after the owner name has been written; RDLENGTH sits at offset + 8 before the call.
    mutating func recordHeader(type: UInt16, ttl: UInt32, rdLength: UInt16, rrClass: UInt16 = 1) {
        u16(type); u16(rrClass); u32(ttl); u16(rdLength)
    }

    /// Patches a 16-bit field (e.g. RDLENGTH once the data has been written).
    mutating func patchU16(at position: Int, _ value: UInt16) {
        bytes[position] = UInt8(value >> 8); bytes[position + 1] = UInt8(value & 0xFF)
    }
}
