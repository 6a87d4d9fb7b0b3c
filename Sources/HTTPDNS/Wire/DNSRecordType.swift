/// The address record types the proxy asks for; raw values are the RFC 1035 / 3596 type codes.
public enum DNSRecordType: UInt16, Sendable, Hashable, CaseIterable {
    case a = 1
    case aaaa = 28
}
