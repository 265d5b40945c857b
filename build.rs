//! Link options for the binaries; nothing is generated.

use std::process::{Command, Stdio};

fn main() {
    // The hooks (mem-capture, mem-context) run once per Claude Code event and read untrusted
    // input, so they keep the platform's hardening: position-independent, with address
    // randomisation. What a PIE costs at start-up is the loader applying its relative
    // relocations (~15,000 in mem-capture, each page of them a fault); packed as DT_RELR they
    // take a bitmap walk instead. Only where the linker and C library support it.
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" && links_with("-Wl,-z,pack-relative-relocs") {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    println!("cargo:rerun-if-changed=build.rs");
}

/// Whether the C compiler driver (Rust's default linker here) links a PIE with `flag` without
/// a warning: GNU ld only warns about a `-z` option it does not know.
fn links_with(flag: &str) -> bool {
    let Some(out) = std::env::var_os("OUT_DIR") else {
        return false;
    };
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let exe = std::path::Path::new(&out).join("relr-probe");
    let child = Command::new(cc)
        .args([
            "-x",
            "c",
            "-",
            "-pie",
            "-fPIE",
            "-Wl,--fatal-warnings",
            flag,
            "-o",
        ])
        .arg(&exe)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let Ok(mut child) = child else {
        return false;
    };
    if let Some(mut stdin) = child.stdin.take() {
        use std::io::Write;
        let _ = stdin.write_all(b"int main(void) { return 0; }\n");
    }
    child.wait().is_ok_and(|s| s.success())
}
