import CCurl

extension CurlEasyTransfer {
    /// The response or error for a transfer libcurl reported done with `code`.
    /// Must run before the easy handle is cleaned up (getinfo reads from it).
    func result(for code: CURLcode) -> Result<CurlResponse, any Error> {
        guard code == CURLE_OK else {
            return .failure(error(for: code))
        }
        let primaryIP = easy.infoString(CURLINFO_PRIMARY_IP) ?? ""
        let response = CurlResponse(
            status: easy.infoLong(CURLINFO_RESPONSE_CODE) ?? 0,
            headers: headers,
            body: body,
            remoteIP: primaryIP.isEmpty ? nil : primaryIP,
            totalTime: .microseconds(easy.infoOffset(CURLINFO_TOTAL_TIME_T) ?? 0),
            // NUM_CONNECTS counts new connections this transfer had to open.
            reusedConnection: easy.infoLong(CURLINFO_NUM_CONNECTS) == 0
        )
        return .success(response)
    }

    /// Maps `code` to an error whose text names only scheme, host, port and path.
    func error(for code: CURLcode) -> CurlTransportError {
        let kind: CurlTransportError.Kind
        if exceededLimit || code == CURLE_FILESIZE_EXCEEDED {
            kind = .tooLarge
        } else {
            kind = CurlTransportError.Kind(code)
        }
        var reason = target.redact(easy.errorMessage)
        if reason.isEmpty {
            reason = String(cString: curl_easy_strerror(code))
        }
        if kind == .tooLarge {
            reason = "response body larger than \(maxResponseBytes) bytes"
        }
        return CurlTransportError(
            kind: kind,
            detail: "\(target.redactedURL): \(reason)",
            curlCode: Int(code.rawValue)
        )
    }
}
