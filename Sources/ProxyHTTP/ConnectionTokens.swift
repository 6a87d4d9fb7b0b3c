/// The tokens of a message's `Connection` fields (RFC 9110 §7.6.1), lowercased.
///
/// The three a message usually carries (`close`, `keep-alive`, `upgrade`) are flags, so the
/// common head costs no allocation and no hashing. Any other token names a field to drop: those
/// go into a list, and into a set once there are more than `listLimit`, so a head of many fields
/// and many tokens still costs no more than its length.
struct ConnectionTokens {
    static let listLimit = 8

    private(set) var close = false
    private(set) var keepAlive = false
    private(set) var upgrade = false
    /// Other tokens while there are at most `listLimit` of them.
    private var list: [String] = []
    /// Other tokens once there are more.
    private var set: Set<String>?

    /// Adds a token (already lowercased). A token with a non-ASCII byte is dropped: it names no
    /// field (field names are ASCII tokens), and keeping it would let Unicode canonical
    /// equivalence (a set lookup) and byte comparison (a list lookup) disagree about ASCII names.
    mutating func insert(_ token: String) {
        guard token.utf8.allSatisfy({ $0 < 0x80 }) else { return }
        switch token {
        case "close": close = true
        case "keep-alive": keepAlive = true
        case "upgrade": upgrade = true
        default:
            if set != nil {
                set!.insert(token)
            } else if !list.contains(token) {
                list.append(token)
                if list.count > Self.listLimit {
                    set = Set(list)
                    list = []
                }
            }
        }
    }

    /// Whether the lowercase `token` was among the tokens.
    func contains(_ token: String) -> Bool {
        switch token {
        case "close": return close
        case "keep-alive": return keepAlive
        case "upgrade": return upgrade
        default: return set?.contains(token) ?? list.contains(token)
        }
    }

    /// Whether a field called `name` (any letter case) is named by a token, so it is hop-by-hop.
    func names(field name: String) -> Bool {
        switch name.utf8.count {
        case 5 where close && ASCII.equalsLowercase(name, "close"): return true
        case 7 where upgrade && ASCII.equalsLowercase(name, "upgrade"): return true
        case 10 where keepAlive && ASCII.equalsLowercase(name, "keep-alive"): return true
        default: break
        }
        if let set { return set.contains(name.lowercased()) }
        return list.contains { ASCII.equalsLowercase(name, $0) }
    }
}
