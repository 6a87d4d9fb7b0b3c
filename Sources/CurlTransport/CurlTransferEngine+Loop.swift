import CCurl

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension CurlTransferEngine {
    /// Body of the loop thread: owns every transfer handed to libcurl, so the multi handle and
    /// the easy handles are only ever used from this thread.
    func runLoop() {
        var transfers: [UInt64: CurlEasyTransfer] = [:]
        var idsByHandle: [UnsafeMutableRawPointer: UInt64] = [:]

        /// Takes `id` out of libcurl and frees its easy handle here, on the thread that used it
        /// (the caller's task may hold the transfer object a while longer). The caller resumes it.
        func detach(_ id: UInt64) -> CurlEasyTransfer? {
            guard let transfer = transfers.removeValue(forKey: id) else { return nil }
            idsByHandle[transfer.easy.pointer] = nil
            multi.remove(transfer.easy)
            transfer.easy.close()
            return transfer
        }

        while true {
            let (added, cancelled, stopping) = state.withLockedValue { state in
                let added = state.incoming
                state.incoming = []
                for transfer in added {
                    state.active.insert(transfer.id)
                }
                let cancelled = state.cancellations
                state.cancellations = []
                return (added, cancelled, state.isShutdown)
            }

            if stopping {
                for transfer in added {
                    transfer.finish(.failure(Self.shutdownError(transfer.target)))
                }
                for id in Array(transfers.keys) {
                    if let transfer = detach(id) {
                        transfer.finish(.failure(Self.shutdownError(transfer.target)))
                    }
                }
                state.withLockedValue { $0.active.removeAll() }
                // No wakeup can come after shutdown was flagged, so the handle can go now,
                // closing its cached connections with it.
                multi.close()
                return
            }

            for transfer in added {
                let code = multi.add(transfer.easy)
                if code == CURLM_OK {
                    transfers[transfer.id] = transfer
                    idsByHandle[transfer.easy.pointer] = transfer.id
                } else {
                    state.withLockedValue { _ = $0.active.remove(transfer.id) }
                    let reason = String(cString: curl_multi_strerror(code))
                    transfer.finish(.failure(CurlTransportError(
                        kind: .other,
                        detail: "\(transfer.target.redactedURL): curl_multi_add_handle failed: \(reason)"
                    )))
                }
            }

            var finished: [(CurlEasyTransfer, Result<CurlResponse, any Error>)] = []
            for id in cancelled {
                // Already finished when nil: its result went out, the cancellation is moot.
                if let transfer = detach(id) {
                    finished.append((transfer, .failure(CancellationError())))
                }
            }

            _ = multi.perform()

            for (handle, code) in multi.completedTransfers() {
                guard let id = idsByHandle[handle], let transfer = transfers[id] else { continue }
                // Read the result before detaching: getinfo needs the handle's transfer data.
                let result = transfer.result(for: code)
                _ = detach(id)
                finished.append((transfer, result))
            }

            if !finished.isEmpty {
                state.withLockedValue { state in
                    for (transfer, _) in finished {
                        state.active.remove(transfer.id)
                    }
                }
                for (transfer, result) in finished {
                    transfer.finish(result)
                }
                finished.removeAll()
            }

            // Returns early for socket activity, libcurl's own next timeout, or a wakeup.
            let pollCode = multi.poll(timeoutMilliseconds: 1000)
            if pollCode != CURLM_OK {
                // e.g. CURLM_UNRECOVERABLE_POLL: these transfers cannot progress. Fail them rather
                // than let callers wait out their timeouts, and back off instead of spinning.
                let reason = String(cString: curl_multi_strerror(pollCode))
                let failed = Array(transfers.keys).compactMap(detach)
                state.withLockedValue { state in
                    for transfer in failed {
                        state.active.remove(transfer.id)
                    }
                }
                for transfer in failed {
                    transfer.finish(.failure(CurlTransportError(
                        kind: .other,
                        detail: "\(transfer.target.redactedURL): curl_multi_poll failed: \(reason)"
                    )))
                }
                usleep(10_000)
            }
        }
    }
}
