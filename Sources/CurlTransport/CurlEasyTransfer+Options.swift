import CCurl

extension CurlEasyTransfer {
    /// Sets every option of the easy handle. Secure defaults are not left to libcurl's build or to
    /// the environment: the proxy must never route its own resolver calls through a proxy env var,
    /// follow redirects, or skip certificate checks.
    func configure(_ request: CurlRequest, userAgent: String) throws(CurlTransportError) {
        let headerLines = try request.headerLines()
        let resolveEntry = try request.resolveEntry(for: target)
        let connectToEntry = try request.connectToEntry(for: target)
        let timeouts = try request.timeoutMilliseconds()

        try easy.set(CURLOPT_URL, request.url)
        // Signals (SIGALRM for DNS timeouts) are process-wide and unsafe with threads.
        try easy.set(CURLOPT_NOSIGNAL, 1)
        // An empty proxy plus NOPROXY "*" beats http_proxy/https_proxy/ALL_PROXY from the environment.
        try easy.set(CURLOPT_PROXY, "")
        try easy.set(CURLOPT_NOPROXY, "*")
        try easy.set(CURLOPT_PROTOCOLS_STR, "http,https")
        try easy.set(CURLOPT_FOLLOWLOCATION, 0)
        try easy.set(CURLOPT_SSL_VERIFYPEER, 1)
        try easy.set(CURLOPT_SSL_VERIFYHOST, 2)
        if let caFile = request.caFile {
            try easy.set(CURLOPT_CAINFO, caFile)
        } else if let directory = request.caDirectory ?? CurlTrustDirectory.builtIn {
            // No bundle file: the directory's anchors are read as a chain needs them.
            try easy.set(CURLOPT_CAINFO, nil as UnsafeMutableRawPointer?)
            try easy.set(CURLOPT_CAPATH, directory)
        }
        try easy.set(CURLOPT_TIMEOUT_MS, timeouts.total)
        if let connect = timeouts.connect {
            try easy.set(CURLOPT_CONNECTTIMEOUT_MS, connect)
        }
        try easy.set(CURLOPT_USERAGENT, userAgent)
        let mark = CurlSocketMark.value.load(ordering: .relaxed)
        if mark != 0 {
            try easy.setSocketMark(mark)
        }

        if let connectToEntry {
            let list = try CurlStringList([connectToEntry])
            lists.append(list)
            try easy.set(CURLOPT_CONNECT_TO, list)
        }
        if let resolveEntry {
            let list = try CurlStringList([resolveEntry])
            lists.append(list)
            try easy.set(CURLOPT_RESOLVE, list)
        }
        if !headerLines.isEmpty {
            let list = try CurlStringList(headerLines)
            lists.append(list)
            try easy.set(CURLOPT_HTTPHEADER, list)
        }

        switch request.method {
        case .get:
            try easy.set(CURLOPT_HTTPGET, 1)
        case .post:
            try easy.setPostBody(request.body)
        }

        // Abort early when the server announces a too-large Content-Length; the write callback
        // enforces the same limit for chunked or unannounced bodies. (0 would mean "no limit".)
        if maxResponseBytes > 0 {
            try easy.set(CURLOPT_MAXFILESIZE_LARGE, offset: Int64(maxResponseBytes))
        }

        // The loop keeps this transfer alive while libcurl holds the easy handle, so unretained is safe.
        let context = Unmanaged.passUnretained(self).toOpaque()
        try easy.set(CURLOPT_WRITEDATA, context)
        try easy.set(CURLOPT_HEADERDATA, context)
        try easy.set(CURLOPT_WRITEFUNCTION) { data, size, count, context in
            guard let context else { return 0 }
            let transfer = Unmanaged<CurlEasyTransfer>.fromOpaque(context).takeUnretainedValue()
            return transfer.receiveBody(UnsafeRawBufferPointer(start: data, count: size * count))
        }
        try easy.set(CURLOPT_HEADERFUNCTION) { data, size, count, context in
            guard let context else { return 0 }
            let transfer = Unmanaged<CurlEasyTransfer>.fromOpaque(context).takeUnretainedValue()
            return transfer.receiveHeaderLine(UnsafeRawBufferPointer(start: data, count: size * count))
        }
    }
}
