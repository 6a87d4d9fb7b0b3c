import Foundation
import Glibc
import TestSupport

/// A child process started with posix_spawn, with a clean signal state and only fds 0-2 inherited.
///
/// Not Foundation's `Process`: that one spawns with the calling thread's signal mask (Swift's
/// cooperative/dispatch threads block SIGTERM, which the child would inherit) and inherits ignored
/// dispositions (SIGPIPE). A dedicated thread reaps the child with waitpid.
final class ChildProcess: @unchecked Sendable {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    let pid: pid_t
    let executable: String
    private let exit = Guarded<Int32?>(nil)

    /// Spawns `executable` (absolute path) with `arguments` (without argv[0]). `stdin`/`stdout`/`stderr`
    /// are descriptors dup'ed onto 0/1/2 in the child; the caller keeps (and closes) its own copies.
    /// The child gets its own process group (so `stop()` can also reach anything it spawned).
    /// `onExit` runs on the reaper thread with the exit status once the child has been reaped.
    init(executable: String, arguments: [String], environment: [String: String],
         stdin: Int32, stdout: Int32, stderr: Int32, onExit: (@Sendable (Int32) -> Void)? = nil) throws {
        self.executable = executable
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, stdin, 0)
        posix_spawn_file_actions_adddup2(&actions, stdout, 1)
        posix_spawn_file_actions_adddup2(&actions, stderr, 2)
        // Nothing else is inherited (other tests' sockets and pipes must not leak into this child).
        _ = Self.addCloseFrom(&actions, 3)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var mask = sigset_t()
        sigemptyset(&mask)
        posix_spawnattr_setsigmask(&attributes, &mask)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGCHLD, SIGUSR1, SIGUSR2, SIGALRM] {
            sigaddset(&defaults, signal)
        }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))

        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid = pid_t()
        var rc = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        // ETXTBSY: a script a test has just written is refused while any process holds a write
        // descriptor of it, which a child forked by a parallel test holds from its fork until its
        // exec closes it (microseconds; the scripts are written with O_CLOEXEC). Bounded retries.
        var attempts = 1
        while rc == ETXTBSY && attempts < 50 {
            usleep(2_000)
            rc = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
            attempts += 1
        }
        guard rc == 0 else {
            throw Failure(description: "posix_spawn \(executable) failed: \(String(cString: strerror(rc)))")
        }
        self.pid = pid

        let exit = self.exit
        let childPID = pid
        let reaper = Thread {
            var status: Int32 = 0
            while waitpid(childPID, &status, 0) < 0 {
                if errno != EINTR {
                    exit.withLock { $0 = -1 }
                    onExit?(-1)
                    return
                }
            }
            let signal = status & 0x7f
            let code = signal == 0 ? (status >> 8) & 0xff : 128 + signal
            exit.withLock { $0 = code }
            onExit?(code)
        }
        reaper.name = "reaper-\(childPID)"
        reaper.start()
    }

    /// Exit status (128+N when killed by signal N), nil while running.
    var exitStatus: Int32? { exit.withLock { $0 } }

    var isRunning: Bool { exitStatus == nil }

    /// Waits for the exit status; nil if still running at the deadline.
    func waitForExit(timeout: Duration) -> Int32? {
        exit.wait(timeout: timeout) { $0 }
    }

    /// Sends `signal` to the child if it has not been reaped yet.
    func signal(_ signal: Int32) {
        exit.withLock { status in
            if status == nil { _ = kill(pid, signal) }
        }
    }

    /// SIGKILLs the child (and its process group) if still running, then waits for it to be reaped.
    func stop(timeout: Duration = .seconds(5)) {
        exit.withLock { status in
            if status == nil {
                _ = kill(-pid, SIGKILL)
                _ = kill(pid, SIGKILL)
            }
        }
        _ = waitForExit(timeout: timeout)
    }

    /// A pipe whose both ends are close-on-exec (only the dup2'ed copy reaches the child).
    static func makePipe() throws -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        guard Self.pipe2(&fds, O_CLOEXEC) == 0 else {
            throw Failure(description: "pipe2 failed: \(String(cString: strerror(errno)))")
        }
        return (fds[0], fds[1])
    }

    // glibc's pipe2 and posix_spawn_file_actions_addclosefrom_np are behind _GNU_SOURCE, which the
    // Glibc module does not define: look them up at run time.
    private typealias Pipe2 = @convention(c) (UnsafeMutablePointer<Int32>, Int32) -> Int32
    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32

    private static let pipe2: Pipe2 = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "pipe2") else {
            fatalError("glibc without pipe2")
        }
        return unsafeBitCast(symbol, to: Pipe2.self)
    }()

    private static let addCloseFrom: AddCloseFrom = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else {
            // glibc < 2.34: rely on every descriptor of the test process being close-on-exec.
            return { _, _ in 0 }
        }
        return unsafeBitCast(symbol, to: AddCloseFrom.self)
    }()

    /// Opens a file close-on-exec (for stdin/stdout redirections).
    static func open(_ path: String, flags: Int32, mode: mode_t = 0o600) throws -> Int32 {
        let fd = Glibc.open(path, flags | O_CLOEXEC, mode)
        guard fd >= 0 else {
            throw Failure(description: "open \(path) failed: \(String(cString: strerror(errno)))")
        }
        return fd
    }
}
