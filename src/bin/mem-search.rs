fn main() {
    memkit::cli::main("mem-search", memkit::cmd::search::run)
}
