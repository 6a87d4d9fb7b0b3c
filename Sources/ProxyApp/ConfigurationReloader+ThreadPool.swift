import NIOPosix

extension ConfigurationReloader {
    /// `reload(trigger:)` on NIO's blocking thread pool: a reload reads the YAML file, htpasswd
    /// files and static lists, and a slow file (NFS, a FIFO) must not stall the event loops, which
    /// the admin listener shares with every proxied connection. Reloads still run one at a time
    /// (the reloader's lock); one that waits for another waits on a pool thread.
    package func reloadOffTheEventLoops(trigger: String) async -> Outcome {
        do {
            return try await NIOThreadPool.singleton.runIfActive { self.reload(trigger: trigger) }
        } catch {
            return Outcome(ok: false, message: "reload not run: \(error)")
        }
    }
}
