/// The longest request target the proxy accepts, in bytes (414 beyond it; RFC 9112 §3 recommends
/// at least 8000). The access log's limit is the same number, so a logged target is never cut.
package let maxRequestTargetLength = 8192
