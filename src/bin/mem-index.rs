fn main() {
    memkit::cli::main("mem-index", memkit::cmd::index::run)
}
