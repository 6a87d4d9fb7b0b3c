/// Where the proxy gets DNS answers from.
///
/// To add a provider: add a case, then list it in `availableInThisBuild`
/// once the resolver for it exists; parsing and error messages follow.
public enum ProviderKind: String, Sendable, Hashable, CaseIterable {
    /// The operating system's resolver (getaddrinfo). The default.
    case system

    /// Providers this build can actually use, in the order shown in messages.
    public static let availableInThisBuild: [ProviderKind] = [.system]

    /// Parses a provider name, rejecting names this build lacks.
    public init(parsing text: String) throws(ConfigurationError) {
        guard let kind = ProviderKind(rawValue: text), ProviderKind.availableInThisBuild.contains(kind) else {
            let supported = ProviderKind.availableInThisBuild.map(\.rawValue).joined(separator: ", ")
            throw .malformedValue(reason: "provider '\(text)' is not available in this build (supported: \(supported))")
        }
        self = kind
    }
}
