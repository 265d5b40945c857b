fn main() {
    memkit::cli::main("mem-context", memkit::cmd::context::run)
}
