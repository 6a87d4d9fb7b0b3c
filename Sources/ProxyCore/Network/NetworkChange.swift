import NIOCore

/// The interface addresses before and after a change the monitor found real.
public struct NetworkChange: Sendable, Equatable {
    public var old: InterfaceAddresses
    public var new: InterfaceAddresses

    public init(old: InterfaceAddresses, new: InterfaceAddresses) {
        self.old = old
        self.new = new
    }

    public var added: Int { new.keys.subtracting(old.keys).count }
    public var removed: Int { old.keys.subtracting(new.keys).count }
}
