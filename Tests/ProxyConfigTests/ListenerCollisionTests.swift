import Testing
@testable import ProxyConfig

/// Listener addresses compared at load time, so `config check` refuses what the bind would.
@Suite struct ListenerCollisionTests {
    @Test(arguments: [
        (["listen": ["127.0.0.1:9000"], "doh-listen": ["127.0.0.1:9000"]], "--listen 127.0.0.1:9000"),
        (["listen": ["127.0.0.1:9000"], "dns-listen": ["127.0.0.1:9000"]], "--dns-listen 127.0.0.1:9000"),
        (["listen": ["0.0.0.0:9000"], "admin-listen": ["127.0.0.1:9000"]], "--admin-listen 127.0.0.1:9000"),
        (["listen": ["[::]:9000"], "doh-listen": ["127.0.0.1:9000"]], "--doh-listen 127.0.0.1:9000"),
    ])
    func collidingListenersAreRefused(flags: [String: [String]], named: String) {
        let error = loadError(flags: flags)
        #expect("\(error.map { "\($0)" } ?? "none")".contains("cannot both listen"), "\(String(describing: error))")
        #expect("\(error.map { "\($0)" } ?? "none")".contains(named), "\(String(describing: error))")
    }

    @Test(arguments: [
        ["listen": ["127.0.0.1:9000"], "doh-listen": ["127.0.0.1:9001"]],
        ["listen": ["0.0.0.0:9000"], "doh-listen": ["[::1]:9000"]],
        ["listen": ["127.0.0.1:0"], "doh-listen": ["127.0.0.1:0"], "dns-listen": ["127.0.0.1:0"]],
        ["listen": ["127.0.0.1:9000"], "doh-listen": ["127.0.0.2:9000"]],
    ])
    func separateListenersLoad(flags: [String: [String]]) {
        #expect(loadError(flags: flags) == nil)
    }
}
