import NIOCore

extension TimeAmount {
    /// The same span as a standard library `Duration` (configuration uses NIO's type).
    var duration: Duration { .nanoseconds(nanoseconds) }
}
