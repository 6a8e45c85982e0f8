/// This build's version: `warren --version`, the first line of the start log, and `version` in
/// `/v1/stats` and the `version` label of `warren_build_info`. Raised by hand
/// with each release; a build from a checkout between releases says the last one.
public enum WarrenVersion {
    public static let string = "0.21.0"
}
