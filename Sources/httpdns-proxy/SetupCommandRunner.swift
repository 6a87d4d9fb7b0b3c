import ArgumentParser
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import ProxyKit

/// Prints or runs the host set-up commands of `transparent-rules` and `nodelocal-rules`.
enum SetupCommandRunner {
    /// As a shell script: the init container that has the tools runs it.
    static func print(_ commands: [SetupCommand], subcommand: String) {
        Swift.print("#!/bin/sh\n# httpdns-proxy \(subcommand) \(CommandLine.arguments.dropFirst(2).joined(separator: " "))\nset -e")
        for command in commands { Swift.print(command.line) }
    }

    /// Runs them in order; a failure of one that may not fail stops the run.
    static func run(_ commands: [SetupCommand]) throws {
        for command in commands {
            let status = try execute(command.arguments)
            if status != 0 && !command.mayFail {
                throw ValidationError("'\(command.arguments.joined(separator: " "))' exited with status \(status)")
            }
        }
    }

    /// Runs `arguments` (found in PATH, then /usr/sbin and /sbin); its output goes to ours, the
    /// expected complaints of the removal steps are dropped (stderr to /dev/null). posix_spawn:
    /// Foundation's Process is not in FoundationEssentials, which is all this binary links.
    private static func execute(_ arguments: [String]) throws -> Int32 {
        let path = (getenv("PATH").map { String(cString: $0) + ":" } ?? "") + "/usr/sbin:/sbin:/usr/bin:/bin"
        var environment = ["PATH=\(path)"]
        var index = 0
        while let entry = environ[index] {
            let text = String(cString: entry)
            if !text.hasPrefix("PATH=") { environment.append(text) }
            index += 1
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0)
        let argv = ["/usr/bin/env"] + arguments
        let cArgs = argv.map { strdup($0) } + [nil]
        let cEnv = environment.map { strdup($0) } + [nil]
        defer {
            cArgs.forEach { free($0) }
            cEnv.forEach { free($0) }
        }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, "/usr/bin/env", &actions, nil, cArgs, cEnv)
        guard spawned == 0 else {
            throw ValidationError("cannot run '\(arguments.joined(separator: " "))': \(String(cString: strerror(spawned)))")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { return -1 }
        }
        // WIFEXITED / WEXITSTATUS, which Swift does not import as macros.
        return (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }
}
