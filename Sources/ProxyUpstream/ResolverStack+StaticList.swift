import HTTPDNS
import ProxyConfig

/// Provider `static` with a list file operators edit: checked at start, read again on reload.
extension ResolverStack {
    /// A static list file that cannot be read or is not a list: a configuration error at start
    /// (exit 64) and on reload (422, nothing changes), naming the file. Entries it skips are not
    /// errors; the provider logs them with their lines when it loads the list.
    static func staticListProblem(_ configuration: ProxyConfiguration) -> String? {
        guard configuration.provider == .static, case .file(let path)? = configuration.staticListSource else { return nil }
        do {
            _ = try StaticListProvider.readFile(path)
            return nil
        } catch {
            return "--static-list: \(error.message)"
        }
    }

    /// SIGHUP and `POST /reload`: a list file is read again now and what it skipped is said; a
    /// list URL is fetched again in the background. Nil without a static list.
    package func rereadStaticList() -> String? {
        guard let staticList else { return nil }
        let load: StaticListProvider.Load?
        do {
            load = try staticList.readFile()
        } catch {
            return "static list not read again, the previous list stays: \(error.message)"
        }
        guard let load else {
            Task { try? await staticList.reload() }
            return "static list \(staticList.origin) fetched again in the background"
        }
        staticList.use(load)
        var text = "static list \(staticList.origin) read again: \(load.document.entries.count) domains"
        if !load.problems.isEmpty {
            text += "; skipped: " + load.problems.map(\.description).joined(separator: "; ")
        }
        return text
    }
}
