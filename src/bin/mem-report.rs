fn main() {
    memkit::cli::main("mem-report", memkit::cmd::report::run)
}
