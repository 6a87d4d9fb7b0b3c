/// Failure while generating or reading test certificates.
public struct TestCAError: Error, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
