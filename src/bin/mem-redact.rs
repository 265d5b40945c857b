fn main() {
    memkit::cli::main("mem-redact", memkit::cmd::redact::run)
}
