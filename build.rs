//! Link options for the binaries; nothing is generated.

fn main() {
    // mem-search is run once per query (by hand, by scripts, by `mem-search --batch` callers),
    // and its budget is a few milliseconds: as a position-independent executable the loader
    // applies some 30,000 relative relocations at each start, dirtying the pages that hold
    // them (measured: --version 1.9 → 1.2 ms, a hybrid search about 0.7 ms less). The hooks
    // (mem-capture, mem-context) read untrusted input and keep the platform's hardening:
    // position-independent, with address randomisation (tests/integration/trust.rs checks).
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bin=mem-search=-no-pie");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
