#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Whole-file reads and crash-safe writes for the cache file. Blocking, but only called by the
/// resolver's background runner (once per `persistInterval`, at start and at shutdown) on a file of
/// at most `capacity` small records.
enum CacheFileIO {
    /// The file's bytes, or `nil` when it does not exist.
    static func contents(of path: String) throws(CachePersistenceError) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            throw CachePersistenceError(.io, "open \(path): \(lastError())")
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw CachePersistenceError(.io, "read \(path): \(lastError())")
            }
            if n == 0 { return bytes }
            bytes.append(contentsOf: chunk[0..<n])
        }
    }

    /// Replaces `path` so that a crash at any point leaves either the old or the new file, never a
    /// torn one: write a temporary file in the same directory, fsync it, rename it over `path`,
    /// then fsync the directory so the rename itself is durable.
    static func replace(_ path: String, with bytes: [UInt8]) throws(CachePersistenceError) {
        let temporary = "\(path).tmp-\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw CachePersistenceError(.io, "create \(temporary): \(lastError())")
        }
        do throws(CachePersistenceError) {
            var offset = 0
            while offset < bytes.count {
                let n = bytes.withUnsafeBytes { buffer in
                    write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                }
                if n < 0 {
                    if errno == EINTR { continue }
                    throw CachePersistenceError(.io, "write \(temporary): \(lastError())")
                }
                offset += n
            }
            guard fsync(fd) == 0 else {
                throw CachePersistenceError(.io, "fsync \(temporary): \(lastError())")
            }
        } catch {
            close(fd)
            unlink(temporary)
            throw error
        }
        close(fd)
        guard rename(temporary, path) == 0 else {
            let error = CachePersistenceError(.io, "rename \(temporary) to \(path): \(lastError())")
            unlink(temporary)
            throw error
        }
        let directory = directoryName(of: path)
        let dirFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dirFD >= 0 {
            // Best effort: some file systems refuse fsync on directories; the data is already safe.
            _ = fsync(dirFD)
            close(dirFD)
        }
    }

    static func directoryName(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let directory = path[..<slash]
        return directory.isEmpty ? "/" : String(directory)
    }

    private static func lastError() -> String {
        String(cString: strerror(errno))
    }
}
