fn main() {
    memkit::cli::main("mem-compress", memkit::cmd::compress::run)
}
