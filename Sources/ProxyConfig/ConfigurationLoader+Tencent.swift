extension ConfigurationLoader {
    /// Provider `tencent` needs the id and, per mode, the token (https) or a key that fits the
    /// cipher (http). Messages name options and lengths, never a token or key.
    static func checkTencent(
        _ tencent: TencentSettings, providerText: String, setting: (ConfigOption) -> String
    ) throws(ConfigurationError) {
        guard tencent.id != nil else {
            throw .conflict(reason: "\(providerText) needs the Tencent Cloud HTTPDNS authorization ID: set \(setting(.tencentID))")
        }
        switch tencent.mode {
        case .https:
            guard tencent.token != nil else {
                throw .conflict(reason: "\(providerText) with --tencent-mode https needs the HTTPS token: set \(setting(.tencentToken)) "
                    + "(or use --tencent-mode http with --tencent-key)")
            }
        case .http:
            guard let key = tencent.key else {
                throw .conflict(reason: "\(providerText) with --tencent-mode http needs the \(tencent.algorithm.rawValue.uppercased()) key: "
                    + "set \(setting(.tencentKey))")
            }
            let lengths = tencent.algorithm.keyLengths
            guard lengths.contains(key.utf8.count) else {
                let expected = lengths.count == 1 ? "exactly \(lengths.lowerBound)" : "\(lengths.lowerBound) to \(lengths.upperBound)"
                throw .conflict(reason: "--tencent-key has \(key.utf8.count) bytes but --tencent-alg \(tencent.algorithm.rawValue) "
                    + "needs \(expected) (the key from the Tencent Cloud console for that cipher)")
            }
        }
    }
}
