@testable import CurlTransport
import Testing
import TestSupport

@Suite("CurlTransport cancellation and shutdown")
struct CurlTransportLifecycleTests {
    @Test("cancelling a long request returns promptly and drops its connection")
    func cancellation() async throws {
        try await withTestServer { server in
            try await withTransport { transport in
                let task = Task { try await transport.send(request(server, "/never", timeout: .seconds(60))) }
                try await server.waitUntil("the request to arrive") { $0.requests.count == 1 }

                let clock = ContinuousClock()
                let started = clock.now
                task.cancel()
                let result = await task.result
                // Well before the 60 s request timeout: the transfer was removed, not left to expire.
                #expect(clock.now - started < .seconds(20))
                #expect(throws: CancellationError.self) { try result.get() }
                // libcurl removed the transfer rather than letting it run to its timeout.
                try await server.waitUntil("the connection to close") { $0.closedConnections == 1 }

                // The transport is still usable afterwards.
                #expect(try await transport.send(request(server, "/ok")).status == 200)
            }
        }
    }

    @Test("a task cancelled before sending never reaches the server")
    func cancelledBeforeSend() async throws {
        try await withTestServer { server in
            try await withTransport { transport in
                let task = Task {
                    withUnsafeCurrentTask { $0?.cancel() }
                    return try await transport.send(request(server, "/ok"))
                }
                await #expect(throws: CancellationError.self) { try await task.value }
                let accepted = try await server.snapshot().acceptedConnections
                #expect(accepted == 0)
            }
        }
    }

    @Test("shutdown fails later sends with the shutdown error, and is idempotent")
    func shutdownFailsLaterSends() async throws {
        try await withTestServer { server in
            let transport = CurlTransport()
            #expect(try await transport.send(request(server, "/ok")).status == 200)
            transport.shutdown()
            transport.shutdown()
            let error = await transportError { try await transport.send(request(server, "/ok")) }
            #expect(error?.kind == .shutdown)
            #expect(error?.shortDescription == "shutdown")
            #expect(try await server.snapshot().requests.count == 1)
            // Shutdown closed the cached connection too.
            try await server.waitUntil("the cached connection to close") { $0.closedConnections == 1 }
        }
    }

    @Test("shutdown fails an in-flight request with the shutdown error")
    func shutdownFailsInFlight() async throws {
        try await withTestServer { server in
            let transport = CurlTransport()
            let task = Task { try await transport.send(request(server, "/never", timeout: .seconds(60))) }
            try await server.waitUntil("the request to arrive") { $0.requests.count == 1 }
            transport.shutdown()
            let error = await transportError { try await task.value }
            #expect(error?.kind == .shutdown)
        }
    }

    @Test("created and shut down 20 times, no loop thread is left running")
    func repeatedShutdownLeavesNoThread() async throws {
        try await withTestServer { server in
            for _ in 0..<20 {
                let transport = CurlTransport()
                #expect(try await transport.send(request(server, "/ok")).status == 200)
                let engine = try #require(transport.engine)
                #expect(engine.isLoopRunning)
                transport.shutdown()
                // shutdown joins the thread, so it has ended by now, not eventually.
                #expect(!engine.isLoopRunning)
            }
            try await server.waitUntil("every connection to close") { $0.closedConnections == 20 }
        }
    }

    @Test("releasing a transport without shutdown ends its thread and frees the engine")
    func deinitShutsDown() async throws {
        try await withTestServer { server in
            weak var weakEngine: CurlTransferEngine?
            do {
                let transport = CurlTransport()
                weakEngine = transport.engine
                #expect(try await transport.send(request(server, "/ok")).status == 200)
            }
            // The loop thread holds the engine until it returns, so nil means the thread is gone.
            #expect(weakEngine == nil)
            try await server.waitUntil("the cached connection to close") { $0.closedConnections == 1 }
        }
    }

    @Test("racing cancellations resume every request exactly once")
    func cancellationRace() async throws {
        try await withTestServer { server in
            try await withTransport(maxConnections: 4) { transport in
                let outcomes = await withTaskGroup(of: String.self) { group in
                    for index in 0..<100 {
                        let task = Task { try await transport.send(request(server, "/ok")) }
                        // Cancel at different points: before submission, queued, in flight, done.
                        if index % 4 != 3 {
                            task.cancel()
                        }
                        group.addTask {
                            switch await task.result {
                            case .success(let response): return "status \(response.status)"
                            case .failure(is CancellationError): return "cancelled"
                            case .failure(let error): return "error \(error)"
                            }
                        }
                    }
                    var outcomes: [String] = []
                    for await outcome in group {
                        outcomes.append(outcome)
                    }
                    return outcomes
                }
                #expect(outcomes.count == 100)
                #expect(outcomes.allSatisfy { $0 == "status 200" || $0 == "cancelled" }, "\(Set(outcomes))")
                #expect(outcomes.filter { $0 == "status 200" }.count >= 25)
                let after = try await transport.send(request(server, "/ok"))
                #expect(after.status == 200)
            }
        }
    }

    @Test("shutdown fails queued and in-flight requests alike, promptly")
    func shutdownWithQueue() async throws {
        try await withTestServer { server in
            // Two connections for 20 requests: most wait in libcurl's queue when shutdown comes.
            let transport = CurlTransport(maxConnections: 2)
            let tasks = (0..<20).map { _ in
                Task { try await transport.send(request(server, "/never", timeout: .seconds(60))) }
            }
            try await server.waitUntil("two requests to arrive") { $0.requests.count == 2 }
            let clock = ContinuousClock()
            let started = clock.now
            transport.shutdown()
            for task in tasks {
                let error = await transportError { try await task.value }
                #expect(error?.kind == .shutdown)
            }
            #expect(clock.now - started < .seconds(20), "shutdown must not wait for the 60 s timeouts")
            try await server.waitUntil("both connections to close") { $0.closedConnections == 2 }
        }
    }
}
