import Foundation

/// Typed accessors for JSON objects parsed with JSONSerialization (access log and log lines).
extension Dictionary where Key == String, Value == Any {
    /// Integer value (JSON number, or a numeric string).
    func int(_ key: String) -> Int? {
        switch self[key] {
        case let value as Int: return value
        case let value as NSNumber: return value.intValue
        case let value as String: return Int(value)
        default: return nil
        }
    }

    func double(_ key: String) -> Double? {
        switch self[key] {
        case let value as Double: return value
        case let value as NSNumber: return value.doubleValue
        case let value as String: return Double(value)
        default: return nil
        }
    }

    /// String value; nil when absent, JSON null or not a string.
    func string(_ key: String) -> String? {
        self[key] as? String
    }

    func bool(_ key: String) -> Bool? {
        switch self[key] {
        case let value as Bool: return value
        case let value as NSNumber: return value.boolValue
        default: return nil
        }
    }

    /// The line as compact JSON, for failure messages.
    var jsonText: String {
        guard let data = try? JSONSerialization.data(withJSONObject: self, options: [.sortedKeys]) else { return "\(self)" }
        return String(decoding: data, as: UTF8.self)
    }
}
