import NIOCore

/// The JavaScript client library (`clients/js/warren.js`), embedded at build time and served at
/// `/warren.js` so a page on Warren's origin imports it with no build step or CDN:
/// `import { connect } from "/warren.js"`. The demo page is its first user.
enum ClientScript {
    static let bytes = ByteBuffer(bytes: PackageResources.warren_js)
}
