//! Link options for the binaries; nothing is generated.

fn main() {
    // mem-capture runs once per Claude Code hook, so its start-up is paid thousands of times a
    // day: as a position-dependent executable it has no relocations for the loader to apply
    // (about 15,000 otherwise, each page of them a fault), which saves ~0.3 ms per process.
    // The cost is that its own image loses address randomisation; libraries keep theirs.
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bin=mem-capture=-no-pie");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
