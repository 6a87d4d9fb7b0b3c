// Errors compare by kind and message (`ClientAdmission.Verdict` is Equatable through them). Here,
// where it always was, until the error type's own module takes it.
extension ProxyError: Equatable {
    public static func == (lhs: ProxyError, rhs: ProxyError) -> Bool {
        lhs.kind == rhs.kind && lhs.message == rhs.message
    }
}
