fn main() {
    memkit::cli::main("mem-embed", memkit::cmd::embed::run)
}
