/// One command of a host set-up the proxy prints or runs (`transparent-rules`, `nodelocal-rules`):
/// its arguments, and whether it may fail (a removal step, for what an earlier run may not have
/// left).
package struct SetupCommand: Sendable, Equatable {
    package var arguments: [String]
    package var mayFail: Bool

    package init(arguments: [String], mayFail: Bool) {
        self.arguments = arguments
        self.mayFail = mayFail
    }

    /// As a shell line.
    package var line: String {
        arguments.joined(separator: " ") + (mayFail ? " 2>/dev/null || true" : "")
    }
}
