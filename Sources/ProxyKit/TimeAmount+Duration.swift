import NIOCore

extension TimeAmount {
    /// The same span as a standard library `Duration` (configuration uses NIO's type).
    package var duration: Duration { .nanoseconds(nanoseconds) }
}
