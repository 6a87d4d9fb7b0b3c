import CCurl
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A dedicated, joinable OS thread. Not a Task: the body blocks in curl_multi_poll, which must not
/// tie up a thread of Swift's cooperative pool.
final class LoopThread: @unchecked Sendable {
    /// Boxed so it can cross pthread_create's void* argument.
    private final class Start {
        let body: @Sendable () -> Void
        init(body: @escaping @Sendable () -> Void) {
            self.body = body
        }
    }

    private let handle: pthread_t
    /// Guards `joined` so concurrent or repeated joins wait for, or skip, the single real join.
    private let joinLock = NIOLock()
    private var joined = false

    /// Starts the thread running `body`; throws when the system refuses one.
    init(body: @escaping @Sendable () -> Void) throws(CurlTransportError) {
        let start = Unmanaged.passRetained(Start(body: body))
        #if canImport(Darwin)
        var thread: pthread_t? = nil
        let rc = pthread_create(&thread, nil, { raw in
            let start = Unmanaged<Start>.fromOpaque(raw).takeRetainedValue()
            start.body()
            return nil
        }, start.toOpaque())
        guard rc == 0, let thread else {
            start.release()
            throw CurlTransportError(kind: .other, detail: "pthread_create failed (\(rc))")
        }
        #else
        var thread = pthread_t()
        let rc = pthread_create(&thread, nil, { raw in
            guard let raw else { return nil }
            let start = Unmanaged<Start>.fromOpaque(raw).takeRetainedValue()
            // Named, so /proc/PID/task/*/comm tells it apart (it would inherit its creator's name).
            ccurl_name_current_thread("curl-loop")
            start.body()
            return nil
        }, start.toOpaque())
        guard rc == 0 else {
            start.release()
            throw CurlTransportError(kind: .other, detail: "pthread_create failed (\(rc))")
        }
        #endif
        self.handle = thread
    }

    /// True when called from this thread itself.
    var isCurrent: Bool {
        pthread_equal(handle, pthread_self()) != 0
    }

    /// Waits for the body to return. Idempotent. From the thread itself it detaches instead,
    /// since a thread cannot join itself; it still ends when its body returns.
    func join() {
        joinLock.withLock {
            guard !joined else { return }
            joined = true
            if isCurrent {
                pthread_detach(handle)
            } else {
                pthread_join(handle, nil)
            }
        }
    }

    deinit {
        // Never joined (e.g. the owner failed before stopping it): let the system reap it.
        if !joined {
            pthread_detach(handle)
        }
    }
}
