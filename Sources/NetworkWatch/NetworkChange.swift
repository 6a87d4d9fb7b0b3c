import NIOCore

/// The interface addresses before and after a change the monitor found real.
package struct NetworkChange: Sendable, Equatable {
    package var old: InterfaceAddresses
    package var new: InterfaceAddresses

    package init(old: InterfaceAddresses, new: InterfaceAddresses) {
        self.old = old
        self.new = new
    }

    package var added: Int { new.keys.subtracting(old.keys).count }
    package var removed: Int { old.keys.subtracting(new.keys).count }
}
